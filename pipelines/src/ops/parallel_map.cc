// Parallel map. Workers take turns pulling the input (one at a time, so the input sees a single
// caller) and append a result slot in input order before releasing their turn; then they run the
// function outside every lock and fill the slot. The consumer takes the front slot when it is done
// (deterministic) or any done slot. Slots in flight plus slots done but not yet taken never exceed
// the parallelism, which is read on every decision, so a knob change takes effect at once.
// Workers and the consumer wait on separate condition variables and are woken only when they are
// blocked and can make progress; both poll briefly before they block.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ops/common.h"
#include "ops/handoff.h"
#include "ops/map.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines::ops {
namespace {

class ParallelMapIterator final : public Iterator {
 public:
  ParallelMapIterator(const IteratorContext& ctx, const MapNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {
    if (node.options.parallelism == kAutotune) {
      knob_ =
          &this->node()->knob("parallelism", 1, kMaxParallelism, default_autotune_parallelism());
      knob_->subscribe(&mu_, &worker_cv_);
      // The consumer too: a raised knob needs new workers, and only the consumer spawns them.
      knob_->subscribe(&mu_, &consumer_cv_);
    }
  }

  ~ParallelMapIterator() override {
    if (knob_ != nullptr) {
      knob_->unsubscribe(&mu_, &worker_cv_);
      knob_->unsubscribe(&mu_, &consumer_cv_);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    worker_cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(mu_);
    spawn_workers();
    while (true) {
      if (auto slot = take_ready()) {
        const bool wake = should_wake_worker();
        lock.unlock();
        if (wake) worker_cv_.notify_one();
        return slot->result.take();
      }
      if (slots_.empty() && input_done_) return std::nullopt;
      lock.unlock();
      BlockedScope blocked(*this);
      consumer_spin_.poll([&] { return ready_.load(std::memory_order_acquire) > 0; });
      lock.lock();
      // The poll may have seen a result that cannot be delivered yet (a later one, in
      // deterministic order): wait for what can, without spinning, or for a raised knob.
      consumer_waiting_ = true;
      consumer_cv_.wait(lock, [&] {
        return has_ready() || (slots_.empty() && input_done_) ||
               static_cast<int64_t>(workers_.size()) < parallelism();
      });
      consumer_waiting_ = false;
      spawn_workers();
    }
  }

 private:
  struct Slot {
    Result result;
    bool done = false;
  };

  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  // With mu_ held: whether the consumer can take a result now.
  bool has_ready() const {
    if (node_.options.deterministic) return !slots_.empty() && slots_.front()->done;
    return ready_.load(std::memory_order_relaxed) > 0;
  }

  // With mu_ held: removes and returns the next result to deliver, if there is one.
  std::shared_ptr<Slot> take_ready() {
    for (auto it = slots_.begin(); it != slots_.end(); ++it) {
      if ((*it)->done) {
        auto slot = std::move(*it);
        slots_.erase(it);
        ready_.fetch_sub(1, std::memory_order_relaxed);
        publish_size();
        return slot;
      }
      if (node_.options.deterministic) break;
    }
    return nullptr;
  }

  // With mu_ held: one thread per unit of parallelism, created on demand.
  void spawn_workers() {
    const int64_t want = parallelism();
    stats().buffer_capacity.store(want, std::memory_order_relaxed);
    while (static_cast<int64_t>(workers_.size()) < want)
      workers_.emplace_back([this, i = static_cast<int64_t>(workers_.size())] { work(i); });
  }

  // With mu_ held: mirrors the number of slots for polling workers and the statistics.
  void publish_size() {
    slots_count_.store(static_cast<int64_t>(slots_.size()), std::memory_order_release);
    set_buffered(static_cast<int64_t>(slots_.size()));
  }

  // With mu_ held: whether to wake a blocked worker for a pull that can start. Waking one costs a
  // futex call and a context switch (microseconds); when calls are quicker than that and some
  // worker is running, that worker takes the pull itself when it loops, so nobody is woken. Some
  // worker always is running or gets woken, so no pull that can start is left waiting.
  bool should_wake_worker() const {
    if (workers_waiting_ == 0) return false;
    const auto running = static_cast<int64_t>(workers_.size()) - workers_waiting_;
    return running == 0 || fn_avg_ns_ > kWakeWorthNs;
  }

  bool can_start() const {
    return !pulling_ && !input_done_ && static_cast<int64_t>(slots_.size()) < parallelism();
  }

  void work(int64_t index) {
    prepare_worker_thread(stage_name(), index);
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      // One worker at a time polls for its turn; more would only take the cores from the threads
      // that have work.
      if (!stop_ && !can_start() && !spinner_.exchange(true, std::memory_order_acquire)) {
        lock.unlock();
        worker_spin_.poll([&] {
          return !pulling_flag_.load(std::memory_order_acquire) &&
                 slots_count_.load(std::memory_order_acquire) < parallelism();
        });
        spinner_.store(false, std::memory_order_release);
        lock.lock();
      }
      if (!stop_ && !can_start()) {
        ++workers_waiting_;
        worker_cv_.wait(lock, [&] { return stop_ || can_start(); });
        --workers_waiting_;
      }
      if (stop_) return;
      pulling_ = true;
      pulling_flag_.store(true, std::memory_order_release);
      lock.unlock();
      Result in = capture(stage_name(), [&] { return input_->next(); });
      lock.lock();
      pulling_ = false;
      pulling_flag_.store(false, std::memory_order_release);
      if (in.end()) {
        input_done_ = true;
        if (consumer_waiting_) consumer_cv_.notify_one();
        continue;
      }
      auto slot = std::make_shared<Slot>();
      slots_.push_back(slot);
      publish_size();
      if (can_start() && should_wake_worker()) worker_cv_.notify_one();  // the next pull
      lock.unlock();
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
      slot->result = std::move(out);
      slot->done = true;
      ready_.fetch_add(1, std::memory_order_release);
      if (consumer_waiting_ && has_ready()) consumer_cv_.notify_one();
    }
  }

  const MapNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  std::mutex mu_;
  std::condition_variable worker_cv_;
  std::condition_variable consumer_cv_;
  std::deque<std::shared_ptr<Slot>> slots_;  // in input order
  std::atomic<int64_t> ready_{0};            // done slots not yet taken
  std::atomic<int64_t> slots_count_{0};      // slots_.size(), for polling workers
  std::atomic<bool> pulling_flag_{false};    // pulling_, for polling workers
  AdaptiveSpin consumer_spin_;               // used by the consumer only
  AdaptiveSpin worker_spin_;                 // used by the one polling worker (spinner_)
  std::atomic<bool> spinner_{false};         // a worker is polling for its turn
  static constexpr int64_t kWakeWorthNs = 10 * trace::kNsPerUs;
  int64_t fn_avg_ns_ = kWakeWorthNs * 8;  // moving average of a call; assumed slow at first
  int64_t workers_waiting_ = 0;
  bool consumer_waiting_ = false;
  bool pulling_ = false;
  bool input_done_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Iterator> make_parallel_map_iterator(const IteratorContext& ctx,
                                                     const MapNode& node) {
  return std::make_unique<ParallelMapIterator>(ctx, node);
}

}  // namespace pipeprof::pipelines::ops
