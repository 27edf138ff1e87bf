// The hand-off primitive shared by prefetch, parallel map and parallel interleave: the ordered,
// bounded slots (HandoffQueue) on their own, then Handoff's waits, signals and stop with real
// threads. Thread tests wait for states (a thread blocked, a value reached) with generous deadlines
// and assert on counts and order, never on durations.
#include "ops/handoff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.h"

namespace pipeprof::pipelines::ops {
namespace {

using namespace std::chrono_literals;
using Order = HandoffQueue::Order;
using ::testing::ElementsAre;
using testing::run_with_deadline;

Result value(int64_t v) {
  Result r;
  r.value = scalar_element(v);
  return r;
}

int64_t int_of(Result r) {
  auto e = r.take();
  return e ? e->at(0).as_int64() : -1;
}

// Polls `done` (under `mu`) until it holds; false after 10 s (the state never came).
bool eventually(std::mutex& mu, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done()) return true;
    }
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// --- HandoffQueue ------------------------------------------------------------------------------

TEST(HandoffQueue, OneTurnAtATimeAndNeverBeyondTheCapacity) {
  HandoffQueue q;
  EXPECT_TRUE(q.can_begin(2));
  const auto a = q.begin();
  EXPECT_FALSE(q.can_begin(2)) << "the turn is taken";
  EXPECT_EQ(q.size(), 1);
  EXPECT_EQ(q.buffered(), 0) << "the slot being pulled is not buffered yet";
  q.release_turn();
  EXPECT_EQ(q.buffered(), 1);
  EXPECT_TRUE(q.can_begin(2));
  const auto b = q.begin();
  q.fill(b, value(1));
  EXPECT_EQ(q.size(), 2);
  EXPECT_FALSE(q.can_begin(2)) << "two slots reserved or filled: full";
  EXPECT_TRUE(q.can_begin(3)) << "a larger capacity (a raised knob) applies at once";
  EXPECT_THROW(q.fill(b, value(1)), std::logic_error);
  q.fill(a, value(0));
  EXPECT_THROW(q.fill(a + 10, value(0)), std::logic_error);
}

TEST(HandoffQueue, InOrderTakesTheFrontOnlyWhenFilled) {
  HandoffQueue q;
  const auto a = q.begin();
  q.release_turn();
  const auto b = q.begin();
  q.fill(b, value(1));
  EXPECT_FALSE(q.ready(Order::kInOrder));
  EXPECT_THROW(q.take(Order::kInOrder), std::logic_error) << "the front slot is being worked on";
  EXPECT_TRUE(q.ready(Order::kAnyOrder));
  q.fill(a, value(0));
  EXPECT_EQ(int_of(q.take(Order::kInOrder)), 0);
  EXPECT_EQ(int_of(q.take(Order::kInOrder)), 1);
  EXPECT_FALSE(q.ready(Order::kAnyOrder));
  EXPECT_EQ(q.size(), 0);
}

TEST(HandoffQueue, AnyOrderTakesTheOldestFilledAndLaterFillsStillFindTheirSlot) {
  HandoffQueue q;
  std::vector<HandoffQueue::Ticket> t;
  for (int i = 0; i < 4; ++i) {
    t.push_back(q.begin());
    q.release_turn();
  }
  q.fill(t[2], value(2));
  q.fill(t[1], value(1));
  EXPECT_EQ(int_of(q.take(Order::kAnyOrder)), 1);
  // Slot 1 is gone from the middle: slots 0 and 3 are found by ticket all the same.
  q.fill(t[3], value(3));
  EXPECT_EQ(int_of(q.take(Order::kAnyOrder)), 2);
  EXPECT_EQ(int_of(q.take(Order::kAnyOrder)), 3);
  EXPECT_FALSE(q.ready(Order::kAnyOrder));
  q.fill(t[0], value(0));
  EXPECT_EQ(int_of(q.take(Order::kAnyOrder)), 0);
}

TEST(HandoffQueue, EndDropsThePulledSlotAndDrainsAfterTheRest) {
  HandoffQueue q;
  const auto a = q.begin();
  q.fill(a, value(0));
  EXPECT_TRUE(q.can_begin(2)) << "filling the slot gives its turn back";
  const auto b = q.begin();
  q.end(b);
  EXPECT_TRUE(q.closed());
  EXPECT_FALSE(q.can_begin(100));
  EXPECT_FALSE(q.drained()) << "an element is still there";
  EXPECT_EQ(q.size(), 1);
  EXPECT_EQ(int_of(q.take()), 0);
  EXPECT_TRUE(q.drained());
  EXPECT_THROW(q.begin(), std::logic_error);
}

TEST(HandoffQueue, ErrorsAreDeliveredInTheirPlace) {
  HandoffQueue q;
  const auto a = q.begin();
  Result err;
  err.error = std::make_exception_ptr(PipelineError("stage", "boom"));
  q.fill(a, std::move(err));
  const auto b = q.begin();
  q.fill(b, value(7));
  Result first = q.take();
  EXPECT_THROW(first.take(), PipelineError);
  EXPECT_EQ(int_of(q.take()), 7);
}

// --- Handoff -----------------------------------------------------------------------------------

TEST(Handoff, ReadyConditionReturnsAtOnceWithoutCountingABlock) {
  Cancellation cancel;
  Handoff h(cancel);
  std::unique_lock<std::mutex> lock(h.mutex());
  int scopes = 0;
  EXPECT_TRUE(h.wait(
      lock, h.consumer(), [] { return true; }, [&] { return ++scopes; }));
  EXPECT_EQ(scopes, 0);
  EXPECT_FALSE(h.signal(h.consumer())) << "nobody waits: nobody to wake";
}

TEST(Handoff, ProducersAndConsumerMoveEveryElementInOrderWithinTheCapacity) {
  // Two producers share the turn (like parallel map's workers), fill out of order, and the
  // consumer takes in order; the capacity is checked under the lock on every begin.
  constexpr int64_t kN = 20000;
  constexpr int64_t kCapacity = 3;
  Cancellation cancel;
  Handoff h(cancel);
  HandoffQueue q;
  int64_t next_input = 0;
  int64_t max_size = 0;
  std::vector<int64_t> got;
  run_with_deadline(60s, [&] {
    auto produce = [&] {
      std::unique_lock<std::mutex> lock(h.mutex());
      while (h.wait(lock, h.producers(), [&] { return q.can_begin(kCapacity); })) {
        const auto ticket = q.begin();
        max_size = std::max(max_size, q.size());
        if (next_input == kN) {
          q.end(ticket);
          h.signal(h.consumer()).notify(lock);
          continue;
        }
        const int64_t x = next_input++;
        q.release_turn();
        h.signal(h.producers()).notify(lock);
        lock.unlock();
        Result r = value(x);  // the "function", outside the lock
        lock.lock();
        q.fill(ticket, std::move(r));
        if (q.ready()) h.signal(h.consumer()).notify(lock);
      }
    };
    std::thread p1(produce), p2(produce);
    {
      std::unique_lock<std::mutex> lock(h.mutex());
      while (h.wait(lock, h.consumer(), [&] { return q.ready() || q.drained(); }) && !q.drained()) {
        got.push_back(int_of(q.take()));
        h.signal(h.producers()).notify(lock);
      }
    }
    h.stop();
    p1.join();
    p2.join();
  });
  ASSERT_EQ(static_cast<int64_t>(got.size()), kN);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(got[static_cast<size_t>(i)], i) << "at position " << i;
  EXPECT_LE(max_size, kCapacity);
}

TEST(Handoff, StopWakesEveryBlockedThreadAndLaterWaitsEndAtOnce) {
  Cancellation cancel;
  Handoff h(cancel);
  std::atomic<int> stopped_waits{0};
  run_with_deadline(30s, [&] {
    auto waiter = [&](Handoff::Side& side) {
      std::unique_lock<std::mutex> lock(h.mutex());
      if (!h.wait(lock, side, [] { return false; })) ++stopped_waits;
    };
    std::thread c([&] { waiter(h.consumer()); });
    std::thread p1([&] { waiter(h.producers()); });
    std::thread p2([&] { waiter(h.producers()); });
    ASSERT_TRUE(eventually(
        h.mutex(), [&] { return h.consumer().blocked() == 1 && h.producers().blocked() == 2; }));
    h.stop();
    c.join();
    p1.join();
    p2.join();
    std::unique_lock<std::mutex> lock(h.mutex());
    EXPECT_FALSE(h.wait(lock, h.consumer(), [] { return false; }));
  });
  EXPECT_EQ(stopped_waits.load(), 3);
}

TEST(Handoff, CancellationSeenByOneSideWakesTheOther) {
  // The consumer blocks; the tree is cancelled (which wakes nobody by itself); the producer's next
  // wait sees the cancellation and ends the consumer's wait too.
  Cancellation cancel;
  Handoff h(cancel);
  bool consumer_result = true;
  run_with_deadline(30s, [&] {
    std::thread c([&] {
      std::unique_lock<std::mutex> lock(h.mutex());
      consumer_result = h.wait(lock, h.consumer(), [] { return false; });
    });
    ASSERT_TRUE(eventually(h.mutex(), [&] { return h.consumer().blocked() == 1; }));
    cancel.cancel();
    EXPECT_TRUE(h.stopped());
    {
      std::unique_lock<std::mutex> lock(h.mutex());
      EXPECT_FALSE(h.wait(lock, h.producers(), [] { return false; }));
    }
    c.join();
  });
  EXPECT_FALSE(consumer_result);
}

TEST(Handoff, SignalWakesOneThreadOfOneSideOnly) {
  // Three producers and the consumer block on conditions that count their evaluations. A signal
  // of the consumer wakes no producer; a signal of the producers wakes exactly one of them (the
  // others would re-check their condition if woken).
  Cancellation cancel;
  Handoff h(cancel);
  int go_producers = 0;  // producers allowed to return
  bool go_consumer = false;
  int producer_checks = 0;
  int returned = 0;
  run_with_deadline(30s, [&] {
    std::vector<std::thread> producers;
    for (int i = 0; i < 3; ++i) {
      producers.emplace_back([&] {
        std::unique_lock<std::mutex> lock(h.mutex());
        if (h.wait(lock, h.producers(), [&] {
              ++producer_checks;
              return go_producers > 0;
            })) {
          --go_producers;
          ++returned;
        }
      });
    }
    std::thread c([&] {
      std::unique_lock<std::mutex> lock(h.mutex());
      h.wait(lock, h.consumer(), [&] { return go_consumer; });
    });
    ASSERT_TRUE(eventually(
        h.mutex(), [&] { return h.producers().blocked() == 3 && h.consumer().blocked() == 1; }));
    int checks_before = 0;
    {
      std::unique_lock<std::mutex> lock(h.mutex());
      checks_before = producer_checks;
      go_consumer = true;
      const Handoff::Wake wake = h.signal(h.consumer());
      EXPECT_TRUE(wake) << "the consumer is blocked";
      EXPECT_FALSE(h.signal(h.producers(), false)) << "wake_blocked=false wakes nobody";
      wake.notify(lock);
    }
    c.join();
    {
      std::unique_lock<std::mutex> lock(h.mutex());
      EXPECT_EQ(producer_checks, checks_before) << "no producer was woken for the consumer";
      go_producers = 1;
      h.signal(h.producers()).notify(lock);
    }
    ASSERT_TRUE(eventually(h.mutex(), [&] { return returned == 1; }));
    std::this_thread::sleep_for(50ms);  // a wrongly woken producer would re-check by now
    {
      std::lock_guard<std::mutex> lock(h.mutex());
      EXPECT_EQ(h.producers().blocked(), 2);
      EXPECT_EQ(producer_checks, checks_before + 1) << "only the one producer was woken";
    }
    h.stop();
    for (auto& t : producers)
      t.join();
  });
}

TEST(Handoff, FollowedKnobWakesAWaitOnTheCapacity) {
  Cancellation cancel;
  Handoff h(cancel);
  HandoffQueue q;
  Knob knob("buffer_size", 1, 10, 1);
  h.follow(knob);
  run_with_deadline(30s, [&] {
    std::thread producer([&] {
      std::unique_lock<std::mutex> lock(h.mutex());
      while (h.wait(lock, h.producers(), [&] { return q.can_begin(knob.value()); })) {
        const auto ticket = q.begin();
        q.fill(ticket, value(0));
      }
    });
    ASSERT_TRUE(
        eventually(h.mutex(), [&] { return q.size() == 1 && h.producers().blocked() == 1; }));
    knob.set(3);  // wakes the blocked producer through the subscription, with no signal
    EXPECT_TRUE(eventually(h.mutex(), [&] { return q.size() == 3; }));
    h.stop();
    producer.join();
  });
  h.unfollow(knob);
  EXPECT_EQ(q.size(), 3) << "never beyond the knob";
}

TEST(Handoff, TimeIsCountedBlockedOnlyWhenTheThreadWaits) {
  // on_block's result lives while the thread waits: here a scope that counts its lifetime.
  struct Counting {
    std::atomic<int>& live;
    std::atomic<int>& made;
    Counting(std::atomic<int>& l, std::atomic<int>& m) : live(l), made(m) {
      ++live;
      ++made;
    }
    ~Counting() { --live; }
    Counting(const Counting&) = delete;
    Counting& operator=(const Counting&) = delete;
  };
  Cancellation cancel;
  Handoff h(cancel);
  std::atomic<int> live{0}, made{0};
  bool go = false;
  run_with_deadline(30s, [&] {
    std::thread c([&] {
      std::unique_lock<std::mutex> lock(h.mutex());
      EXPECT_TRUE(h.wait(
          lock, h.consumer(), [&] { return go; }, [&] { return Counting(live, made); }));
      EXPECT_EQ(live.load(), 0) << "the scope ends with the wait";
    });
    ASSERT_TRUE(eventually(h.mutex(), [&] { return h.consumer().blocked() == 1; }));
    EXPECT_EQ(live.load(), 1) << "blocked: inside the scope";
    {
      std::unique_lock<std::mutex> lock(h.mutex());
      go = true;
      h.signal(h.consumer()).notify(lock);
    }
    c.join();
  });
  EXPECT_EQ(made.load(), 1);
}

// --- WakeCoalescing -----------------------------------------------------------------------------

TEST(WakeCoalescing, HoldsOnlyWhilePullsAreQuickTheConsumerBlocksAndMoreCanBePulled) {
  WakeCoalescing c;
  EXPECT_FALSE(c.hold(true, true)) << "no pull measured yet: not quick";
  int64_t t = 1'000'000;
  for (int i = 0; i < 8; ++i, t += 2'000)
    c.pulled(t, t + 1'000);  // 1 us pulls
  EXPECT_TRUE(c.hold(true, true));
  EXPECT_FALSE(c.hold(false, true)) << "a consumer that is not blocked needs no wake-up";
  EXPECT_FALSE(c.hold(true, false)) << "nothing more to pull: wake it now";
  for (int i = 0; i < 8; ++i, t += 2'000'000)
    c.pulled(t, t + 1'000'000);  // 1 ms pulls
  EXPECT_FALSE(c.hold(true, true)) << "slow pulls are never held back";
}

TEST(WakeCoalescing, AWakeUpIsHeldBackAtMostTheMaximumDelay) {
  WakeCoalescing c;
  int64_t t = 5'000'000;
  for (int i = 0; i < 8; ++i, t += 1'000)
    c.pulled(t, t + 1'000);
  // Back-to-back 1 us pulls: held until the first held element is kMaxDelayNs old, then released,
  // and held again from the next one.
  int held = 0;
  int64_t first_end = 0;
  for (;; t += 1'000) {
    c.pulled(t, t + 1'000);
    if (first_end == 0) first_end = t + 1'000;
    if (!c.hold(true, true)) break;
    ++held;
  }
  EXPECT_EQ(t + 1'000 - first_end, WakeCoalescing::kMaxDelayNs);
  EXPECT_EQ(held, WakeCoalescing::kMaxDelayNs / 1'000);
  c.pulled(t + 1'000, t + 2'000);
  EXPECT_TRUE(c.hold(true, true)) << "a new hold starts after the release";
}

}  // namespace
}  // namespace pipeprof::pipelines::ops
