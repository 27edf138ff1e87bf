#include "pipeprof/pipelines/iterator.h"

#include <sched.h>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace {

// Per-thread bookkeeping that turns nested next() calls into self times, the way tf.data's
// RecordStart/RecordStop do: each call's inclusive time minus the inclusive time of the calls it
// made (its inputs) and of the blocking waits it marked is the stage's own work.
//
// Reading a clock costs ~11 ns (TSC) and the thread CPU clock ~1.3 us (a system call on a KVM
// guest), so both are sampled by call tree: a top-level call (one the thread makes from outside
// the pipeline) decides for its whole tree whether it is timed: every kTimeEvery-th tree, and
// every tree after a slow one (more than kSlowCallNs per call in it, where timing is free in
// comparison). Timed trees also read the CPU clock every kCpuSampleEvery-th time, or when slow.
// Each stage counts all its calls and its timed calls; snapshots scale the timed self time to all
// calls. The ratio of sampled CPU to wall time is the stage's CPU share, which tells a stage that
// burns CPU from one that waits.
struct ThreadTiming {
  int depth = 0;
  uint32_t top_calls = 0;
  bool timed = false;
  bool sampling = false;
  bool last_slow = true;    // so a thread's first call tree is timed
  int64_t child_ticks = 0;  // inclusive time of completed nested calls and waits, this frame
  int64_t child_cpu_ns = 0;
  int64_t tree_calls = 0;  // next() calls in the current top-level call tree
  uint32_t work_calls = 0;
  bool last_work_slow = true;
};
thread_local ThreadTiming tls_timing;

constexpr uint32_t kTimeEvery = 16;
constexpr uint32_t kCpuSampleEvery = 256;
constexpr int64_t kSlowCallNs = 200 * trace::kNsPerUs;
constexpr int64_t kCpuReadNs = 1500;  // what two reads add to a sampled call, on the slow side
constexpr int64_t kStatsFlushEvery = 256;
constexpr int64_t kStatsFlushNs = trace::kNsPerMs;

}  // namespace

Iterator::Iterator(const IteratorContext& ctx, const DatasetNode* dataset)
    : model_(ctx.model), storage_(ctx.storage), prefix_(ctx.prefix) {
  if (dataset != nullptr) {
    key_ = ctx.prefix + "stages[" + std::to_string(dataset->chain_index()) + "]";
    stage_name_ = dataset->display_name();
    node_ = &model_->node(key_, std::string(dataset->op()), stage_name_, ctx.parent);
    trace::Recorder& rec = trace::Recorder::global();
    trace_work_ = rec.intern(stage_name_);
    trace_wait_ = rec.intern(stage_name_ + ": wait");
  }
  local_.last_flush_ticks = trace::ticks();
}

Iterator::~Iterator() {
  if (node_ != nullptr) flush_stats();
}

IteratorContext Iterator::input_context(const std::string& nested) const {
  if (nested.empty()) return IteratorContext{model_, prefix_, key_, storage_};
  return IteratorContext{model_, key_ + "." + nested, key_, storage_};
}

void Iterator::flush_stats() {
  NodeStats& s = node_->stats();
  if (local_.elements != 0) s.elements.fetch_add(local_.elements, std::memory_order_relaxed);
  if (local_.calls != 0) s.calls.fetch_add(local_.calls, std::memory_order_relaxed);
  if (local_.timed_calls != 0) {
    s.timed_calls.fetch_add(local_.timed_calls, std::memory_order_relaxed);
    s.timed_self_ns.fetch_add(trace::ticks_to_ns(local_.self_ticks), std::memory_order_relaxed);
  }
  if (local_.buffered_sum != 0)
    s.buffered_sum.fetch_add(local_.buffered_sum, std::memory_order_relaxed);
  if (local_.sampled_wall_ticks != 0) {
    s.sampled_wall_ns.fetch_add(trace::ticks_to_ns(local_.sampled_wall_ticks),
                                std::memory_order_relaxed);
    s.sampled_cpu_ns.fetch_add(local_.sampled_cpu_ns, std::memory_order_relaxed);
  }
  const int64_t last = trace::ticks();
  local_ = LocalStats{};
  local_.last_flush_ticks = last;
}

std::optional<Element> Iterator::next() {
  if (node_ == nullptr) return next_impl();
  // A cancelled tree is being torn down: every stage ends at once, so loops that pull until they
  // find an element (interleave over an endless input whose pipelines now read as empty, filter,
  // ...) cannot keep a worker, and the destructor joining it, busy forever.
  if (model_->cancellation().cancelled()) return std::nullopt;

  ThreadTiming& tt = tls_timing;
  const bool top = tt.depth == 0;
  if (top) {
    ++tt.top_calls;
    tt.timed = (tt.top_calls % kTimeEvery) == 0 || tt.last_slow;
    tt.sampling = tt.timed && ((tt.top_calls % kCpuSampleEvery) == 0 || tt.last_slow);
    tt.tree_calls = 0;
  }
  ++tt.tree_calls;
  ++local_.calls;
  if (!tt.timed) return next_untimed();

  const bool sampling = tt.sampling;
  const int64_t saved_child_ticks = tt.child_ticks;
  const int64_t saved_child_cpu = tt.child_cpu_ns;
  tt.child_ticks = 0;
  tt.child_cpu_ns = 0;
  ++tt.depth;
  const int64_t cpu0 = sampling ? trace::thread_cpu_ns() : 0;
  const int64_t tick0 = trace::ticks();

  // Runs on both the normal and the exceptional path.
  auto finish = [&](bool produced) {
    const int64_t tick1 = trace::ticks();
    const int64_t wall = tick1 - tick0;
    const int64_t cpu = sampling ? trace::thread_cpu_ns() - cpu0 : 0;
    const int64_t self = std::max<int64_t>(0, wall - tt.child_ticks);
    ++local_.timed_calls;
    local_.self_ticks += self;
    if (sampling) {
      local_.sampled_wall_ticks += self;
      local_.sampled_cpu_ns += std::max<int64_t>(0, cpu - tt.child_cpu_ns);
    }
    if (produced) count_element();
    --tt.depth;
    tt.child_ticks = saved_child_ticks + wall;
    tt.child_cpu_ns = saved_child_cpu + cpu;
    if (top) {
      const int64_t per_call = trace::ticks_to_ns(wall) / tt.tree_calls;
      tt.last_slow = per_call > kSlowCallNs + (sampling ? 2 * kCpuReadNs : 0);
    }
    if (local_.calls >= kStatsFlushEvery ||
        trace::ticks_to_ns(tick1 - local_.last_flush_ticks) > kStatsFlushNs) {
      flush_stats();
    }
  };

  std::optional<Element> result;
  try {
    result = next_impl();
  } catch (...) {
    finish(false);
    throw;
  }
  finish(result.has_value());
  if (!result) flush_stats();  // the end of an epoch: statistics are complete, not batched
  return result;
}

