// The trace recorder: low-overhead, per-thread event buffers switched on and off at run time.
//
//   auto& rec = trace::Recorder::global();
//   rec.start();                                   // begin recording (clears earlier events)
//   { trace::ScopedSpan s(kReadName, kCatIo); ... } // a span on this thread
//   rec.counter(kBufferName, 3);                   // a counter sample
//   trace::Trace t = rec.stop();                   // stop and collect every thread's events
//
// Names and categories are interned once (Recorder::intern) and recorded as ids; a span costs two
// counter reads and an inline buffer append when on (target: at most 1.3x the two reads alone)
// and one relaxed load when off (target <= 2 ns). Times come from trace::ticks() and are converted
// to CLOCK_MONOTONIC nanoseconds when the trace is collected, so they share one axis with now_ns()
// and with other processes on this machine. When the NVTX headers are available and an NVTX tool
// (Nsight Systems) is attached, every span is also an NVTX range in the "pipeprof" domain.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

// Interned name / category id used by the recorder (process-wide, stable for the process's life).
using NameId = uint32_t;

namespace detail {

enum class EventKind : uint32_t { kSpan, kInstant, kCounter, kFlowStart, kFlowEnd };

// One recorded event, 56 bytes. For counters `arg0` holds the double's bits; for flows the id.
struct Event {
  int64_t start;
  int64_t end;
  NameId name;
  NameId category;
  EventKind kind;
  NameId arg0_key;
  int64_t arg0;
  NameId arg1_key;
  int64_t arg1;
};

// The recording's generation: start() advances it, and a thread's first event of a new recording
// starts its buffer over.
inline constinit std::atomic<uint64_t> recording_generation{1};

// The calling thread's place in its buffer: the next free slot of the current chunk. The fast path
// writes there and publishes the new count; anything else (a new recording, a full chunk, the
// thread's first event, the size limit) goes through append_slow(), which refreshes the cursor.
struct Cursor {
  Event* slot = nullptr;
  Event* slot_end = nullptr;
  std::atomic<size_t>* count = nullptr;
  size_t n = 0;
  uint64_t generation = 0;
};
inline constinit thread_local Cursor cursor{};

void append_slow(const Event& e) noexcept;

inline void append(const Event& e) noexcept {
  Cursor& c = cursor;
  if (c.slot != c.slot_end && c.generation == recording_generation.load(std::memory_order_acquire))
      [[likely]] {
    *c.slot++ = e;
    c.count->store(++c.n, std::memory_order_release);
    return;
  }
  append_slow(e);
}

// NVTX ranges are pushed only when an NVTX tool is attached (Nsight sets NVTX_INJECTION64_PATH),
// and only in builds with the NVTX headers.
extern const bool nvtx_attached;
void nvtx_push(NameId name) noexcept;
void nvtx_pop() noexcept;

}  // namespace detail

class Recorder {
 public:
  static Recorder& global() noexcept { return instance_; }

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Starts recording (discarding events of an earlier recording). Thread-safe.
  void start();
  // Stops recording and returns everything recorded since start(), as a finalized Trace.
  // Events of threads that have exited are kept. Thread-safe; recording threads may race with it
  // (an event being written while stop() runs is either in the trace or dropped, never torn).
  Trace stop();
  // Like stop() but keeps recording (used to flush a partial trace on interruption).
  Trace snapshot();

  // Interns a name or category. Thread-safe; call once and keep the id (e.g. in a static).
  NameId intern(std::string_view s);
  std::string_view name(NameId id) const;

  // Names of the current process and thread, for the trace's metadata (may be called any time).
  void set_process_name(std::string name);
  void set_thread_name(std::string_view name);  // the calling thread
  // Sort order of the calling thread's lane (lower first).
  void set_thread_sort_index(int64_t index);

  // Raw events on the calling thread. Timestamps are trace::ticks() values.
  void span(NameId name, NameId category, int64_t start_ticks, int64_t end_ticks);
  // A span with up to two integer arguments (key ids interned like names; kNoArg to omit).
  void span(NameId name, NameId category, int64_t start_ticks, int64_t end_ticks, NameId arg0_key,
            int64_t arg0, NameId arg1_key = kNoArg, int64_t arg1 = 0);
  void instant(NameId name, NameId category);
  // Counter sample at now (process-wide track named `name`).
  void counter(NameId name, double value);
  // Flow arrow from "here, now" (start) to the matching finish with the same id.
  void flow_start(NameId name, uint64_t id);
  void flow_end(NameId name, uint64_t id);
  uint64_t new_flow_id() { return next_flow_id_.fetch_add(1, std::memory_order_relaxed); }

  // Adds another process's finished trace (e.g. a producer child's, on the same CLOCK_MONOTONIC
  // axis) to the current recording; stop()/snapshot() merge it, one process lane group per pid.
  // Ignored when not recording.
  void merge_process_trace(Trace trace);

  // Events dropped because a thread buffer hit its size limit.
  int64_t dropped() const;

  static constexpr NameId kNoArg = 0xffffffffu;

 private:
  constexpr Recorder() = default;
  static Recorder instance_;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> next_flow_id_{1};
};

// RAII span on the calling thread; free when the recorder is off.
class ScopedSpan {
 public:
  ScopedSpan(NameId name, NameId category) noexcept
      : ScopedSpan(name, category, Recorder::kNoArg, 0) {}
  ScopedSpan(NameId name, NameId category, NameId arg_key, int64_t arg) noexcept
      : name_(name), category_(category), arg_key_(arg_key), arg_(arg) {
    if (Recorder::global().enabled()) [[unlikely]] {
      if (detail::nvtx_attached) {
        nvtx_ = true;
        detail::nvtx_push(name_);
      }
      start_ = ticks();
    }
  }
  // Inline: two counter reads and a store into the thread's buffer (the cost is measured by
  // BM_SpanOn against the same run's floor of two counter reads).
  ~ScopedSpan() {
    if (start_ < 0) [[likely]]
      return;
    const int64_t end = ticks();
    if (nvtx_) detail::nvtx_pop();
    if (Recorder::global().enabled())
      detail::append({start_, end, name_, category_, detail::EventKind::kSpan, arg_key_, arg_,
                      Recorder::kNoArg, 0});
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  int64_t start_ = -1;  // -1: not recording
  NameId name_, category_, arg_key_;
  bool nvtx_ = false;
  int64_t arg_;
};

// Standard categories used by pipeprof's own instrumentation.
namespace category {
NameId pipeline();  // operation work: map calls, reads, opens, batch assembly
NameId wait();      // blocking waits (a consumer waiting for a buffer, a worker for space)
NameId step();      // training steps and epochs
NameId gpu();       // GPU activity (CUPTI)
NameId cuda_api();  // CUDA runtime/driver API calls (CUPTI)
}  // namespace category

}  // namespace pipeprof::trace
