// The hand-off between the threads of a parallel operation: prefetch (one producer), parallel map
// and parallel interleave (a pool of workers), each with one consumer. Two pieces, both used under
// one lock:
//
// - Handoff: the lock, the two sides that wait (the consumer; the producers) and the stop switch
//   (stop(), or the tree's cancellation). A thread waits for a condition of its side: it first
//   polls for a signal (AdaptiveSpin, one thread per side at a time), then blocks on its side's own
//   condition variable. Whoever changes the state signals the side that can now progress, and only
//   when a thread of it waits: a polling thread sees the signal count move (no system call); else
//   one blocked thread is woken (notify_one, after the lock is released). Nobody is ever woken for
//   a change it cannot use, and a stream of quick hand-offs costs no futex call per element.
//   When there are no free cores, polling fails, and a consumer faster than its producers blocks
//   for every element: a futex wake-up and two context switches each, on the cores the producers
//   need. A producer whose elements come in microseconds may therefore hold back the wake-up of a
//   blocked consumer while it can go on pulling (WakeCoalescing), for at most kMaxDelayNs plus one
//   pull: the consumer then wakes once for several elements. Parallel interleave does (its workers
//   read files record by record); prefetch and parallel map do not.
// - HandoffQueue: bounded, ordered slots from producers to the consumer. A producer takes the turn
//   (one at a time, so the input sees a single caller) and with it the next slot in order; it may
//   give the turn back before it fills the slot (parallel map runs its function after that). The
//   consumer takes the oldest slot once filled, or, in any order, any filled slot. Reserved plus
//   filled slots never exceed the capacity passed on every decision, so a knob change takes effect
//   at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "ops/common.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines::ops {

// How long a waiting thread polls for a hand-off before it blocks. A futex wake-up costs several
// microseconds on a VM (more under load); when the other side is running, polling this long
// catches most hand-offs, and it is negligible next to any real wait.
inline constexpr int64_t kHandoffSpinNs = 20 * trace::kNsPerUs;

