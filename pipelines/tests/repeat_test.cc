// repeat: SEMANTICS case 6 through the C++ API and specs, plus a fresh input per pass and an
// empty input that must not loop forever.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Repeat, Semantics6RepeatsCountTimes) {
  EXPECT_THAT(collect_ints(from_vector({1, 2, 3}).repeat(3)),
              ElementsAre(1, 2, 3, 1, 2, 3, 1, 2, 3));
}

TEST(Repeat, Semantics6WithoutCountIsEndless) {
  auto it = from_vector({1, 2, 3}).repeat().iterate();
  EXPECT_THAT(testing::drain_ints(*it, 1000).size(), 1000U);
  EXPECT_THAT(collect_ints(from_vector({1, 2, 3}).repeat().take(7)),
              ElementsAre(1, 2, 3, 1, 2, 3, 1));
  EXPECT_EQ(from_vector({1, 2, 3}).repeat(-1).collect(3000).size(), 3000U);
}

TEST(Repeat, Semantics6ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "from_vector", "values": [1, 2, 3]},
    {"op": "repeat", "count": 3}]})")),
              ElementsAre(1, 2, 3, 1, 2, 3, 1, 2, 3));
  // No count: endless.
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "from_vector", "values": [1, 2, 3]},
    {"op": "repeat"}, {"op": "take", "count": 8}]})")),
              ElementsAre(1, 2, 3, 1, 2, 3, 1, 2));
}

TEST(Repeat, ZeroAndOneCount) {
  EXPECT_TRUE(range(3).repeat(0).collect().empty());
  EXPECT_THAT(collect_ints(range(3).repeat(1)), ElementsAre(0, 1, 2));
}

TEST(Repeat, EachPassStartsAFreshInput) {
  std::atomic<int> factory_calls{0};
  auto gen = GeneratorFn([&] {
    ++factory_calls;
    return std::function<std::optional<Element>()>([i = 0]() mutable -> std::optional<Element> {
      if (i == 2) return std::nullopt;
      return scalar_element(i++);
    });
  });
  EXPECT_THAT(collect_ints(generator(gen).repeat(3)), ElementsAre(0, 1, 0, 1, 0, 1));
  EXPECT_EQ(factory_calls.load(), 3);
}

TEST(Repeat, EndlessRepeatOfAnEmptyInputEnds) {
  testing::run_with_deadline(10s, [] {
    EXPECT_TRUE(range(0).repeat().collect().empty());
    EXPECT_TRUE(range(5)
                    .filter(Predicate([](const Element&) { return false; }))
                    .repeat()
                    .collect()
                    .empty());
  });
}

TEST(Repeat, InvalidCount) {
  EXPECT_THROW(range(3).repeat(-2), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "repeat", "count": -2}]})"),
               SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
