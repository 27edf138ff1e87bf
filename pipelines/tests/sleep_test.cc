// Precise sleeps, cancellation scopes and busy work. Bounds are loose: the machine is shared.
#include "pipeprof/pipelines/sleep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/model.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof_testing/timing.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;

TEST(PreciseSleep, MedianOvershootOfTwoMillisecondSleepsIsSmall) {
  // Never early, every time; the median overshoot is a timing check, retried on a busy machine.
  const int64_t bound = pipeprof::testing::kSanitized ? 2 * trace::kNsPerMs : trace::kNsPerMs / 2;
  pipeprof::testing::retry_timing(3, [&] {
    std::vector<int64_t> overshoot_ns;
    for (int i = 0; i < 20; ++i) {
      const int64_t start = trace::now_ns();
      EXPECT_TRUE(precise_sleep_for(2 * trace::kNsPerMs));
      const int64_t slept = trace::now_ns() - start;
      EXPECT_GE(slept, 2 * trace::kNsPerMs) << "never early";
      overshoot_ns.push_back(slept - 2 * trace::kNsPerMs);
    }
    std::nth_element(overshoot_ns.begin(), overshoot_ns.begin() + 10, overshoot_ns.end());
    EXPECT_LT(overshoot_ns[10], bound);
  });
}

TEST(PreciseSleep, ZeroAndNegativeDurationsReturnAtOnce) {
  const int64_t start = trace::now_ns();
  EXPECT_TRUE(precise_sleep_for(0));
  EXPECT_TRUE(precise_sleep_for(-5 * trace::kNsPerSec));
  EXPECT_TRUE(precise_sleep_until(start - trace::kNsPerSec));
  EXPECT_LT(trace::now_ns() - start, 100 * trace::kNsPerMs);
}

TEST(CancellationScope, CancelWakesASleepEarly) {
  Cancellation cancel;
  bool completed = true;
  int64_t slept = 0;
  std::thread sleeper([&] {
    CancellationScope scope(&cancel);
    EXPECT_EQ(current_cancellation(), &cancel);
    const int64_t start = trace::now_ns();
    completed = precise_sleep_for(5 * trace::kNsPerSec);
    slept = trace::now_ns() - start;
  });
  std::this_thread::sleep_for(20ms);
  cancel.cancel();
  sleeper.join();
  EXPECT_FALSE(completed);
  EXPECT_LT(slept, 2 * trace::kNsPerSec);
}

TEST(CancellationScope, AlreadyCancelledSleepsReturnFalseAtOnce) {
  Cancellation cancel;
  cancel.cancel();
  CancellationScope scope(&cancel);
  const int64_t start = trace::now_ns();
  EXPECT_FALSE(precise_sleep_for(trace::kNsPerSec));
  EXPECT_FALSE(precise_sleep_for(10 * trace::kNsPerUs)) << "also within the spin margin";
  EXPECT_LT(trace::now_ns() - start, 100 * trace::kNsPerMs);
}

TEST(CancellationScope, NestedScopesRestoreThePreviousOne) {
  EXPECT_EQ(current_cancellation(), nullptr);
  Cancellation outer;
  Cancellation inner;
  {
    CancellationScope a(&outer);
    EXPECT_EQ(current_cancellation(), &outer);
    {
      CancellationScope b(&inner);
      EXPECT_EQ(current_cancellation(), &inner);
    }
    EXPECT_EQ(current_cancellation(), &outer);
  }
  EXPECT_EQ(current_cancellation(), nullptr);
}

TEST(BusyFor, BurnsThisThreadsCpu) {
  const int64_t cpu0 = trace::thread_cpu_ns();
  busy_for(20 * trace::kNsPerMs);
  EXPECT_GE(trace::thread_cpu_ns() - cpu0, 20 * trace::kNsPerMs);
}

TEST(BusyFor, StopsWhenCancelled) {
  Cancellation cancel;
  cancel.cancel();
  CancellationScope scope(&cancel);
  const int64_t start = trace::now_ns();
  busy_for(5 * trace::kNsPerSec);
  EXPECT_LT(trace::now_ns() - start, trace::kNsPerSec);
}

}  // namespace
}  // namespace pipeprof::pipelines
