#include "pipeprof/autotune/performance_model.h"

#include <gtest/gtest.h>

namespace pipeprof::autotune {
namespace {

StageModel stage(std::string key, std::string op, double latency_ms, int64_t elements,
                 int64_t parallelism = 0) {
  StageModel s;
  s.key = std::move(key);
  s.op = std::move(op);
  s.latency_ns = latency_ms * 1e6;
  s.elements = elements;
  s.parallelism = parallelism;
  return s;
}

TEST(PerformanceModel, TheSlowestStageSetsTheInterval) {
  // artificial (25 ms per element) -> map (30 ms per element, 2 workers).
  StageModel source = stage("stages[0]", "artificial", 25, 3);
  StageModel map = stage("stages[1]", "map", 30, 3, 2);
  const PerformanceModel m({map, source});
  EXPECT_DOUBLE_EQ(m.interval_ns(), 25e6);
  EXPECT_DOUBLE_EQ(m.interval_ns({{"stages[1]", {{"parallelism", 1}}}}), 30e6);
}

TEST(PerformanceModel, RatioScalesStagesBelowABatch) {
  StageModel batch = stage("stages[1]", "batch", 0.01, 10);
  StageModel source = stage("stages[0]", "range", 0.001, 2560);
  source.ratio = 256;
  const PerformanceModel m({batch, source});
  EXPECT_NEAR(m.interval_ns(), 0.256e6, 1);
}

TEST(PerformanceModel, NestedStagesUseTheInterleaveWorkers) {
  StageModel interleave = stage("stages[1]", "interleave", 0.01, 6, 2);
  StageModel nested = stage("stages[1].pipeline.stages[0]", "artificial", 20, 6);
  StageModel outer = stage("stages[0]", "range", 0.001, 2);
  const PerformanceModel m({interleave, outer, nested});
  EXPECT_EQ(m.workers(*m.find("stages[1].pipeline.stages[0]")), 2);
  EXPECT_EQ(m.workers(*m.find("stages[0]")), 1);
  EXPECT_DOUBLE_EQ(m.interval_ns(), 10e6);
  EXPECT_DOUBLE_EQ(m.interval_ns({{"stages[1]", {{"parallelism", 4}}}}), 5e6);
}

TEST(PerformanceModel, CpuCoresCountComputingWorkersAsWholeCores) {
  StageModel busy = stage("stages[2]", "map", 2, 10, 3);
  busy.cpu_share = 0.7;  // preempted now and then: still a computing stage
  busy.cpu_known = true;
  StageModel sleepy = stage("stages[1]", "map", 2, 10, 8);
  sleepy.cpu_share = 0.02;
  sleepy.cpu_known = true;
  StageModel unknown = stage("stages[0]", "map", 0, 0, 2);
  const PerformanceModel m({busy, sleepy, unknown});
  // The sleeping stage waits: it costs no core however many workers it has.
  EXPECT_NEAR(m.cpu_cores({}, 0.1), 3 + 0 + 0.2, 1e-9);
  EXPECT_NEAR(m.cpu_cores({{"stages[2]", {{"parallelism", 1}}}}, 0.1), 1 + 0 + 0.2, 1e-9);
  EXPECT_NEAR(m.cpu_cores({{"stages[1]", {{"parallelism", 32}}}}, 0.1), 3 + 0 + 0.2, 1e-9);
  EXPECT_NEAR(m.cpu_cores({}, 1.0), 3 + 0 + 2, 1e-9);
}

TEST(PerformanceModel, InterleaveWorkersCostWhatTheirNestedStagesCost) {
  // The interleave's own (consumer-side) work computes, but its workers run a nested reader that
  // sleeps.
  StageModel interleave = stage("stages[1]", "interleave", 0.05, 8, 4);
  interleave.cpu_share = 1;
  interleave.cpu_known = true;
  StageModel nested = stage("stages[1].pipeline.stages[0]", "artificial", 7, 8);
  nested.cpu_share = 0.02;
  nested.cpu_known = true;
  const PerformanceModel m({interleave, nested});
  EXPECT_NEAR(m.worker_share(*m.find("stages[1]"), 1.0), 0.02, 1e-9);
  EXPECT_NEAR(m.cpu_cores({}, 1.0), 0, 1e-9);
}

TEST(PerformanceModel, BufferElementsCountPrefetchAndMapSlots) {
  StageModel prefetch = stage("stages[2]", "prefetch", 0, 0);
  prefetch.buffer_size = 4;
  StageModel map = stage("stages[1]", "map", 1, 1, 3);
  const PerformanceModel m({prefetch, map});
  EXPECT_EQ(m.buffer_elements(), 7);
  EXPECT_EQ(m.buffer_elements({{"stages[2]", {{"buffer_size", 16}}}}), 19);
}

TEST(PerformanceModel, UnknownStagesPredictNothing) {
  const PerformanceModel m({stage("stages[0]", "map", 0, 0, 2)});
  EXPECT_EQ(m.interval_ns(), 0);
}

}  // namespace
}  // namespace pipeprof::autotune
