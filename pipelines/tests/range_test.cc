// range: int64 scalars from start to stop (excluded) by step, through the C++ API and specs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Range, StopOnlyStartAndStep) {
  EXPECT_THAT(collect_ints(range(4)), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(collect_ints(range(2, 5)), ElementsAre(2, 3, 4));
  EXPECT_THAT(collect_ints(range(0, 10, 4)), ElementsAre(0, 4, 8));
  EXPECT_THAT(collect_ints(range(5, 0, -2)), ElementsAre(5, 3, 1));
}

TEST(Range, EmptyRanges) {
  EXPECT_TRUE(range(0).collect().empty());
  EXPECT_TRUE(range(-3).collect().empty());
  EXPECT_TRUE(range(5, 5).collect().empty());
  EXPECT_TRUE(range(0, 5, -1).collect().empty());
}

TEST(Range, ElementsAreInt64Scalars) {
  const auto out = range(1).collect();
  ASSERT_EQ(out.size(), 1U);
  ASSERT_EQ(out[0].size(), 1U);
  EXPECT_EQ(out[0][0].dtype(), DType::kInt64);
  EXPECT_EQ(out[0][0].rank(), 0);
}

TEST(Range, ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 3}]})")),
              ElementsAre(0, 1, 2));
  EXPECT_THAT(collect_ints(spec_dataset(
                  R"({"stages": [{"op": "range", "start": 10, "stop": 0, "step": -4}]})")),
              ElementsAre(10, 6, 2));
}

TEST(Range, ZeroStepIsAnError) {
  EXPECT_THROW(range(0, 10, 0), std::invalid_argument);
  try {
    testing::spec(R"({"stages": [{"op": "range", "stop": 10, "step": 0}]})");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "test.json: stages[0].step: expected a non-zero integer, got 0");
  }
}

}  // namespace
}  // namespace pipeprof::pipelines

namespace pipeprof::pipelines {
namespace {

TEST(Range, NeverOverflowsNearTheInt64Limits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_THAT(collect_ints(range(kMax - 1, kMax, 10)), ::testing::ElementsAre(kMax - 1));
  EXPECT_THAT(collect_ints(range(kMax - 5, kMax, 2)),
              ::testing::ElementsAre(kMax - 5, kMax - 3, kMax - 1));
  EXPECT_THAT(collect_ints(range(kMin + 1, kMin, -10)), ::testing::ElementsAre(kMin + 1));
}

}  // namespace
}  // namespace pipeprof::pipelines