// Polls `ready` (which must only read atomics) for up to `max_ns`; true once it holds. It never
// yields: on a loaded machine sched_yield can cost a whole time slice.
template <typename Ready>
bool spin_until(Ready&& ready, int64_t max_ns = kHandoffSpinNs) {
  const int64_t until = trace::now_ns() + max_ns;
  for (uint32_t i = 1;; ++i) {
    if (ready()) return true;
    if ((i & 15) == 0 && trace::now_ns() >= until) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// A polling budget that adapts to how hand-offs go at one call site: doubled (up to
// kHandoffSpinNs) after a poll that caught its hand-off, halved (down to kMinSpinNs) after one that
// did not. When the other side is not running (more threads than free cores), polling only burns
// the core it needs, and the budget shrinks to almost nothing.
class AdaptiveSpin {
 public:
  static constexpr int64_t kMinSpinNs = 250;

  template <typename Ready>
  bool poll(Ready&& ready) {
    const bool ok = spin_until(std::forward<Ready>(ready), budget_ns_);
    budget_ns_ =
        ok ? std::min(budget_ns_ * 2, kHandoffSpinNs) : std::max(budget_ns_ / 2, kMinSpinNs);
    return ok;
  }

 private:
  int64_t budget_ns_ = kHandoffSpinNs;
};

// One producer's choice between signalling a blocked consumer after each element and holding the
// wake-up back while its elements come quickly (see the file comment). The delay it adds to an
// element is at most kMaxDelayNs plus one pull, and only while pulls have been taking less than
// kQuickPullNs: slow pipelines (milliseconds per element) are never delayed.
class WakeCoalescing {
 public:
  static constexpr int64_t kQuickPullNs = 20 * trace::kNsPerUs;
  static constexpr int64_t kMaxDelayNs = 100 * trace::kNsPerUs;

  // A pull from start_ns to end_ns (trace::now_ns()).
  void pulled(int64_t start_ns, int64_t end_ns) {
    pull_ns_ = (pull_ns_ * 3 + (end_ns - start_ns)) / 4;
    last_end_ns_ = end_ns;
  }
  // After the last pull's element was handed over: true to leave the consumer blocked for now (the
  // caller pulls again at once); false to signal it now.
  bool hold(bool consumer_blocked, bool can_pull_again) {
    if (consumer_blocked && can_pull_again && pull_ns_ < kQuickPullNs) {
      if (held_since_ns_ == 0) held_since_ns_ = last_end_ns_;
      if (last_end_ns_ - held_since_ns_ < kMaxDelayNs) return true;
    }
    held_since_ns_ = 0;
    return false;
  }

 private:
  int64_t pull_ns_ = kQuickPullNs;  // moving average; starts out as not quick
  int64_t last_end_ns_ = 0;
  int64_t held_since_ns_ = 0;  // the end of the first pull whose wake-up is held back; 0: none
};

class Handoff {
 public:
  // The threads of one side (the consumer, or the producers) and their wake-up. Its counts are
  // read and written with the mutex held.
  class Side {
   public:
    int64_t blocked() const { return blocked_; }  // threads of this side blocked (not polling)

   private:
    friend class Handoff;
    std::condition_variable cv_;
    std::atomic<uint64_t> signals_{0};  // moved by signal() while a thread polls
    AdaptiveSpin spin_;                 // used by the polling thread only (spinning_)
    int64_t blocked_ = 0;
    bool spinning_ = false;
  };

  // A wake-up decided under the lock, delivered after it is released (a woken thread then does
  // not block at once on the lock its waker still holds).
  class Wake {
   public:
    Wake() = default;
    void notify() const {
      if (cv_ != nullptr) cv_->notify_one();
    }
    explicit operator bool() const { return cv_ != nullptr; }
    // With `lock` held: notifies with the lock released (only if there is someone to wake), and
    // holds it again.
    void notify(std::unique_lock<std::mutex>& lock) const {
      if (cv_ == nullptr) return;
      lock.unlock();
      cv_->notify_one();
      lock.lock();
    }

   private:
    friend class Handoff;
    explicit Wake(std::condition_variable* cv) : cv_(cv) {}
    std::condition_variable* cv_ = nullptr;
  };

  // `cancellation`: the tree's; once it fires, waits end as after stop().
  explicit Handoff(const Cancellation& cancellation) : cancellation_(cancellation) {}
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  std::mutex& mutex() { return mu_; }
  Side& consumer() { return consumer_; }
  Side& producers() { return producers_; }

  // Whether stop() was called or the tree was cancelled. Needs no lock.
  bool stopped() const {
    return stop_.load(std::memory_order_acquire) || cancellation_.cancelled();
  }
  // Ends every wait, now and later (without the lock held). Owners call it before joining.
  void stop();

  // A change of `knob` wakes both sides under the lock, so every wait re-checks its condition.
  void follow(Knob& knob);
  void unfollow(Knob& knob);

  // With `lock` (on mutex()) held: waits until `ready()` holds, evaluated under the lock; true
  // then, false if stopped first. A thread of `side` polls first when no other one does, then
  // blocks. `on_block()` is called once if the thread has to wait and its result (a scope, e.g. an
  // Iterator::BlockedScope that counts the time as blocked) lives until the wait ends.
  template <typename Ready, typename OnBlock>
  bool wait(std::unique_lock<std::mutex>& lock, Side& side, Ready&& ready, OnBlock&& on_block);
  template <typename Ready>
  bool wait(std::unique_lock<std::mutex>& lock, Side& side, Ready&& ready) {
    return wait(lock, side, std::forward<Ready>(ready), [] { return 0; });
  }

  // With the lock held: the state changed so that a thread of `side` can progress. A polling thread
  // sees it at once; otherwise, if `wake_blocked`, the returned Wake wakes one blocked thread (the
  // caller may pass false when a running thread of that side will see the change anyway).
  [[nodiscard]] Wake signal(Side& side, bool wake_blocked = true) {
    if (side.spinning_) {
      side.signals_.fetch_add(1, std::memory_order_release);
      return {};
    }
    return wake_blocked && side.blocked_ > 0 ? Wake(&side.cv_) : Wake();
  }

 private:
  // With the lock held: records the stop and ends every poll; the caller wakes the blocked.
  void stop_locked();

  const Cancellation& cancellation_;
  std::mutex mu_;
  Side consumer_;
  Side producers_;
  std::atomic<bool> stop_{false};
};

template <typename Ready, typename OnBlock>
bool Handoff::wait(std::unique_lock<std::mutex>& lock, Side& side, Ready&& ready,
                   OnBlock&& on_block) {
  if (ready()) return true;
  if (!stopped()) {
    [[maybe_unused]] auto scope = on_block();
    if (!side.spinning_) {
      side.spinning_ = true;
      const uint64_t seen = side.signals_.load(std::memory_order_relaxed);
      lock.unlock();
      side.spin_.poll(
          [&] { return side.signals_.load(std::memory_order_acquire) != seen || stopped(); });
      lock.lock();
      side.spinning_ = false;
      if (ready()) return true;
    }
    bool ok = false;
    ++side.blocked_;
    side.cv_.wait(lock, [&] { return (ok = ready()) || stopped(); });
    --side.blocked_;
    if (ok) return true;
  }
  // Stopped. A cancellation seen here is made a stop of the whole hand-off, so that a thread of
  // the other side blocked for something this one would have done wakes too.
  if (!stop_.load(std::memory_order_relaxed)) {
    stop_locked();
    consumer_.cv_.notify_all();
    producers_.cv_.notify_all();
  }
  return false;
}

// Bounded, ordered slots of Results, guarded by the Handoff's mutex (see the file comment).
class HandoffQueue {
 public:
  using Ticket = uint64_t;
  enum class Order { kInOrder, kAnyOrder };

  // Reserved plus filled slots.
  int64_t size() const { return static_cast<int64_t>(slots_.size()); }
  // Slots past their pull (filled, or being worked on after the turn): the buffer occupancy.
  int64_t buffered() const { return size() - (turn_ ? 1 : 0); }
  bool closed() const { return closed_; }
  // Closed and empty: nothing more will come.
  bool drained() const { return closed_ && slots_.empty(); }
  // Whether a producer may take the turn now.
  bool can_begin(int64_t capacity) const { return !turn_ && !closed_ && size() < capacity; }

  // Takes the turn and reserves the next slot (requires can_begin()).
  Ticket begin();
  // Gives the turn back; the slot stays reserved until fill().
  void release_turn();
  // Fills the slot of `ticket`, and gives the turn back if that ticket holds it.
  void fill(Ticket ticket, Result result);
  // The input ended: drops the slot of `ticket` (which holds the turn), gives the turn back and
  // closes the queue.
  void end(Ticket ticket);

  // Whether take() would return a result.
  bool ready(Order order = Order::kInOrder) const {
    if (order == Order::kAnyOrder) return filled_ > 0;
    return !slots_.empty() && slots_.front().filled;
  }
  // Removes and returns the oldest slot's result (kInOrder) or the oldest filled one's
  // (kAnyOrder). Requires ready(order).
  Result take(Order order = Order::kInOrder);

 private:
  struct Slot {
    Ticket ticket;
    Result result;
    bool filled = false;
  };
  Slot& slot(Ticket ticket);

  std::deque<Slot> slots_;  // by ticket; kAnyOrder takes leave gaps in the numbering
  Ticket next_ = 0;
  int64_t filled_ = 0;
  bool turn_ = false;  // held by the last ticket begun
  bool closed_ = false;
};

}  // namespace pipeprof::pipelines::ops
