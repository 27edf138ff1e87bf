// Parallel interleave. The consumer runs the sequential cycle algorithm over slots, but every open
// slot is pulled ahead by workers into its own hand-off queue (at most buffer_output_elements
// elements, by default max(2, block_length)), so the consumer mostly takes elements that are
// already there. All cycle_length slots are opened on the first pull, and a slot whose input
// ended is given the next input as soon as the consumer finds it drained. With
// prefetch_input_elements, that many further inputs are opened ahead, in input order, and a drained
// slot takes the oldest of them (already pulled ahead), so the inputs land in the same slots in the
// same order and the output is the same. A slot is pulled by one worker at a time (the queue's
// turn), which keeps each input's order; the workers serve slots in cycle order starting from the
// one the consumer needs next, then the inputs opened ahead. At most `parallelism` pulls run at
// once (read on every decision, so a knob change takes effect at once). Nobody is woken for a
// change it cannot use: the consumer only when what it waits for arrives (its slot has an element
// or is drained, or, non-deterministic, any slot has one), a worker only when a pull can start and
// no worker that is awake will take it.
//
// Under a batch (deterministic, every input yielding exactly one element, as a whole-file reader
// states): input k's element is element k of the output, so the worker that pulls it puts it in its
// row of the batch (batch_rows.h) on the core that has just read it. The batch then needs nothing
// of an element but to take it, so a blocked consumer is woken once the rest of its batch is
// ready (or nothing more can be pulled), not for every element: one wake-up a batch.
#include <fmt/format.h>

#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ops/batch_rows.h"
#include "ops/common.h"
#include "ops/handoff.h"
#include "ops/interleave.h"
#include "ops/worker_thread.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines::ops {
namespace {

class ParallelInterleaveIterator final : public Iterator {
 public:
  ParallelInterleaveIterator(const IteratorContext& ctx, const InterleaveNode& node,
                             std::shared_ptr<BatchRows> rows)
      : Iterator(ctx, &node),
        node_(node),
        rows_(node.options.deterministic ? std::move(rows) : nullptr),
        input_(node.inputs()[0].node().make_iterator(input_context())),
        handoff_(cancellation()),
        ahead_limit_(static_cast<size_t>(node.options.prefetch_input_elements)),
        slot_capacity_(
            slot_buffer(node.options.buffer_output_elements, node.options.block_length)) {
    slots_.reserve(static_cast<size_t>(node.cycle_length));
    for (int64_t i = 0; i < node.cycle_length; ++i)
      slots_.push_back(std::make_unique<Slot>());
    if (node.options.parallelism == kAutotune) {
      knob_ = &this->node()->knob("parallelism", 1, node.cycle_length, node.cycle_length);
      handoff_.follow(*knob_);
    }
  }

  ~ParallelInterleaveIterator() override {
    if (knob_ != nullptr) handoff_.unfollow(*knob_);
    handoff_.stop();
    for (auto& t : workers_)
      t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    // Workers first, so each slot is pulled ahead as soon as it is open, while later slots open.
    spawn_workers();
    if (!started_) {
      started_ = true;
      for (size_t i = 0; i < slots_.size() && more_inputs(); ++i)
        fill_slot(lock, i);
    }
    while (!input_done_ || open_ > 0) {
      Slot& slot = *slots_[cycle_];
      if (!slot.input.iterator) {
        if (more_inputs()) {
          fill_slot(lock, cycle_);
        } else {
          advance();
        }
        continue;
      }
      if (slot.queue.ready()) {
        Result r = slot.queue.take();
        ++returned_;
        --buffered_;
        set_buffered(buffered_);
        if (++block_ == node_.options.block_length) advance();
        const Handoff::Wake wake = wake_worker();  // the slot has room again
        lock.unlock();
        wake.notify();
        return r.take();
      }
      if (slot.queue.drained()) {
        // Tear the finished pipeline down outside the lock: its destructors join threads.
        OpenInput finished = std::move(slot.input);
        slot = Slot{};
        lock.unlock();
        finished.close();
        lock.lock();
        --open_;
        // The next input goes into this slot now, not when the cycle comes back to it: the same
        // input lands in the same slot (drained slots are found, and refilled, in cycle order),
        // but its pulls start a whole cycle earlier. An input of one element (a file of one
        // sample) would otherwise be opened only when the consumer needs it, one at a time.
        if (more_inputs()) fill_slot(lock, cycle_);
        advance();
        continue;
      }
      if (!node_.options.deterministic && switch_to_ready_slot()) continue;
      const bool ready = handoff_.wait(
          lock, handoff_.consumer(), [&] { return consumer_can_progress(); },
          [&] { return BlockedScope(*this); });
      if (!ready) return std::nullopt;  // cancelled
      spawn_workers();
    }
    return std::nullopt;
  }

