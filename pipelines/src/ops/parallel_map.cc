// Parallel map. Workers take turns pulling the input (one at a time, so the input sees a single
// caller): the turn of the hand-off queue comes with the next slot in input order. A worker gives
// the turn back once it has the element, runs the function outside every lock and fills its slot.
// The consumer takes the front slot when it is filled (deterministic) or any filled slot. Slots in
// flight plus slots filled but not yet taken never exceed the parallelism, which is read on every
// decision, so a knob change takes effect at once. Workers and the consumer are woken only when
// they wait and can make progress; both poll briefly before they block (see handoff.h).
#include <fmt/format.h>

#include <mutex>
#include <thread>
#include <vector>

#include "ops/common.h"
#include "ops/handoff.h"
#include "ops/map.h"
#include "ops/worker_thread.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines::ops {
namespace {

class ParallelMapIterator final : public Iterator {
 public:
  ParallelMapIterator(const IteratorContext& ctx, const MapNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())),
        handoff_(cancellation()),
        order_(node.options.deterministic ? HandoffQueue::Order::kInOrder
                                          : HandoffQueue::Order::kAnyOrder) {
    if (node.options.parallelism == kAutotune) {
      knob_ =
          &this->node()->knob("parallelism", 1, kMaxParallelism, default_autotune_parallelism());
      // The consumer follows it too: a raised knob needs new workers, and only it spawns them.
      handoff_.follow(*knob_);
    }
  }

  ~ParallelMapIterator() override {
    if (knob_ != nullptr) handoff_.unfollow(*knob_);
    handoff_.stop();
    for (auto& t : workers_)
      t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    spawn_workers();
    while (true) {
      if (queue_.ready(order_)) {
        Result r = queue_.take(order_);
        set_buffered(queue_.buffered());
        const Handoff::Wake wake = wake_worker();
        lock.unlock();
        wake.notify();
        return r.take();
      }
      if (queue_.drained()) return std::nullopt;
      // Waits for a result it can deliver, the end, or a raised knob.
      const bool ready = handoff_.wait(
          lock, handoff_.consumer(),
          [&] {
            return queue_.ready(order_) || queue_.drained() ||
                   static_cast<int64_t>(workers_.size()) < parallelism();
          },
          [&] { return BlockedScope(*this); });
      if (!ready) return std::nullopt;  // cancelled
      spawn_workers();
    }
  }

 private:
  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  // With the lock held: one thread per unit of parallelism, created on demand.
  void spawn_workers() {
    const int64_t want = parallelism();
    stats().buffer_capacity.store(want, std::memory_order_relaxed);
    while (static_cast<int64_t>(workers_.size()) < want)
      workers_.emplace_back(fmt::format("{} #{}", stage_name(), workers_.size()),
                            [this, i = static_cast<int64_t>(workers_.size())] { work(i); });
  }

  // With the lock held: tells the workers that a pull can start, if one can. Waking a blocked one
  // costs a futex call and a context switch (microseconds); when calls are quicker than that and
  // some worker is running, that worker takes the pull itself when it loops, so nobody is woken.
  // Some worker always is running or gets woken, so no pull that can start is left waiting.
  Handoff::Wake wake_worker() {
    if (!queue_.can_begin(parallelism())) return {};
    const auto running = static_cast<int64_t>(workers_.size()) - handoff_.producers().blocked();
    return handoff_.signal(handoff_.producers(), running == 0 || fn_avg_ns_ > kWakeWorthNs);
  }

  void work(int64_t index) {
    prepare_worker_thread(stage_name(), index);
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    while (handoff_.wait(lock, handoff_.producers(),
                         [&] { return queue_.can_begin(parallelism()); })) {
      const HandoffQueue::Ticket ticket = queue_.begin();
      lock.unlock();
      Result in = capture(stage_name(), [&] { return input_->next(); });
      lock.lock();
      if (in.end()) {
        queue_.end(ticket);
        handoff_.signal(handoff_.consumer()).notify(lock);
        continue;
      }
      queue_.release_turn();
      set_buffered(queue_.buffered());
      const Handoff::Wake next_pull = wake_worker();
      lock.unlock();
      next_pull.notify();
      Result out;
      const int64_t fn_start = trace::ticks();
      if (in.error) {
        out = std::move(in);
      } else {
        WorkScope work(*this);
        out = capture(stage_name(), [&] { return node_.fn.fn(std::move(*in.value)); });
      }
      const int64_t fn_ns = trace::ticks_to_ns(trace::ticks() - fn_start);
      lock.lock();
      fn_avg_ns_ += (fn_ns - fn_avg_ns_) / 8;
      queue_.fill(ticket, std::move(out));
      if (queue_.ready(order_)) handoff_.signal(handoff_.consumer()).notify(lock);
    }
  }

  const MapNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  Handoff handoff_;
  const HandoffQueue::Order order_;
  // Guarded by handoff_.mutex():
  HandoffQueue queue_;  // slots in input order
  static constexpr int64_t kWakeWorthNs = 10 * trace::kNsPerUs;
  int64_t fn_avg_ns_ = kWakeWorthNs * 8;  // moving average of a call; assumed slow at first
  std::vector<WorkerThread> workers_;
};

}  // namespace

std::unique_ptr<Iterator> make_parallel_map_iterator(const IteratorContext& ctx,
                                                     const MapNode& node) {
  return std::make_unique<ParallelMapIterator>(ctx, node);
}

}  // namespace pipeprof::pipelines::ops
