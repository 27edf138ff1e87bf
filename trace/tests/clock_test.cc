#include "pipeprof/trace/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace pipeprof::trace {
namespace {

TEST(Clock, MonotonicAndAdvancesWithSleep) {
  const int64_t a = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int64_t b = now_ns();
  EXPECT_GE(b - a, 2 * kNsPerMs);
}

TEST(Clock, ThreadCpuTimeCountsWorkNotSleep) {
  const int64_t cpu0 = thread_cpu_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t cpu1 = thread_cpu_ns();
  EXPECT_LT(cpu1 - cpu0, 10 * kNsPerMs) << "sleeping must not count as CPU time";
  // Spinning counts: the thread's CPU clock must reach 3 ms of work (on a loaded machine that may
  // take longer than 3 ms of wall time, so the bound is generous).
  volatile uint64_t sink = 0;
  const int64_t give_up = now_ns() + 5 * kNsPerSec;
  while (thread_cpu_ns() - cpu1 < 3 * kNsPerMs && now_ns() < give_up)
    sink = sink + 1;
  EXPECT_GE(thread_cpu_ns() - cpu1, 3 * kNsPerMs) << "spinning must count as CPU time";
  EXPECT_GE(process_cpu_ns(), thread_cpu_ns());
}

}  // namespace
}  // namespace pipeprof::trace

namespace pipeprof::trace {
namespace {

TEST(Ticks, ConvertToNanosecondsOfTheMonotonicClock) {
  const int64_t t0 = ticks();
  const int64_t n0 = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  recalibrate_ticks();
  const int64_t dt = ticks_to_ns(ticks() - t0);
  const int64_t dn = now_ns() - n0;
  EXPECT_GT(dt, 0);
  // Within 2% of the monotonic clock over 20 ms.
  EXPECT_NEAR(static_cast<double>(dt), static_cast<double>(dn), 0.02 * static_cast<double>(dn));
}

}  // namespace
}  // namespace pipeprof::trace