 private:
  struct Slot {
    OpenInput input;
    HandoffQueue queue;    // closed when the input reached its end
    bool started = false;  // an element came: its pulls are no longer the first (an open)
    int64_t ordinal = -1;  // >= 0: its one element is that element of the output (placed)
  };

  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  // A placed input's pull (outside the lock): its one element goes to its row; a second element,
  // or none, breaks the order the rows were given out in.
  void place(int64_t ordinal, bool first, std::optional<Element>& e) const {
    if (first != e.has_value()) {
      throw PipelineError(stage_name(),
                          fmt::format("an input pipeline stated one element and yielded {}",
                                      first ? "none" : "more"));
    }
    if (e) rows_->place(ordinal, *e);
  }

  void advance() {
    block_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  // Non-deterministic mode: move the cycle to another slot that has an element ready.
  bool switch_to_ready_slot() {
    for (size_t k = 1; k < slots_.size(); ++k) {
      const size_t i = (cycle_ + k) % slots_.size();
      if (slots_[i]->queue.ready()) {
        cycle_ = i;
        block_ = 0;
        return true;
      }
    }
    return false;
  }

  // With the lock held, while the consumer waits on the open slot at cycle_: whether its loop
  // would do something else now. That slot's queue is empty (so an element anywhere is in another
  // slot), or holds only the slot a worker is pulling.
  bool consumer_can_progress() const {
    const HandoffQueue& q = slots_[cycle_]->queue;
    return q.ready() || q.drained() || (!node_.options.deterministic && cycle_has_element()) ||
           static_cast<int64_t>(workers_.size()) < parallelism();
  }

  // Whether a slot can still be given an input: one opened ahead, or the input's next element.
  bool more_inputs() const { return !ahead_.empty() || !input_done_; }

  // Whether a slot of the cycle holds an element (elements of inputs opened ahead are not the
  // consumer's to take until their input enters the cycle).
  bool cycle_has_element() const {
    if (buffered_ == 0) return false;
    if (ahead_.empty()) return true;
    for (const std::unique_ptr<Slot>& s : slots_)
      if (s->queue.ready()) return true;
    return false;
  }

  // Gives slot `i` (empty) its next input: the oldest opened ahead, or the next input element's
  // pipeline; then opens inputs ahead up to prefetch_input_elements. The lock is released while
  // the input is pulled (only the consumer touches the input, the slots and the inputs ahead).
  void fill_slot(std::unique_lock<std::mutex>& lock, size_t i) {
    if (!ahead_.empty()) {
      slots_[i] = std::move(ahead_.front());
      ahead_.pop_front();
    } else if (std::unique_ptr<Slot> opened = open_next(lock)) {
      slots_[i] = std::move(opened);
    }
    wake_worker().notify(lock);
    while (ahead_.size() < ahead_limit_ && !input_done_) {
      std::unique_ptr<Slot> opened = open_next(lock);
      if (!opened) break;
      ahead_.push_back(std::move(opened));
      wake_worker().notify(lock);
    }
  }

  // Pulls the next input element and opens its pipeline in a new slot (nullptr at the input's
  // end); the lock is released while the input is pulled.
  std::unique_ptr<Slot> open_next(std::unique_lock<std::mutex>& lock) {
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
      return nullptr;
    }
    auto slot = std::make_unique<Slot>();
    // The output position of its one element, while every input so far has had exactly one
    // (inputs are opened in input order, ahead or not).
    if (rows_ && placing_ && opened.dataset->cardinality() == 1) {
      slot->ordinal = next_ordinal_++;
    } else {
      placing_ = false;
    }
    slot->input = std::move(opened);
    ++open_;  // an input not finished yet, in a slot or ahead
    return slot;
  }

  void spawn_workers() {
    const int64_t want = parallelism();
    while (static_cast<int64_t>(workers_.size()) < want)
      workers_.emplace_back(fmt::format("{} #{}", stage_name(), workers_.size()),
                            [this, i = static_cast<int64_t>(workers_.size())] { work(i); });
  }