// The common path of a call in an untimed tree: no clock at all.
std::optional<Element> Iterator::next_untimed() {
  ThreadTiming& tt = tls_timing;
  ++tt.depth;
  struct DepthGuard {
    ThreadTiming& tt;
    ~DepthGuard() { --tt.depth; }
  } guard{tt};
  std::optional<Element> result = next_impl();
  if (result) count_element();
  if (local_.calls >= kStatsFlushEvery || !result) flush_stats();
  return result;
}

void Iterator::count_element() {
  ++local_.elements;
  local_.buffered_sum += node_->stats().buffered.load(std::memory_order_relaxed);
}

Iterator::BlockedScope::BlockedScope(Iterator& it) : it_(it), start_ticks_(trace::ticks()) {}

trace::NameId Iterator::trace_phase(std::string_view phase) const {
  return trace::Recorder::global().intern(stage_name_ + ": " + std::string(phase));
}

void Iterator::set_buffered(int64_t n) {
  if (node_ == nullptr) return;
  node_->stats().buffered.store(n, std::memory_order_relaxed);
  trace::Recorder& rec = trace::Recorder::global();
  if (rec.enabled()) {
    if (trace_buffered_ == trace::Recorder::kNoArg)
      trace_buffered_ = rec.intern(stage_name_ + ": buffered");
    rec.counter(trace_buffered_, static_cast<double>(n));
  }
}

Iterator::BlockedScope::~BlockedScope() {
  const int64_t end = trace::ticks();
  const int64_t blocked = end - start_ticks_;
  trace::Recorder& rec = trace::Recorder::global();
  if (rec.enabled() && it_.trace_wait_ != trace::Recorder::kNoArg)
    rec.span(it_.trace_wait_, trace::category::wait(), start_ticks_, end);
  // Counted like a nested call, so it is excluded from the self time of every enclosing stage.
  tls_timing.child_ticks += blocked;
  if (it_.node_ != nullptr) {
    it_.node_->stats().blocked_ns.fetch_add(trace::ticks_to_ns(blocked), std::memory_order_relaxed);
  }
}

Iterator::WorkScope::WorkScope(Iterator& it, trace::NameId trace_name)
    : it_(it), trace_name_(trace_name), start_ticks_(trace::ticks()), start_cpu_ns_(-1) {
  ThreadTiming& tt = tls_timing;
  if ((++tt.work_calls % kCpuSampleEvery) == 0 || tt.last_work_slow)
    start_cpu_ns_ = trace::thread_cpu_ns();
  if (it_.node_ != nullptr)
    it_.node_->stats().active_workers.fetch_add(1, std::memory_order_relaxed);
}

Iterator::WorkScope::~WorkScope() {
  if (it_.node_ == nullptr) return;
  NodeStats& s = it_.node_->stats();
  const int64_t end = trace::ticks();
  trace::Recorder& rec = trace::Recorder::global();
  if (rec.enabled() && trace_name_ != trace::Recorder::kNoArg)
    rec.span(trace_name_, trace::category::pipeline(), start_ticks_, end);
  const int64_t wall = trace::ticks_to_ns(end - start_ticks_);
  s.work_wall_ns.fetch_add(wall, std::memory_order_relaxed);
  tls_timing.last_work_slow = wall > kSlowCallNs;
  if (start_cpu_ns_ >= 0) {
    s.sampled_wall_ns.fetch_add(wall, std::memory_order_relaxed);
    s.sampled_cpu_ns.fetch_add(trace::thread_cpu_ns() - start_cpu_ns_, std::memory_order_relaxed);
  }
  s.active_workers.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

// A worker runs at the normal priority whatever the priority of the thread that made it (threads
// inherit their creator's policy): a pipeline iterated from a real-time thread (a simulated
// accelerator's training loop) must not make its loaders real-time too. Lowering a thread's own
// policy needs no privilege.
void normal_scheduling() {
  if (::sched_getscheduler(0) != SCHED_OTHER) {
    const sched_param normal{};
    (void)::sched_setscheduler(0, SCHED_OTHER, &normal);
  }
}

}  // namespace

void prepare_worker_thread() {
  set_minimal_timer_slack();
  normal_scheduling();
}

void prepare_worker_thread(const std::string& stage_name, int64_t index) {
  set_minimal_timer_slack();
  normal_scheduling();
  tls_timing = ThreadTiming{};  // a reused thread (ops/worker_thread.h) starts its task afresh
  trace::Recorder::global().set_thread_name(stage_name + " #" + std::to_string(index));
}

}  // namespace pipeprof::pipelines
