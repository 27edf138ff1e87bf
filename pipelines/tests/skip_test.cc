// skip: SEMANTICS case 5 (skip(7) of range(10), skipping past the end yields nothing) through the
// C++ API and specs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Skip, Semantics5SkipsTheFirstCount) {
  EXPECT_THAT(collect_ints(range(10).skip(7)), ElementsAre(7, 8, 9));
}

TEST(Skip, Semantics5PastTheEndYieldsNothing) {
  EXPECT_TRUE(range(10).skip(10).collect().empty());
  EXPECT_TRUE(range(10).skip(25).collect().empty());
  EXPECT_TRUE(range(10).skip(-1).collect().empty()) << "-1 skips everything";
}

TEST(Skip, Semantics5ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 10},
    {"op": "skip", "count": 7}]})")),
              ElementsAre(7, 8, 9));
  EXPECT_TRUE(spec_dataset(R"({"stages": [{"op": "range", "stop": 10},
    {"op": "skip", "count": 11}]})")
                  .collect()
                  .empty());
}

TEST(Skip, ZeroSkipsNothing) {
  EXPECT_THAT(collect_ints(range(3).skip(0)), ElementsAre(0, 1, 2));
}

TEST(Skip, EndIsStickyAfterSkippingPastTheEnd) {
  auto it = range(3).skip(5).iterate();
  EXPECT_FALSE(it->next().has_value());
  EXPECT_FALSE(it->next().has_value());
}

TEST(Skip, TakeAfterSkipWindows) {
  EXPECT_THAT(collect_ints(range(20).skip(5).take(3)), ElementsAre(5, 6, 7));
}

TEST(Skip, InvalidCount) {
  EXPECT_THROW(range(3).skip(-3), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "skip", "count": "two"}]})"),
               SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
