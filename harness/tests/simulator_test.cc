// The simulator must reproduce every zero-overhead ideal EXPERIMENTS.md prints, exactly.
#include "pipeprof/harness/simulator.h"

#include <gtest/gtest.h>

#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/step.h"

namespace pipeprof::harness {
namespace {

SimResult sim(const std::string& id, bool bound = false, int64_t parallelism = 2) {
  const Experiment x = find_experiment(id);
  auto step = make_step(x.step).step;
  return simulate(x.spec.document, {.step_ms = step->target_ms(),
                                    .epochs = x.epochs,
                                    .bound = bound,
                                    .autotune_parallelism = parallelism});
}

struct Expected {
  const char* id;
  double ideal_ms;  // EXPERIMENTS.md (with enough parallelism: the bound)
};

class DocumentedIdeal : public ::testing::TestWithParam<Expected> {};

TEST_P(DocumentedIdeal, BoundEqualsThePrintedIdeal) {
  const SimResult r = sim(GetParam().id, /*bound=*/true);
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_DOUBLE_EQ(r.total_ms, GetParam().ideal_ms);
}

TEST_P(DocumentedIdeal, CatalogCarriesThePrintedIdeal) {
  const Experiment x = find_experiment(GetParam().id);
  ASSERT_TRUE(x.documented_ideal_ms.has_value());
  EXPECT_DOUBLE_EQ(*x.documented_ideal_ms, GetParam().ideal_ms);
}

INSTANTIATE_TEST_SUITE_P(
    ExperimentsMd, DocumentedIdeal,
    ::testing::Values(Expected{"naive", 210}, Expected{"prefetch", 170},
                      Expected{"interleave_sequential", 170}, Expected{"interleave_parallel", 110},
                      Expected{"interleave_sequential_3", 420},
                      Expected{"interleave_parallel_3", 210}, Expected{"map_sequential", 390},
                      Expected{"map_parallel", 230}, Expected{"cache", 315},
                      Expected{"map_scalar", 0}, Expected{"map_vectorized", 0}),
    [](const auto& param_info) { return std::string(param_info.param.id); });

TEST(Simulator, IdealUsesTheKnobsStartingValues) {
  // Two map workers: the third read waits until the consumer takes the first result at 75 ms,
  // so each epoch ends at 130 instead of 115.
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 2).total_ms, 260);
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 3).total_ms, 230);
  // One worker: each read waits for the consumer to take the previous result (75, 120, 165).
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 1).total_ms, 2 * 175);
  // Without knobs, ideal and bound agree.
  EXPECT_DOUBLE_EQ(sim("naive", false).total_ms, 210);
  EXPECT_DOUBLE_EQ(sim("cache", false).total_ms, 315);
}

TEST(Simulator, PrefetchBufferBoundsHowFarTheProducerRuns) {
  const nlohmann::json p = {
      {"stages",
       {{{"op", "artificial"}, {"open_ms", 0}, {"read_ms", 10}, {"num_samples", 4}},
        {{"op", "prefetch"}, {"buffer_size", 1}}}}};
  // Reads take 10, steps 30: with one slot the producer stays at most one element ahead.
  // Element k is read in [10k', ...] and the consumer is the bottleneck: 10 + 4 x 30.
  EXPECT_DOUBLE_EQ(simulate(p, {.step_ms = 30, .epochs = 1}).total_ms, 130);
  // Reads slower than steps: the reads are the bottleneck, 4 x 40 + 5.
  const nlohmann::json slow = {
      {"stages",
       {{{"op", "artificial"}, {"open_ms", 0}, {"read_ms", 40}, {"num_samples", 4}},
        {{"op", "prefetch"}, {"buffer_size", 1}}}}};
  EXPECT_DOUBLE_EQ(simulate(slow, {.step_ms = 5, .epochs = 1}).total_ms, 165);
}

TEST(Simulator, ElementsAndEpochsAreCounted) {
  const nlohmann::json p = {
      {"stages", {{{"op", "range"}, {"stop", 10}}, {{"op", "batch"}, {"batch_size", 4}}}}};
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 3});
  ASSERT_TRUE(r.supported);
  EXPECT_EQ(r.elements, 9);  // 3 batches per epoch
  EXPECT_DOUBLE_EQ(r.total_ms, 9);
}

TEST(Simulator, UnknownLatenciesAreUnsupportedNotGuessed) {
  const nlohmann::json p = {{"stages",
                             {{{"op", "range"}, {"stop", 3}},
                              {{"op", "map"}, {"fn", "fill_random"}, {"args", {{"shape", {4}}}}}}}};
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(r.supported);
  EXPECT_NE(r.reason.find("fill_random"), std::string::npos) << r.reason;

  const nlohmann::json few_workers = {
      {"stages",
       {{{"op", "range"}, {"stop", 4}},
        {{"op", "interleave"},
         {"cycle_length", 4},
         {"parallelism", 2},
         {"pipeline", {{"stages", {{{"op", "artificial"}, {"num_samples", 1}}}}}}}}}};
  const SimResult fw = simulate(few_workers, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(fw.supported);
  EXPECT_NE(fw.reason.find("fewer workers"), std::string::npos) << fw.reason;
}

TEST(Simulator, RepeatOfAnEmptyInputStopsAfterOnePassLikeTheRealOne) {
  const nlohmann::json p = {{"stages",
                             {{{"op", "artificial"}, {"open_ms", 50}, {"num_samples", 0}},
                              {{"op", "repeat"}, {"count", 5}}}}};
  EXPECT_DOUBLE_EQ(simulate(p, {.step_ms = 1, .epochs = 1}).total_ms, 50);
}

TEST(Simulator, HugeRangesAreLazy) {
  const nlohmann::json p = {
      {"stages", {{{"op", "range"}, {"stop", int64_t{1} << 62}}, {{"op", "take"}, {"count", 3}}}}};
  const SimResult r = simulate(p, {.step_ms = 2, .epochs = 1});
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_EQ(r.elements, 3);
}

TEST(Simulator, FilterTakeSkipShardFollowValues) {
  const nlohmann::json p = {
      {"stages",
       {{{"op", "range"}, {"stop", 20}},
        {{"op", "filter"}, {"predicate", "less_than"}, {"args", {{"value", 10}}}},
        {{"op", "shard"}, {"num_shards", 3}, {"index", 1}},
        {{"op", "skip"}, {"count", 1}},
        {{"op", "take"}, {"count", 5}}}}};
  // range(20) -> 0..9 -> 1,4,7 -> 4,7
  EXPECT_EQ(simulate(p, {.step_ms = 1, .epochs = 1}).elements, 2);
}

}  // namespace
}  // namespace pipeprof::harness
