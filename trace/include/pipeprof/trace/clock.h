// The one clock of pipeprof: every span, statistic and simulated latency is measured in integer
// nanoseconds of CLOCK_MONOTONIC, so CPU spans, pipeline statistics and (later) GPU records share
// a single time axis.
#pragma once

#include <cstdint>

namespace pipeprof::trace {

// Monotonic wall clock in nanoseconds (CLOCK_MONOTONIC; a vDSO call, ~20 ns).
int64_t now_ns() noexcept;

// CPU time consumed by the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID; a system call,
// so callers sample it rather than reading it on every fast-path operation).
int64_t thread_cpu_ns() noexcept;

// CPU time consumed by the whole process (all threads) in nanoseconds.
int64_t process_cpu_ns() noexcept;

inline constexpr int64_t kNsPerUs = 1'000;
inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSec = 1'000'000'000;

}  // namespace pipeprof::trace
