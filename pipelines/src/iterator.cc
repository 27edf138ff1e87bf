#include "pipeprof/pipelines/iterator.h"

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace {

// Per-thread bookkeeping that turns nested next() calls into self times, the way tf.data's
// RecordStart/RecordStop do: each call's inclusive time minus the inclusive time of the calls it
// made (its inputs) and of the blocking waits it marked is the stage's own work.
//
// CPU time needs a system call (about 1.3 us on a KVM guest, 50 times a wall-clock read), so it
// is sampled: one top-level call in kCpuSampleEvery, and every call that follows a slow one,
// measures the CPU time of its whole call tree. "Slow" is judged per call in the tree (a batch of
// 256 fast elements is not slow), so the reads never cost more than a few percent; worker work
// (WorkScope) is sampled the same way. Each stage keeps its sampled wall and CPU time; their ratio
// is the stage's CPU share, which tells a stage that burns CPU from one that waits.
struct ThreadTiming {
  int depth = 0;
  uint32_t top_calls = 0;
  bool sampling = false;
  bool last_slow = false;
  int64_t child_wall_ns = 0;  // inclusive time of completed nested calls and waits, this frame
  int64_t child_cpu_ns = 0;
  int64_t tree_calls = 0;  // next() calls in the current top-level call tree
  uint32_t work_calls = 0;
  bool last_work_slow = true;
};
thread_local ThreadTiming tls_timing;

constexpr uint32_t kCpuSampleEvery = 256;
constexpr int64_t kSlowCallNs = 200 * trace::kNsPerUs;
constexpr int64_t kCpuReadNs = 1500;  // what two reads add to a sampled call, on the slow side

}  // namespace

Iterator::Iterator(const IteratorContext& ctx, const DatasetNode* dataset)
    : model_(ctx.model), prefix_(ctx.prefix) {
  if (dataset != nullptr) {
    key_ = ctx.prefix + "stages[" + std::to_string(dataset->chain_index()) + "]";
    stage_name_ = dataset->display_name();
    node_ = &model_->node(key_, std::string(dataset->op()), stage_name_, ctx.parent);
  }
}

IteratorContext Iterator::input_context(const std::string& nested) const {
  if (nested.empty()) return IteratorContext{model_, prefix_, key_};
  return IteratorContext{model_, key_ + "." + nested, key_};
}

std::optional<Element> Iterator::next() {
  if (node_ == nullptr) return next_impl();

  ThreadTiming& tt = tls_timing;
  const bool top = tt.depth == 0;
  if (top) {
    tt.sampling = (++tt.top_calls % kCpuSampleEvery) == 0 || tt.last_slow;
    tt.tree_calls = 0;
  }
  ++tt.tree_calls;
  const bool sampling = tt.sampling;
  const int64_t saved_child_wall = tt.child_wall_ns;
  const int64_t saved_child_cpu = tt.child_cpu_ns;
  tt.child_wall_ns = 0;
  tt.child_cpu_ns = 0;
  ++tt.depth;
  const int64_t cpu0 = sampling ? trace::thread_cpu_ns() : 0;
  const int64_t wall0 = trace::now_ns();

  // Runs on both the normal and the exceptional path.
  auto finish = [&](bool produced) {
    const int64_t wall = trace::now_ns() - wall0;
    const int64_t cpu = sampling ? trace::thread_cpu_ns() - cpu0 : 0;
    NodeStats& s = node_->stats();
    const int64_t self = std::max<int64_t>(0, wall - tt.child_wall_ns);
    s.self_wall_ns.fetch_add(self, std::memory_order_relaxed);
    if (sampling) {
      s.sampled_wall_ns.fetch_add(self, std::memory_order_relaxed);
      s.sampled_cpu_ns.fetch_add(std::max<int64_t>(0, cpu - tt.child_cpu_ns),
                                 std::memory_order_relaxed);
    }
    if (produced) {
      s.elements.fetch_add(1, std::memory_order_relaxed);
      s.buffered_sum.fetch_add(s.buffered.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    --tt.depth;
    tt.child_wall_ns = saved_child_wall + wall;
    tt.child_cpu_ns = saved_child_cpu + cpu;
    if (top) tt.last_slow = wall > tt.tree_calls * (kSlowCallNs + (sampling ? 2 * kCpuReadNs : 0));
  };

  std::optional<Element> result;
  try {
    result = next_impl();
  } catch (...) {
    finish(false);
    throw;
  }
  finish(result.has_value());
  return result;
}

Iterator::BlockedScope::BlockedScope(Iterator& it) : it_(it), start_ns_(trace::now_ns()) {}

Iterator::BlockedScope::~BlockedScope() {
  const int64_t blocked = trace::now_ns() - start_ns_;
  // Counted like a nested call, so it is excluded from the self time of every enclosing stage.
  tls_timing.child_wall_ns += blocked;
  if (it_.node_ != nullptr) it_.node_->stats().blocked_ns.fetch_add(blocked, std::memory_order_relaxed);
}

Iterator::WorkScope::WorkScope(Iterator& it) : it_(it), start_ns_(trace::now_ns()), start_cpu_ns_(-1) {
  ThreadTiming& tt = tls_timing;
  if ((++tt.work_calls % kCpuSampleEvery) == 0 || tt.last_work_slow) start_cpu_ns_ = trace::thread_cpu_ns();
  if (it_.node_ != nullptr) it_.node_->stats().active_workers.fetch_add(1, std::memory_order_relaxed);
}

Iterator::WorkScope::~WorkScope() {
  if (it_.node_ == nullptr) return;
  NodeStats& s = it_.node_->stats();
  const int64_t wall = trace::now_ns() - start_ns_;
  s.work_wall_ns.fetch_add(wall, std::memory_order_relaxed);
  tls_timing.last_work_slow = wall > kSlowCallNs;
  if (start_cpu_ns_ >= 0) {
    s.sampled_wall_ns.fetch_add(wall, std::memory_order_relaxed);
    s.sampled_cpu_ns.fetch_add(trace::thread_cpu_ns() - start_cpu_ns_, std::memory_order_relaxed);
  }
  s.active_workers.fetch_sub(1, std::memory_order_relaxed);
}

void prepare_worker_thread() { set_minimal_timer_slack(); }

}  // namespace pipeprof::pipelines
