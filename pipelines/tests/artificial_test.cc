// artificial: the tf.data guide's ArtificialDataset (sleep open_ms on the first pull, read_ms
// before each sample). Timing checks are loose: the machine is shared and noisy.
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
using testing::ms_since;

TEST(Artificial, YieldsTheSampleIndices) {
  EXPECT_THAT(collect_ints(artificial({.open_ms = 0, .read_ms = 0, .num_samples = 4})),
              ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(artificial({.open_ms = 0, .read_ms = 0, .num_samples = 0}).collect().empty());
}

TEST(Artificial, OpenAndReadsTakeAtLeastTheirSimulatedTime) {
  const int64_t start = trace::now_ns();
  EXPECT_THAT(collect_ints(artificial()), ElementsAre(0, 1, 2));  // 30 ms + 3 x 15 ms
  EXPECT_GE(ms_since(start), 75.0);
}

TEST(Artificial, TheOpenHappensOnTheFirstPullNotBefore) {
  const Dataset ds = artificial({.open_ms = 40, .read_ms = 0, .num_samples = 1});
  int64_t start = trace::now_ns();
  auto it = ds.iterate();
  EXPECT_LT(ms_since(start), 40.0) << "creating the iterator must not open";
  start = trace::now_ns();
  ASSERT_TRUE(it->next().has_value());
  EXPECT_GE(ms_since(start), 40.0);
}

TEST(Artificial, ThroughSpecWithDefaults) {
  const Dataset ds = testing::spec_dataset(R"({"stages": [{"op": "artificial"}]})");
  EXPECT_EQ(ds.to_json(), nlohmann::json::parse(R"({"stages": [{"op": "artificial", "open_ms": 30.0,
              "read_ms": 15.0, "num_samples": 3}]})"));
  EXPECT_THAT(collect_ints(testing::spec_dataset(
                  R"({"stages": [{"op": "artificial", "open_ms": 0, "read_ms": 0.5,
                     "num_samples": 2}]})")),
              ElementsAre(0, 1));
}

TEST(Artificial, NegativeParametersAreErrors) {
  EXPECT_THROW(artificial({.open_ms = -1}), std::invalid_argument);
  EXPECT_THROW(artificial({.num_samples = -1}), std::invalid_argument);
  try {
    testing::spec(R"({"stages": [{"op": "artificial", "read_ms": -2}]})");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "test.json: stages[0].read_ms: expected a non-negative number, got -2.0");
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
