#include "pipeprof/harness/step.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../src/mlp_step.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness {
namespace {

TEST(Step, SleepStepSleepsItsTime) {
  auto step = make_step("sleep:5").step;
  EXPECT_EQ(step->name(), "sleep:5");
  EXPECT_DOUBLE_EQ(step->target_ms(), 5);
  const int64_t t0 = trace::now_ns();
  step->run({});
  EXPECT_GE(trace::now_ns() - t0, 5 * trace::kNsPerMs);
  EXPECT_TRUE(std::isnan(step->last_loss()));
}

TEST(Step, NoneDoesNothing) {
  auto step = make_step("none").step;
  EXPECT_DOUBLE_EQ(step->target_ms(), 0);
}

TEST(Step, MalformedNamesAreErrors) {
  for (const char* bad :
       {"sleep", "sleep:", "sleep:abc", "sleep:-1", "warp:10", "cpu:0", "", "sleep:1x"}) {
    EXPECT_THROW(make_step(bad), StepError) << bad;
    EXPECT_THROW(check_step_name(bad), StepError) << bad;
  }
  EXPECT_NO_THROW(check_step_name("cuda:10"));  // well-formed even where it cannot run
}

TEST(Step, CudaWithoutGpuIsAClearError) {
  std::string why;
  if (cuda_step_available(&why)) GTEST_SKIP() << "a GPU is usable here";
  try {
    make_step("cuda:10");
    FAIL() << "expected StepError";
  } catch (const StepError& e) {
    EXPECT_NE(std::string(e.what()).find("unavailable"), std::string::npos) << e.what();
  }
}

TEST(Step, AutoFallsBackToTheExperimentsStepWithANotice) {
  if (cuda_step_available()) GTEST_SKIP() << "a GPU is usable here";
  StepChoice c = make_step("auto", "sleep:7");
  EXPECT_EQ(c.step->name(), "sleep:7");
  EXPECT_NE(c.notice.find("sleep:7"), std::string::npos) << c.notice;
}

TEST(MlpStep, CalibratesNearTheTargetAndLearns) {
  MlpStep step(2.0);
  EXPECT_GT(step.hidden(), 0);
  // Loss falls over 50 steps on the fixed batch.
  step.run({});
  const double first = step.last_loss();
  for (int i = 0; i < 50; ++i)
    step.run({});
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_LT(step.last_loss(), first * 0.8) << "first " << first << " last " << step.last_loss();
  // Calibration lands in the right order of magnitude even on a noisy machine.
  const int64_t t0 = trace::now_ns();
  for (int i = 0; i < 10; ++i)
    step.run({});
  const double ms = static_cast<double>(trace::now_ns() - t0) / 1e6 / 10;
  EXPECT_GT(ms, 0.5);
  EXPECT_LT(ms, 8.0);
}

}  // namespace
}  // namespace pipeprof::harness
