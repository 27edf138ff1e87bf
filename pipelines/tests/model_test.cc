// The live model: knobs (created by kAutotune, taking effect at once when set) and per-stage
// statistics (elements, blocked time, CPU share). Behaviour after a knob change is measured with
// counters inside C++ map functions, not with timings; timing bounds are loose.
#include "pipeprof/pipelines/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof_testing/timing.h"
#include "pipeprof/pipelines/sleep.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::drain_ints;
using ::testing::ElementsAre;
using testing::find_knob;
using ::testing::Pair;
using testing::stage_snapshot;

TEST(Knob, ClampsCountsChangesAndKeepsItsRange) {
  Knob knob("parallelism", 1, 8, 20);
  EXPECT_EQ(knob.name(), "parallelism");
  EXPECT_EQ(knob.value(), 8) << "the initial value is clamped too";
  EXPECT_EQ(knob.set(3), 3);
  EXPECT_EQ(knob.set(3), 3);
  EXPECT_EQ(knob.set(0), 1);
  EXPECT_EQ(knob.set(100), 8);
  EXPECT_EQ(knob.value(), 8);
  EXPECT_EQ(knob.changes(), 3) << "setting the current value is not a change";
  EXPECT_EQ(knob.min(), 1);
  EXPECT_EQ(knob.max(), 8);
}

TEST(Knob, SetWakesSubscribersUnderTheirLock) {
  Knob knob("buffer_size", 1, 10, 1);
  std::mutex mu;
  std::condition_variable cv;
  knob.subscribe(&mu, &cv);
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    // No timeout: a missed wake-up would hang here (and the CTest timeout would catch it).
    cv.wait(lock, [&] { return knob.value() == 7; });
    woke = true;
  });
  std::this_thread::sleep_for(10ms);
  knob.set(7);
  waiter.join();
  EXPECT_TRUE(woke.load());
  knob.unsubscribe(&mu, &cv);
  knob.set(2);  // no subscriber left: nothing to wake, nothing dangling
}

TEST(Model, NodesAreRegisteredOncePerKeyInOrder) {
  Model model;
  Node& a = model.node("stages[1]", "map", "map 'f'", "");
  Node& b = model.node("stages[0]", "range", "range", "stages[1]");
  EXPECT_EQ(&model.node("stages[1]", "map", "map 'f'", ""), &a);
  EXPECT_THAT(model.nodes(), ElementsAre(&a, &b));
  Knob& k = a.knob("parallelism", 1, 4, 2);
  EXPECT_EQ(&a.knob("parallelism", 1, 64, 9), &k) << "a knob is created on first use";
  EXPECT_THAT(model.knobs(), ElementsAre(&k));
  const auto snap = model.snapshot();
  ASSERT_EQ(snap.size(), 2U);
  EXPECT_EQ(snap[0].key, "stages[1]");
  EXPECT_EQ(snap[0].name, "map 'f'");
  EXPECT_THAT(snap[0].knobs, ElementsAre(Pair("parallelism", 2)));
  EXPECT_EQ(snap[1].parent, "stages[1]");
}

TEST(Cancellation, WaitUntilReturnsAtTheDeadlineOrWhenCancelled) {
  Cancellation c;
  EXPECT_TRUE(c.wait_until(trace::now_ns() + 2 * trace::kNsPerMs));
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    c.cancel();
  });
  const int64_t start = trace::now_ns();
  EXPECT_FALSE(c.wait_until(start + 10 * trace::kNsPerSec));
  EXPECT_LT(testing::ms_since(start), 5000.0);
  canceller.join();
  EXPECT_TRUE(c.cancelled());
  EXPECT_FALSE(c.wait_until(trace::now_ns() + trace::kNsPerSec)) << "stays cancelled";
}

// --- Knobs of running pipelines ---------------------------------------------------------------

using testing::ConcurrencyProbe;

TEST(Knobs, OnlyAutotunedStagesHaveKnobs) {
  auto fixed = range(4).map(make_function("identity"), {.parallelism = 2}).prefetch(2).iterate();
  EXPECT_TRUE(fixed->model().knobs().empty());
  auto tuned = range(4)
                   .map(make_function("identity"), {.parallelism = kAutotune})
                   .prefetch(kAutotune)
                   .iterate();
  std::vector<std::string> names;
  for (Knob* k : tuned->model().knobs())
    names.push_back(k->name());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("parallelism", "buffer_size"));
}

TEST(Knobs, AutotunedParallelMapExposesParallelism) {
  auto it = range(4).map(make_function("identity"), {.parallelism = kAutotune}).iterate();
  Knob* knob = find_knob(it->model(), "parallelism");
  ASSERT_NE(knob, nullptr);
  EXPECT_EQ(knob->min(), 1);
  EXPECT_EQ(knob->max(), kMaxParallelism);
  EXPECT_EQ(knob->value(), default_autotune_parallelism());
  EXPECT_GE(default_autotune_parallelism(), 2);
  EXPECT_EQ(drain_ints(*it).size(), 4U);
}

