#include "pipeprof/pipelines/sleep.h"

#include <algorithm>
#include <ctime>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "pipeprof/pipelines/model.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace {

thread_local Cancellation* tls_cancellation = nullptr;

// How early a sleep wakes before its deadline to spin the rest. Adapted per thread to the lateness
// of the coarse wake-ups it has seen: twice the moving average plus a floor, within
// [kMinMargin, kMaxMargin]. On an idle machine this settles near 60 us; under load it grows.
constexpr int64_t kMinMarginNs = 40 * trace::kNsPerUs;
constexpr int64_t kMaxMarginNs = 2 * trace::kNsPerMs;
thread_local int64_t tls_lateness_avg_ns = 50 * trace::kNsPerUs;
thread_local bool tls_slack_set = false;

int64_t spin_margin() {
  return std::clamp(2 * tls_lateness_avg_ns + 20 * trace::kNsPerUs, kMinMarginNs, kMaxMarginNs);
}

void note_lateness(int64_t lateness_ns) {
  lateness_ns = std::clamp<int64_t>(lateness_ns, 0, kMaxMarginNs);
  tls_lateness_avg_ns += (lateness_ns - tls_lateness_avg_ns) / 8;
}

}  // namespace

void set_minimal_timer_slack() {
#if defined(__linux__)
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  tls_slack_set = true;
}

bool precise_sleep_until(int64_t deadline_ns) {
  if (!tls_slack_set) set_minimal_timer_slack();
  Cancellation* cancel = tls_cancellation;
  int64_t now = trace::now_ns();
  if (deadline_ns - now > spin_margin()) {
    const int64_t wake_at = deadline_ns - spin_margin();
    if (cancel != nullptr) {
      if (!cancel->wait_until(wake_at)) return false;
    } else {
      timespec ts{static_cast<time_t>(wake_at / trace::kNsPerSec),
                  static_cast<long>(wake_at % trace::kNsPerSec)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
      }
    }
    now = trace::now_ns();
    note_lateness(now - wake_at);
  }
  // Spin the last fraction. Never yield here: on a loaded machine sched_yield can hand the core to
  // another process for a whole time slice (milliseconds), the very overshoot this avoids.
  while (now < deadline_ns) {
    if (cancel != nullptr && cancel->cancelled()) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    now = trace::now_ns();
  }
  return cancel == nullptr || !cancel->cancelled();
}

bool precise_sleep_for(int64_t duration_ns) {
  return precise_sleep_until(trace::now_ns() + std::max<int64_t>(0, duration_ns));
}

CancellationScope::CancellationScope(Cancellation* cancellation) : previous_(tls_cancellation) {
  tls_cancellation = cancellation;
}

CancellationScope::~CancellationScope() {
  tls_cancellation = previous_;
}

Cancellation* current_cancellation() {
  return tls_cancellation;
}

void busy_for(int64_t duration_ns) {
  Cancellation* cancel = tls_cancellation;
  const int64_t start = trace::thread_cpu_ns();
  const int64_t wall_start = trace::now_ns();
  volatile uint64_t sink = 0;
  // Counts this thread's CPU time, so preemption does not shorten the work; the wall clock bound
  // (100x) only guards against a thread that is never scheduled.
  while (trace::thread_cpu_ns() - start < duration_ns) {
    for (int i = 0; i < 256; ++i)
      sink = sink + static_cast<uint64_t>(i);
    if (cancel != nullptr && cancel->cancelled()) return;
    if (trace::now_ns() - wall_start > 100 * duration_ns + trace::kNsPerSec) return;
  }
}

}  // namespace pipeprof::pipelines
