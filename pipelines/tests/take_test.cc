// take: SEMANTICS case 5 (take(3), take(-1) takes all) through the C++ API and specs; take pulls
// no more than it needs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Take, Semantics5TakesTheFirstCount) {
  EXPECT_THAT(collect_ints(range(10).take(3)), ElementsAre(0, 1, 2));
}

TEST(Take, Semantics5MinusOneTakesAll) {
  EXPECT_THAT(collect_ints(range(10).take(-1)), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

TEST(Take, Semantics5ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 10},
    {"op": "take", "count": 3}]})")),
              ElementsAre(0, 1, 2));
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 10},
    {"op": "take", "count": -1}]})")),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

TEST(Take, ZeroAndMoreThanAvailable) {
  EXPECT_TRUE(range(10).take(0).collect().empty());
  EXPECT_THAT(collect_ints(range(3).take(100)), ElementsAre(0, 1, 2));
}

TEST(Take, PullsNoMoreThanItNeeds) {
  std::atomic<int> calls{0};
  auto counted = Function(
      [&](Element e) {
        ++calls;
        return e;
      },
      "counted");
  auto it = range(100).map(counted).take(3).iterate();
  EXPECT_EQ(testing::drain_ints(*it).size(), 3U);
  EXPECT_FALSE(it->next().has_value());
  EXPECT_EQ(calls.load(), 3);
}

TEST(Take, InvalidCount) {
  EXPECT_THROW(range(3).take(-2), std::invalid_argument);
  try {
    testing::spec(R"({"stages": [{"op": "range", "stop": 3}, {"op": "take"}]})");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "test.json: stages[1].count: expected an integer >= -1, got nothing");
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