TEST(Knobs, ParallelismChangeTakesEffectAtOnce) {
  ConcurrencyProbe probe;
  auto it = range(1000).map(probe.fn(30), {.parallelism = kAutotune}).iterate();
  Knob* knob = find_knob(it->model(), "parallelism");
  ASSERT_NE(knob, nullptr);

  knob->set(4);
  drain_ints(*it, 12);
  EXPECT_EQ(probe.max_active.load(), 4) << "raised to 4: four calls overlap";
  const auto map = stage_snapshot(it->model(), "map");
  ASSERT_TRUE(map.has_value());
  EXPECT_THAT(map->knobs, ElementsAre(Pair("parallelism", 4)));
  EXPECT_EQ(map->buffer_capacity, 4);

  knob->set(1);
  drain_ints(*it, 4);  // at most four calls were started under the old value
  probe.max_active = probe.active.load();
  drain_ints(*it, 6);
  EXPECT_EQ(probe.max_active.load(), 1) << "lowered to 1: calls are serialized";

  knob->set(3);
  probe.max_active = 0;
  drain_ints(*it, 9);
  EXPECT_EQ(probe.max_active.load(), 3);
}

TEST(Knobs, RaisingParallelismWakesABlockedConsumer) {
  // With parallelism 1 the first element takes 300 ms. The knob is raised to 4 while the consumer
  // waits for it: the consumer must wake and start the extra workers at once, so four calls run
  // together before that first element is delivered.
  ConcurrencyProbe probe;
  auto it = range(100).map(probe.fn(300), {.parallelism = kAutotune}).iterate();
  Knob* knob = find_knob(it->model(), "parallelism");
  ASSERT_NE(knob, nullptr);
  knob->set(1);
  std::thread raiser([&] {
    std::this_thread::sleep_for(50ms);
    knob->set(4);
  });
  ASSERT_TRUE(it->next().has_value());
  EXPECT_EQ(probe.max_active.load(), 4);
  raiser.join();
}

