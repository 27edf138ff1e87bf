#include "pipeprof/trace/clock.h"

#include <atomic>
#include <ctime>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace pipeprof::trace {
namespace {

int64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

// Invariant TSC: CPUID 0x80000007, EDX bit 8 (constant rate, runs in every power state).
bool detect_invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000U, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007U) return false;
  __get_cpuid(0x80000007U, &eax, &ebx, &ecx, &edx);
  return (edx & (1U << 8)) != 0;
#else
  return false;
#endif
}

struct TickCalibration {
  bool tsc = detect_invariant_tsc();
  int64_t tick0 = 0;
  int64_t ns0 = 0;
  std::atomic<double> ns_per_tick{1.0};

  TickCalibration() {
    if (!tsc) return;
    tick0 = raw();
    ns0 = read_clock(CLOCK_MONOTONIC);
    // A first estimate over ~1 ms; recalibrate() refines it over longer intervals.
    while (read_clock(CLOCK_MONOTONIC) - ns0 < kNsPerMs) {
    }
    update();
  }
  int64_t raw() const noexcept {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#else
    return 0;
#endif
  }
  void update() noexcept {
    const int64_t dt = raw() - tick0;
    const int64_t dns = read_clock(CLOCK_MONOTONIC) - ns0;
    if (dt > 0 && dns > 0) ns_per_tick.store(static_cast<double>(dns) / static_cast<double>(dt));
  }
};

TickCalibration& calibration() noexcept {
  static TickCalibration c;
  return c;
}

// Forces the calibration at start-up rather than inside the first timed call.
[[maybe_unused]] const bool kCalibratedAtStart = (detail::ticks_slow(), true);

}  // namespace

namespace detail {
int64_t ticks_slow() noexcept {
  static TickCalibration& c = calibration();
  tick_source.store(c.tsc ? 1 : 2, std::memory_order_relaxed);
  return c.tsc ? c.raw() : read_clock(CLOCK_MONOTONIC);
}
}  // namespace detail

double ns_per_tick() noexcept {
  return calibration().ns_per_tick.load(std::memory_order_relaxed);
}

void recalibrate_ticks() noexcept {
  if (calibration().tsc) calibration().update();
}

bool ticks_are_tsc() noexcept {
  return calibration().tsc;
}

int64_t now_ns() noexcept {
  return read_clock(CLOCK_MONOTONIC);
}
int64_t thread_cpu_ns() noexcept {
  return read_clock(CLOCK_THREAD_CPUTIME_ID);
}
int64_t process_cpu_ns() noexcept {
  return read_clock(CLOCK_PROCESS_CPUTIME_ID);
}

}  // namespace pipeprof::trace
