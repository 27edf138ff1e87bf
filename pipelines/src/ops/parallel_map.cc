// Parallel map. Workers take turns pulling the input (one at a time, so the input sees a single
// caller) and append a result slot in input order before releasing their turn; then they run the
// function outside every lock and fill the slot. The consumer takes the front slot when it is done
// (deterministic) or any done slot. Slots in flight plus slots done but not yet taken never exceed
// the parallelism, which is read on every decision, so a knob change takes effect at once.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ops/common.h"
#include "ops/map.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines::ops {
namespace {

class ParallelMapIterator final : public Iterator {
 public:
  ParallelMapIterator(const IteratorContext& ctx, const MapNode& node)
      : Iterator(ctx, &node), node_(node), input_(node.inputs()[0].node().make_iterator(input_context())) {
    if (node.options.parallelism == kAutotune) {
      knob_ = &this->node()->knob("parallelism", 1, kMaxParallelism, default_autotune_parallelism());
      knob_->subscribe(&mu_, &cv_);
    }
  }

  ~ParallelMapIterator() override {
    if (knob_ != nullptr) knob_->unsubscribe(&mu_, &cv_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(mu_);
    spawn_workers();
    while (true) {
      for (auto it = slots_.begin(); it != slots_.end(); ++it) {
        if ((*it)->done) {
          Result r = std::move((*it)->result);
          slots_.erase(it);
          stats().buffered.store(static_cast<int64_t>(slots_.size()), std::memory_order_relaxed);
          lock.unlock();
          cv_.notify_all();
          return r.take();
        }
        if (node_.options.deterministic) break;
      }
      if (slots_.empty() && input_done_) return std::nullopt;
      BlockedScope blocked(*this);
      cv_.wait(lock);
      spawn_workers();
    }
  }

 private:
  struct Slot {
    Result result;
    bool done = false;
  };

  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  // Called with mu_ held: one thread per unit of parallelism, created on demand.
  void spawn_workers() {
    const int64_t want = parallelism();
    stats().buffer_capacity.store(want, std::memory_order_relaxed);
    while (static_cast<int64_t>(workers_.size()) < want) workers_.emplace_back([this] { work(); });
  }

  void work() {
    prepare_worker_thread();
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] {
        return stop_ || (!pulling_ && !input_done_ && static_cast<int64_t>(slots_.size()) < parallelism());
      });
      if (stop_) return;
      pulling_ = true;
      lock.unlock();
      Result in = capture(stage_name(), [&] { return input_->next(); });
      lock.lock();
      pulling_ = false;
      if (in.end()) {
        input_done_ = true;
        cv_.notify_all();
        continue;
      }
      auto slot = std::make_shared<Slot>();
      slots_.push_back(slot);
      stats().buffered.store(static_cast<int64_t>(slots_.size()), std::memory_order_relaxed);
      cv_.notify_all();  // the next worker may pull
      lock.unlock();
      Result out;
      if (in.error) {
        out = std::move(in);
      } else {
        WorkScope work(*this);
        out = capture(stage_name(), [&] { return node_.fn.fn(std::move(*in.value)); });
      }
      lock.lock();
      slot->result = std::move(out);
      slot->done = true;
      cv_.notify_all();
    }
  }

  const MapNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Slot>> slots_;  // in input order
  bool pulling_ = false;
  bool input_done_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Iterator> make_parallel_map_iterator(const IteratorContext& ctx, const MapNode& node) {
  return std::make_unique<ParallelMapIterator>(ctx, node);
}

}  // namespace pipeprof::pipelines::ops