  // A slot a worker may pull now, preferring the one the consumer needs next, then the inputs
  // opened ahead in input order; nullptr if none.
  Slot* pick_slot() {
    if (active_ >= parallelism()) return nullptr;
    for (size_t k = 0; k < slots_.size(); ++k) {
      Slot& s = *slots_[(cycle_ + k) % slots_.size()];
      if (s.input.iterator && s.queue.can_begin(slot_capacity_)) return &s;
    }
    for (const std::unique_ptr<Slot>& s : ahead_)
      if (s->input.iterator && s->queue.can_begin(slot_capacity_)) return s.get();
    return nullptr;
  }

  // With the lock held, after a pull became possible: a worker that is awake and not pulling (it
  // polls, has just been started, or is about to look for work) takes it; if there is none, one
  // blocked worker is woken.
  Handoff::Wake wake_worker() {
    if (pick_slot() == nullptr) return {};
    const int64_t awake_idle =
        static_cast<int64_t>(workers_.size()) - handoff_.producers().blocked() - active_;
    return handoff_.signal(handoff_.producers(), awake_idle <= 0);
  }

  void work(int64_t index) {
    prepare_worker_thread(stage_name(), index);
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    Slot* slot = nullptr;
    WakeCoalescing coalescing;
    while (handoff_.wait(lock, handoff_.producers(), [&] { return (slot = pick_slot()); })) {
      const HandoffQueue::Ticket ticket = slot->queue.begin();
      ++active_;
      Iterator* it = slot->input.iterator.get();
      const int64_t ordinal = slot->ordinal;
      const bool first = !slot->started;
      const Handoff::Wake next_pull = wake_worker();  // another slot may be waiting as well
      lock.unlock();
      next_pull.notify();
      const int64_t start = trace::now_ns();
      Result r = capture(stage_name(), [&] {
        // The input's reader may read the element's values straight into its row.
        const RowScope row(ordinal >= 0 && first ? rows_.get() : nullptr, ordinal);
        auto e = it->next();
        if (ordinal >= 0) place(ordinal, first, e);
        return e;
      });
      coalescing.pulled(start, trace::now_ns());
      lock.lock();
      --active_;
      const bool end = r.end();
      if (end) {
        slot->queue.end(ticket);
      } else {
        slot->queue.fill(ticket, std::move(r));
        slot->started = true;
        ++buffered_;
        set_buffered(buffered_);
      }
      // Held back only while the next pull is of a started input: a first pull may open a file.
      const Slot* next = pick_slot();
      if (coalescing.hold(!end && handoff_.consumer().blocked() > 0,
                          next != nullptr && next->started)) {
        continue;
      }
      if (consumer_can_progress() && batch_ready_or_stuck())
        handoff_.signal(handoff_.consumer()).notify(lock);
    }
  }

  // With the lock held, placing under a batch: whether the elements the consumer's batch still
  // needs are ready in cycle order (one a slot), or no pull can start (the consumer must open
  // inputs, or see the end). Always true when not placing.
  bool batch_ready_or_stuck() {
    if (!rows_ || !placing_) return true;
    const auto left = static_cast<size_t>(rows_->batch_size() - returned_ % rows_->batch_size());
    const size_t want = std::min(left, slots_.size());
    size_t run = 0;
    for (size_t k = 0; k < slots_.size() && slots_[(cycle_ + k) % slots_.size()]->queue.ready(); ++k) {
      if (++run >= want) return true;
    }
    return pick_slot() == nullptr;
  }

  const InterleaveNode& node_;
  const std::shared_ptr<BatchRows> rows_;  // nullptr: not placing
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  Handoff handoff_;
  // Guarded by handoff_.mutex(). A worker keeps a pointer to the slot it pulls: slots live on the
  // heap and are destroyed only when drained (or with the iterator), never while pulled.
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<std::unique_ptr<Slot>> ahead_;  // inputs opened ahead, in input order
  const size_t ahead_limit_;
  const int64_t slot_capacity_;
  size_t cycle_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  int64_t active_ = 0;
  int64_t buffered_ = 0;
  bool started_ = false;
  bool input_done_ = false;
  bool placing_ = true;       // every input opened so far had one element: ordinals hold
  int64_t next_ordinal_ = 0;  // the next opened input's
  int64_t returned_ = 0;      // elements handed to the consumer
  std::vector<WorkerThread> workers_;
};

}  // namespace

std::unique_ptr<Iterator> make_parallel_interleave_iterator(const IteratorContext& ctx,
                                                            const InterleaveNode& node,
                                                            std::shared_ptr<BatchRows> rows) {
  return std::make_unique<ParallelInterleaveIterator>(ctx, node, std::move(rows));
}

}  // namespace pipeprof::pipelines::ops