TEST(Knobs, ParallelInterleaveParallelismIsBoundedByTheCycleLength) {
  auto it = range(6)
                .interleave(DatasetFn([](const Element& x) { return from_tensors(x); }),
                            {.cycle_length = 3, .parallelism = kAutotune})
                .iterate();
  Knob* knob = find_knob(it->model(), "parallelism");
  ASSERT_NE(knob, nullptr);
  EXPECT_EQ(knob->max(), 3);
  EXPECT_EQ(knob->value(), 3);
  EXPECT_EQ(knob->set(10), 3);
  knob->set(1);
  EXPECT_THAT(drain_ints(*it), ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(Knobs, PrefetchBufferSize) {
  auto it = range(1000).prefetch(kAutotune).iterate();
  Knob* knob = find_knob(it->model(), "buffer_size");
  ASSERT_NE(knob, nullptr);
  EXPECT_EQ(knob->value(), kDefaultAutotuneBuffer);
  EXPECT_EQ(knob->max(), kMaxBufferSize);
  ASSERT_TRUE(it->next().has_value());

  auto buffered_reaches = [&](int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (stage_snapshot(it->model(), "prefetch")->buffered == n) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  };
  EXPECT_TRUE(buffered_reaches(2));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(stage_snapshot(it->model(), "prefetch")->buffered, 2) << "never beyond the knob";

  knob->set(20);  // the waiting producer wakes and fills the larger buffer
  EXPECT_TRUE(buffered_reaches(20));
  std::this_thread::sleep_for(20ms);
  const auto prefetch = stage_snapshot(it->model(), "prefetch");
  EXPECT_EQ(prefetch->buffered, 20);
  EXPECT_EQ(prefetch->buffer_capacity, 20);
  EXPECT_THAT(prefetch->knobs, ElementsAre(Pair("buffer_size", 20)));
}

// --- Statistics ----------------------------------------------------------------------------------

TEST(Statistics, ElementsProducedPerStage) {
  auto it = range(10)
                .map(make_function("increment"), {.parallelism = 2})
                .filter(make_predicate("less_than", {{"value", 9}}))
                .batch(3)
                .iterate();
  int batches = 0;
  while (it->next())
    ++batches;
  EXPECT_EQ(batches, 3);
  auto elements = [&](std::string_view op) { return stage_snapshot(it->model(), op)->elements; };
  EXPECT_EQ(elements("range"), 10);
  EXPECT_EQ(elements("map"), 10);
  EXPECT_EQ(elements("filter"), 8);
  EXPECT_EQ(elements("batch"), 3);
}

TEST(Statistics, AreCompleteAtTheEndAndAfterDestruction) {
  // Iterators batch their counters; the end of the sequence and destruction flush them.
  auto it = range(7).map(make_function("identity")).iterate();
  EXPECT_EQ(drain_ints(*it).size(), 7U);
  EXPECT_EQ(stage_snapshot(it->model(), "map")->elements, 7) << "at the end, iterator alive";
  auto partial = range(1000).map(make_function("identity")).iterate();
  EXPECT_EQ(drain_ints(*partial, 10).size(), 10U);
  const auto model = partial->shared_model();
  partial.reset();
  EXPECT_EQ(stage_snapshot(*model, "map")->elements, 10) << "after destruction";
  EXPECT_EQ(stage_snapshot(*model, "range")->elements, 10);
}

TEST(Statistics, PrefetchConsumerBlockedWhileTheInputSleeps) {
  // 40 elements: timing is sampled by call tree (every 16th, then every one after a slow one).
  // The prefetch's own time is timing: a consumer descheduled by other tests between its waits
  // counts that time as its own, so the scenario is retried before it fails.
  pipeprof::testing::retry_timing(3, [&] {
    auto it = range(40).map(make_function("sleep_ms", {{"ms", 5}})).prefetch(1).iterate();
    EXPECT_EQ(drain_ints(*it).size(), 40U);
    const auto prefetch = stage_snapshot(it->model(), "prefetch");
    ASSERT_TRUE(prefetch.has_value());
    EXPECT_EQ(prefetch->elements, 40);
    EXPECT_GT(prefetch->blocked_ns, 100 * trace::kNsPerMs) << "40 x 5 ms of waiting on the map";
    EXPECT_LT(prefetch->self_wall_ns, 100 * trace::kNsPerMs) << "waiting is not work";
    const auto map = stage_snapshot(it->model(), "map");
    ASSERT_TRUE(map.has_value());
    EXPECT_EQ(map->elements, 40);
    EXPECT_GT(map->self_wall_ns, 100 * trace::kNsPerMs) << "the sleeps are the map's own time";
    EXPECT_GT(map->wall_ns_per_element, 3.0 * trace::kNsPerMs);
  });
}

TEST(Statistics, CpuShareTellsBurningFromWaiting) {
  // One busy thread at a time (sequential, or one worker while the consumer blocks): on a loaded
  // 2-core machine, more busy threads than cores would share the CPU and halve their share. The
  // shares are timing: a busy thread descheduled by other tests shows a lower one, so a scenario
  // is retried before it fails.
  for (int64_t parallelism : std::vector<int64_t>{0, 1}) {
    pipeprof::testing::retry_timing(3, [&] {
      auto busy = range(30)
                      .map(make_function("busy_ms", {{"ms", 3}}), {.parallelism = parallelism})
                      .iterate();
      drain_ints(*busy);
      const auto busy_map = stage_snapshot(busy->model(), "map");
      ASSERT_TRUE(busy_map.has_value());
      // About 1 on a quiet machine; a third or more even when ctest runs busy tests beside it.
      EXPECT_GT(busy_map->cpu_share, 0.3) << "parallelism " << parallelism;
      EXPECT_GT(busy_map->cpu_ns_per_element, 1.0 * trace::kNsPerMs);
    });
  }
  for (int64_t parallelism : std::vector<int64_t>{0, 2}) {
    pipeprof::testing::retry_timing(3, [&] {
      auto sleepy = range(30)
                        .map(make_function("sleep_ms", {{"ms", 10}}), {.parallelism = parallelism})
                        .iterate();
      drain_ints(*sleepy);
      const auto sleepy_map = stage_snapshot(sleepy->model(), "map");
      ASSERT_TRUE(sleepy_map.has_value());
      EXPECT_LT(sleepy_map->cpu_share, 0.15) << "parallelism " << parallelism;  // about 0.01
      EXPECT_GT(sleepy_map->wall_ns_per_element, 5.0 * trace::kNsPerMs);
    });
  }
}

TEST(Statistics, ParallelMapWorkIsCountedOnItsWorkers) {
  auto it = range(8).map(make_function("sleep_ms", {{"ms", 5}}), {.parallelism = 4}).iterate();
  drain_ints(*it);
  const auto map = stage_snapshot(it->model(), "map");
  ASSERT_TRUE(map.has_value());
  EXPECT_GT(map->work_wall_ns, 30 * trace::kNsPerMs) << "8 x 5 ms on the workers";
  EXPECT_EQ(map->elements, 8);
  EXPECT_GE(map->blocked_ns, 0);
}

}  // namespace
}  // namespace pipeprof::pipelines
