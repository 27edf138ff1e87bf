// The one clock of pipeprof: every span, statistic and simulated latency is measured in integer
// nanoseconds of CLOCK_MONOTONIC, so CPU spans, pipeline statistics and (later) GPU records share
// a single time axis.
#pragma once

#include <atomic>
#include <cstdint>

namespace pipeprof::trace {

// Monotonic wall clock in nanoseconds (CLOCK_MONOTONIC; a vDSO call, ~20 ns).
int64_t now_ns() noexcept;

// CPU time consumed by the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID; a system call,
// so callers sample it rather than reading it on every fast-path operation).
int64_t thread_cpu_ns() noexcept;

// CPU time consumed by the whole process (all threads) in nanoseconds.
int64_t process_cpu_ns() noexcept;

// A cheap counter for durations on hot paths: the CPU's invariant time-stamp counter where it has
// one (about 11 ns a read on a KVM guest, against 27 ns for clock_gettime), else now_ns(). Convert
// differences with ticks_to_ns(); the rate is calibrated against CLOCK_MONOTONIC at start-up
// (about 1 ms) and refined by recalibrate_ticks() over the process's lifetime.
// ticks() is inline below: one read of the counter on the hot path (a span takes two).
double ns_per_tick() noexcept;

namespace detail {
// Where ticks come from: 0 not yet known (the calibration has not run), 1 the TSC, 2
// CLOCK_MONOTONIC. Set once, by the first ticks_slow() (at start-up).
inline constinit std::atomic<int> tick_source{0};
int64_t ticks_slow() noexcept;
}  // namespace detail

inline int64_t ticks() noexcept {
#if defined(__x86_64__)
  if (detail::tick_source.load(std::memory_order_relaxed) == 1) [[likely]]
    return static_cast<int64_t>(__builtin_ia32_rdtsc());
#endif
  return detail::ticks_slow();
}
inline int64_t ticks_to_ns(int64_t ticks) noexcept {
  return static_cast<int64_t>(static_cast<double>(ticks) * ns_per_tick());
}
// Re-estimates the tick rate over the time since start-up (cheap; statistics readers call it).
void recalibrate_ticks() noexcept;
bool ticks_are_tsc() noexcept;

inline constexpr int64_t kNsPerUs = 1'000;
inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSec = 1'000'000'000;

// Nanoseconds as milliseconds and as seconds, for figures and reports.
inline constexpr double ns_to_ms(int64_t ns) noexcept {
  return static_cast<double>(ns) / 1e6;
}
inline constexpr double ns_to_seconds(int64_t ns) noexcept {
  return static_cast<double>(ns) / 1e9;
}

// part as a percentage of whole (0 when whole is not positive).
inline constexpr double percent_of(int64_t part, int64_t whole) noexcept {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace pipeprof::trace
