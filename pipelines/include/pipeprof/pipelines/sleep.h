// Precise simulated latencies. A plain 10 ms sleep overshoots by ~0.2 ms at the median on a loaded
// VM; the simulated file opens, reads and map functions of the experiments must not, or their
// efficiency would measure the OS scheduler instead of the pipeline. precise_sleep_until() sleeps
// to an absolute deadline with minimal timer slack, wakes a margin early and spins the rest; the
// margin adapts to the lateness this thread has observed.
#pragma once

#include <cstdint>

namespace pipeprof::pipelines {

class Cancellation;

// Sets the calling thread's timer slack to 1 ns (Linux; a no-op elsewhere).
void set_minimal_timer_slack();

// Sleeps until `deadline_ns` on the trace clock. Returns false if the thread's cancellation
// (see CancellationScope) fired first.
bool precise_sleep_until(int64_t deadline_ns);
bool precise_sleep_for(int64_t duration_ns);

// While alive, precise sleeps on this thread wake early when `cancellation` fires. Pipeline
// threads install their tree's cancellation; nested scopes restore the previous one.
class CancellationScope {
 public:
  explicit CancellationScope(Cancellation* cancellation);
  ~CancellationScope();
  CancellationScope(const CancellationScope&) = delete;
  CancellationScope& operator=(const CancellationScope&) = delete;

 private:
  Cancellation* previous_;
};

// The cancellation installed on this thread (nullptr when none).
Cancellation* current_cancellation();

// Burns CPU on this thread for `duration_ns` (the busy_ms function: real CPU work, not waiting).
void busy_for(int64_t duration_ns);

}  // namespace pipeprof::pipelines
