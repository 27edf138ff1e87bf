// Parallel interleave. The consumer runs the sequential cycle algorithm over slots, but every open
// slot is pulled ahead by workers into its own buffer (at most max(2, block_length) elements), so
// the consumer mostly takes elements that are already there. All cycle_length slots are opened on
// the first pull. A slot is pulled by one worker at a time, which keeps each input's order; the
// workers serve slots in cycle order starting from the one the consumer needs next. At most
// `parallelism` pulls run at once (read on every decision, so a knob change takes effect at once).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ops/common.h"
#include "ops/interleave.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines::ops {
namespace {

class ParallelInterleaveIterator final : public Iterator {
 public:
  ParallelInterleaveIterator(const IteratorContext& ctx, const InterleaveNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())),
        slots_(static_cast<size_t>(node.cycle_length)),
        slot_capacity_(std::max<int64_t>(2, node.options.block_length)) {
    if (node.options.parallelism == kAutotune) {
      knob_ = &this->node()->knob("parallelism", 1, node.cycle_length, node.cycle_length);
      knob_->subscribe(&mu_, &cv_);
    }
  }

  ~ParallelInterleaveIterator() override {
    if (knob_ != nullptr) knob_->unsubscribe(&mu_, &cv_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(mu_);
    // Workers first, so each slot is pulled ahead as soon as it is open, while later slots open.
    spawn_workers();
    if (!started_) {
      started_ = true;
      for (size_t i = 0; i < slots_.size() && !input_done_; ++i)
        open_slot(lock, i);
    }
    while (!input_done_ || open_ > 0) {
      Slot& slot = slots_[cycle_];
      if (slot.input.iterator) {
        if (!slot.buffer.empty()) {
          Result r = std::move(slot.buffer.front());
          slot.buffer.pop_front();
          --buffered_;
          set_buffered(buffered_);
          if (++block_ == node_.options.block_length) advance();
          lock.unlock();
          cv_.notify_all();
          return r.take();
        }
        if (slot.ended && !slot.busy) {
          // Tear the finished pipeline down outside the lock: its destructors join threads.
          OpenInput finished = std::move(slot.input);
          slot = Slot{};
          lock.unlock();
          finished.close();
          lock.lock();
          --open_;
          advance();
          continue;
        }
        if (!node_.options.deterministic && switch_to_ready_slot()) continue;
        BlockedScope blocked(*this);
        cv_.wait(lock);
        spawn_workers();
      } else if (!input_done_) {
        open_slot(lock, cycle_);
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

 private:
  struct Slot {
    OpenInput input;
    std::deque<Result> buffer;
    bool busy = false;   // a worker is pulling it
    bool ended = false;  // its pipeline reached its end
  };

  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  void advance() {
    block_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  // Non-deterministic mode: move the cycle to another slot that has an element ready.
  bool switch_to_ready_slot() {
    for (size_t k = 1; k < slots_.size(); ++k) {
      const size_t i = (cycle_ + k) % slots_.size();
      if (!slots_[i].buffer.empty()) {
        cycle_ = i;
        block_ = 0;
        return true;
      }
    }
    return false;
  }

  // Pulls the next input element and opens its pipeline in slot `i`; the lock is released while
  // the input is pulled (only the consumer touches the input).
  void open_slot(std::unique_lock<std::mutex>& lock, size_t i) {
    lock.unlock();
    std::optional<Element> x;
    OpenInput opened;
    try {
      x = input_->next();
      if (x) opened = open_input(node_, *x, input_context("pipeline."), stage_name());
    } catch (...) {
      lock.lock();
      throw;
    }
    lock.lock();
    if (!x) {
      input_done_ = true;
      return;
    }
    slots_[i].input = std::move(opened);
    ++open_;
    cv_.notify_all();
  }

  void spawn_workers() {
    const int64_t want = parallelism();
    while (static_cast<int64_t>(workers_.size()) < want)
      workers_.emplace_back([this, i = static_cast<int64_t>(workers_.size())] { work(i); });
  }

  // A slot a worker may pull now, preferring the one the consumer needs next; nullptr if none.
  Slot* pick_slot() {
    if (active_ >= parallelism()) return nullptr;
    for (size_t k = 0; k < slots_.size(); ++k) {
      Slot& s = slots_[(cycle_ + k) % slots_.size()];
      if (s.input.iterator && !s.busy && !s.ended &&
          static_cast<int64_t>(s.buffer.size()) < slot_capacity_) {
        return &s;
      }
    }
    return nullptr;
  }

  void work(int64_t index) {
    prepare_worker_thread(stage_name(), index);
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      Slot* slot = nullptr;
      cv_.wait(lock, [&] { return stop_ || (slot = pick_slot()) != nullptr; });
      if (stop_) return;
      slot->busy = true;
      ++active_;
      Iterator* it = slot->input.iterator.get();
      lock.unlock();
      Result r = capture(stage_name(), [&] { return it->next(); });
      lock.lock();
      --active_;
      slot->busy = false;
      if (r.end()) {
        slot->ended = true;
      } else {
        slot->buffer.push_back(std::move(r));
        ++buffered_;
        set_buffered(buffered_);
      }
      cv_.notify_all();
    }
  }

  const InterleaveNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  const int64_t slot_capacity_;
  size_t cycle_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  int64_t active_ = 0;
  int64_t buffered_ = 0;
  bool started_ = false;
  bool input_done_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Iterator> make_parallel_interleave_iterator(const IteratorContext& ctx,
                                                            const InterleaveNode& node) {
  return std::make_unique<ParallelInterleaveIterator>(ctx, node);
}

}  // namespace pipeprof::pipelines::ops
