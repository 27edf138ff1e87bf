#include "pipeprof/harness/runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::harness {
namespace {

using testing_support::TempDir;

Experiment small_experiment() {
  const TempDir tmp;
  return load_experiment(tmp.write("small.json", R"({"name": "small", "stages": [
      {"op": "artificial", "open_ms": 2, "read_ms": 1, "num_samples": 4},
      {"op": "prefetch", "buffer_size": 2}],
      "experiment": {"step": "sleep:1", "epochs": 2}})"));
}

TEST(WaitStats, QuantilesOfKnownValues) {
  std::vector<int64_t> waits;
  for (int i = 1; i <= 100; ++i)
    waits.push_back(i * 1'000'000LL);
  const WaitStats w = wait_stats(waits);
  EXPECT_DOUBLE_EQ(w.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(w.p50_ms, 50);
  EXPECT_DOUBLE_EQ(w.p99_ms, 99);
  EXPECT_DOUBLE_EQ(w.max_ms, 100);
}

TEST(Runner, KeepsEveryRepetitionAndComparesWithTheIdeal) {
  int callbacks = 0;
  RunOptions options{.repetitions = 3};
  options.on_repetition = [&](int, const Repetition&) { ++callbacks; };
  const ExperimentResult r = run_experiment(small_experiment(), options);
  EXPECT_EQ(callbacks, 3);
  ASSERT_EQ(r.repetitions.size(), 3u);
  for (const auto& rep : r.repetitions) {
    EXPECT_EQ(rep.steps, 8);  // 4 elements x 2 epochs
    EXPECT_GT(rep.wall_ms, 0);
    EXPECT_GT(rep.peak_rss_kb, 0);
  }
  EXPECT_EQ(r.step, "sleep:1");
  ASSERT_TRUE(r.ideal_ms.has_value());
  // Per epoch: open 2 + read 1, then reads overlap the 1 ms steps: 2 + 4 x 1 + 1 = 7.
  EXPECT_DOUBLE_EQ(*r.ideal_ms, 14);
  ASSERT_TRUE(r.efficiency.has_value());
  EXPECT_GT(*r.efficiency, 0.2);  // loose: the machine is shared
  EXPECT_LE(*r.efficiency, 1.05);
  EXPECT_FALSE(r.stages.empty());
  const auto j = to_json(r);
  EXPECT_EQ(j["repetitions"].size(), 3u);
  EXPECT_EQ(j["id"], "small");
}

TEST(Runner, EveryRepetitionStartsWithAColdCache) {
  const TempDir tmp;
  const auto path = tmp.write("cached.json", R"({"name": "cached", "stages": [
      {"op": "artificial", "open_ms": 5, "read_ms": 5, "num_samples": 2}, {"op": "cache"}],
      "experiment": {"step": "none", "epochs": 2}})");
  const ExperimentResult r = run_experiment(load_experiment(path), {.repetitions = 3});
  ASSERT_EQ(r.repetitions.size(), 3u);
  // The first epoch of each repetition reads (15 ms); a warm cache would make it ~0.
  for (const auto& rep : r.repetitions)
    EXPECT_GE(rep.wall_ms, 15.0);
  EXPECT_DOUBLE_EQ(*r.ideal_ms, 15);
}

TEST(Runner, StopFlagEndsTheRunWithoutAMeasurement) {
  std::atomic<bool> stop{true};
  RunOptions options{.repetitions = 3, .stop = &stop};
  const ExperimentResult r = run_experiment(small_experiment(), options);
  EXPECT_TRUE(r.repetitions.empty());
  EXPECT_FALSE(r.efficiency.has_value());
}

TEST(Runner, OtherEpochsDropThePublishedNumbers) {
  RunOptions options{.epochs = 1, .repetitions = 1};
  const ExperimentResult r = run_experiment(find_experiment("map_vectorized"), options);
  EXPECT_FALSE(r.seed_ms.has_value());
  EXPECT_EQ(r.epochs, 1);
  EXPECT_EQ(r.elements, 40);  // ceil(10000 / 256) batches
}

}  // namespace
}  // namespace pipeprof::harness
