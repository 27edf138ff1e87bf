#include "pipeprof/trace/clock.h"

#include <ctime>

namespace pipeprof::trace {
namespace {

int64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

}  // namespace

int64_t now_ns() noexcept { return read_clock(CLOCK_MONOTONIC); }
int64_t thread_cpu_ns() noexcept { return read_clock(CLOCK_THREAD_CPUTIME_ID); }
int64_t process_cpu_ns() noexcept { return read_clock(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace pipeprof::trace
