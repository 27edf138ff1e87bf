#include "pipeprof/autotune/online_tuner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof_testing/timing.h"

namespace pipeprof::autotune {
namespace {

using namespace std::chrono_literals;
using pipelines::kAutotune;

pipelines::Knob* find_knob(pipelines::Model& model, const std::string& name) {
  for (pipelines::Knob* k : model.knobs()) {
    if (k->name() == name) return k;
  }
  return nullptr;
}

// Runs `dataset` with the tuner until `done(knob value)` or the end; returns the knob's value.
template <typename Done>
int64_t run_tuned(const pipelines::Dataset& dataset, TunerOptions options, Done done,
                  std::vector<KnobChange>* changes = nullptr) {
  auto it = dataset.iterate();
  pipelines::Knob* knob = find_knob(it->model(), "parallelism");
  EXPECT_NE(knob, nullptr);
  if (knob == nullptr) return 0;
  knob->set(1);
  OnlineTuner tuner(it->model(), options);
  tuner.start();
  while (auto e = it->next()) {
    if (done(knob->value())) break;
  }
  tuner.stop();
  if (changes != nullptr) *changes = tuner.changes();
  return knob->value();
}

TEST(OnlineTuner, RaisesAWaitingStageBeyondTheCores) {
  // A map that sleeps 4 ms per element: its workers use almost no CPU, so a budget of 2 cores
  // does not hold it to 2 workers.
  const auto ds = pipelines::range(2000).map(pipelines::make_function("sleep_ms", {{"ms", 4}}),
                                             {.parallelism = kAutotune});
  std::vector<KnobChange> changes;
  const int64_t p = run_tuned(
      ds, {.cpu_budget = 2}, [](int64_t v) { return v >= 6; }, &changes);
  EXPECT_GE(p, 6);
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.front().knob, "parallelism");
  EXPECT_EQ(changes.front().old_value, 1);
  EXPECT_EQ(changes.front().new_value, 2);
  EXPECT_EQ(changes.front().stage, "map 'sleep_ms'");
  EXPECT_FALSE(changes.front().reason.empty());
  for (size_t i = 1; i < changes.size(); ++i) {
    EXPECT_GE(changes[i].time_ms, changes[i - 1].time_ms);
    EXPECT_EQ(changes[i].old_value, changes[i - 1].new_value);
  }
}

TEST(OnlineTuner, HoldsAComputingStageToTheCpuBudget) {
  // A map that spins 2 ms per element counts a whole core per worker: with a budget of one core
  // it keeps its single worker, however saturated it is. The tuner reads the worker's CPU share,
  // which other busy tests on the machine lower: retried before it fails.
  const auto ds = pipelines::range(150).map(pipelines::make_function("busy_ms", {{"ms", 2}}),
                                            {.parallelism = kAutotune});
  pipeprof::testing::retry_timing(3, [&] {
    std::vector<KnobChange> changes;
    const int64_t p = run_tuned(
        ds, {.cpu_budget = 1}, [](int64_t) { return false; }, &changes);
    EXPECT_EQ(p, 1);
    for (const auto& c : changes)
      ADD_FAILURE() << c.old_value << " -> " << c.new_value << ": " << c.reason;
  });
}

TEST(OnlineTuner, AComputingStageMayUseTheWholeBudget) {
  const auto ds = pipelines::range(150).map(pipelines::make_function("busy_ms", {{"ms", 2}}),
                                            {.parallelism = kAutotune});
  pipeprof::testing::retry_timing(3, [&] {
    const int64_t p = run_tuned(ds, {.cpu_budget = 2}, [](int64_t) { return false; });
    EXPECT_GE(p, 1);
    EXPECT_LE(p, 2);
  });
}

TEST(OnlineTuner, BacksOffWhenNothingChanges) {
  const auto ds = pipelines::range(1000).prefetch(kAutotune);
  auto it = ds.iterate();
  while (it->next()) {
  }
  OnlineTuner tuner(it->model(), {.initial_period = 2ms, .max_period = 64ms, .quiet_ticks = 2});
  EXPECT_EQ(tuner.period(), 2ms);
  EXPECT_FALSE(tuner.tick());
  EXPECT_EQ(tuner.period(), 2ms);
  EXPECT_FALSE(tuner.tick());
  EXPECT_EQ(tuner.period(), 4ms);
  EXPECT_FALSE(tuner.tick());
  EXPECT_FALSE(tuner.tick());
  EXPECT_EQ(tuner.period(), 8ms);
  for (int i = 0; i < 20; ++i)
    EXPECT_FALSE(tuner.tick());
  EXPECT_EQ(tuner.period(), 64ms);
  EXPECT_TRUE(tuner.changes().empty());
}

TEST(OnlineTuner, AMoveResetsTheCadence) {
  // One element that sleeps 300 ms: once its worker is busy the stage is saturated.
  const auto ds = pipelines::range(3).map(pipelines::make_function("sleep_ms", {{"ms", 300}}),
                                          {.parallelism = kAutotune});
  auto it = ds.iterate();
  pipelines::Knob* knob = find_knob(it->model(), "parallelism");
  ASSERT_NE(knob, nullptr);
  knob->set(1);
  OnlineTuner tuner(it->model(), {.cpu_budget = 2, .initial_period = 2ms});
  std::thread consumer([&] { it->next(); });
  pipelines::Node* map = it->model().nodes().front();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (map->stats().active_workers.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  // Saturated, busy for a whole CPU window (8 ms) and the process's CPU rate is low: a move.
  EXPECT_FALSE(tuner.tick());
  std::this_thread::sleep_for(12ms);
  EXPECT_TRUE(tuner.tick());
  EXPECT_EQ(knob->value(), 2);
  EXPECT_EQ(tuner.period(), 2ms);
  consumer.join();
  ASSERT_EQ(tuner.changes().size(), 1u);
  EXPECT_NE(tuner.changes().front().reason.find("explore"), std::string::npos);
}

TEST(OnlineTuner, StopJoinsPromptly) {
  const auto ds = pipelines::range(10).prefetch(kAutotune);
  auto it = ds.iterate();
  OnlineTuner tuner(it->model(), {.initial_period = 1ms, .max_period = 10s});
  tuner.start();
  EXPECT_TRUE(tuner.running());
  std::this_thread::sleep_for(50ms);  // long enough to back off to long periods
  const auto t0 = std::chrono::steady_clock::now();
  tuner.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_FALSE(tuner.running());
  EXPECT_GT(tuner.ticks(), 0);
  tuner.stop();  // twice is fine
}

// The threads of this process named `name`, as the kernel lists them (a sanitizer's own threads
// come and go, so the test counts the tuner's thread by its name).
size_t threads_named(const std::string& name) {
  size_t n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) ++n;
  }
  return n;
}

TEST(OnlineTuner, DestructionJoins) {
  const auto ds = pipelines::range(10).prefetch(kAutotune);
  auto it = ds.iterate();  // never pulled: no worker thread of its own
  const std::string name = OnlineTuner::kThreadName;
  const size_t before = threads_named(name);
  // A 5 s period: the thread ticks once at start and then waits. A destructor that waited for the
  // next tick instead of waking the thread would take seconds; one that left the thread running
  // would leave it in the process's thread list.
  std::optional<OnlineTuner> tuner;
  tuner.emplace(it->model(), TunerOptions{.initial_period = 5s, .max_period = 10s});
  tuner->start();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (tuner->ticks() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  ASSERT_GT(tuner->ticks(), 0) << "the tuner's thread never ran";
  EXPECT_EQ(threads_named(name), before + 1);

  const auto t0 = std::chrono::steady_clock::now();
  tuner.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "destruction waited for the period";
  // A joined thread leaves the kernel's list a moment after join() returns.
  const auto gone_by = std::chrono::steady_clock::now() + 1s;
  while (threads_named(name) != before && std::chrono::steady_clock::now() < gone_by)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(threads_named(name), before) << "the tuner's thread outlived the tuner";
}

TEST(OnlineTuner, GrowsABurstyProducersBufferBeforeItsNextGap) {
  // A 30 ms open every 10 quick reads behind prefetch, and a consumer that takes 8 ms per element:
  // the buffer fills between opens, and the tuner sees the first open's 30 ms pull and grows the
  // buffer (to 4 = ceil(30 / 8)) before the second open empties it.
  const auto ds = pipelines::artificial({.open_ms = 30, .read_ms = 2, .num_samples = 10})
                      .repeat(3)
                      .prefetch(kAutotune);
  pipeprof::testing::retry_timing(3, [&] {
    auto it = ds.iterate();
    pipelines::Knob* buffer = find_knob(it->model(), "buffer_size");
    ASSERT_NE(buffer, nullptr);
    buffer->set(1);
    OnlineTuner tuner(it->model(), {.cpu_budget = 2});
    tuner.start();
    int64_t taken = 0, grown_at = -1;
    while (auto e = it->next()) {
      ++taken;
      if (grown_at < 0 && buffer->value() > 1) grown_at = taken;
      std::this_thread::sleep_for(8ms);
    }
    tuner.stop();
    EXPECT_EQ(taken, 30);
    ASSERT_GE(grown_at, 0) << "the buffer never grew";
    EXPECT_LE(grown_at, 10) << "grown only after the second open";
    const auto changes = tuner.changes();
    ASSERT_FALSE(changes.empty());
    EXPECT_EQ(changes.front().knob, "buffer_size");
    EXPECT_NE(changes.front().reason.find("bursty producer: a pull took"), std::string::npos)
        << changes.front().reason;
    EXPECT_GE(buffer->value(), 4);
  });
}

// The consumer's wait for the first element is the pipeline's start, which no buffer shortens. A
// tick that first looks after it, with the buffer already filled again (a tuner thread that ran
// late on a loaded machine), moves nothing.
TEST(OnlineTuner, TheStartsWaitIsNoReasonToGrowABuffer) {
  const auto ds =
      pipelines::artificial({.open_ms = 30, .read_ms = 2, .num_samples = 10}).prefetch(kAutotune);
  auto it = ds.iterate();
  pipelines::Knob* buffer = find_knob(it->model(), "buffer_size");
  ASSERT_NE(buffer, nullptr);
  buffer->set(1);
  OnlineTuner tuner(it->model(), {.cpu_budget = 2});
  ASSERT_TRUE(it->next().has_value());  // waits out the 30 ms open
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  const auto buffered = [&] {
    int64_t n = 0;
    for (const pipelines::Node* node : it->model().nodes())
      n += node->stats().buffered.load();
    return n;
  };
  while (buffered() < 1 && std::chrono::steady_clock::now() < deadline)  // filled again
    std::this_thread::sleep_for(1ms);
  ASSERT_GE(buffered(), 1);
  EXPECT_FALSE(tuner.tick());
  EXPECT_EQ(buffer->value(), 1);
  for (const auto& c : tuner.changes())
    ADD_FAILURE() << c.knob << ": " << c.reason;
}

TEST(OnlineTuner, FinalValuesWarmStartAnotherIterator) {
  const auto ds = pipelines::range(10)
                      .map(pipelines::make_function("identity"), {.parallelism = kAutotune})
                      .prefetch(kAutotune);
  auto first = ds.iterate();
  for (pipelines::Knob* k : first->model().knobs())
    k->set(5);
  OnlineTuner tuner(first->model());
  const auto values = tuner.final_values();
  ASSERT_EQ(values.size(), 2u);
  auto second = ds.iterate();
  EXPECT_EQ(apply_values(second->model(), values), 2);
  for (pipelines::Knob* k : second->model().knobs())
    EXPECT_EQ(k->value(), 5) << k->name();
  const auto json = to_json(values);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["value"], 5);
}

// One tuner serves two iterators in turn: its thread keeps running (one thread, never restarted),
// it ticks on the attached model only, and detach() lets go of a model before it goes.
TEST(OnlineTuner, OneThreadServesSuccessiveIterators) {
  const auto ds = pipelines::range(1000)
                      .map(pipelines::make_function("sleep_ms", {{"ms", 0.5}}),
                           {.parallelism = kAutotune})
                      .prefetch(kAutotune);
  const std::string name = OnlineTuner::kThreadName;
  const size_t before = threads_named(name);
  OnlineTuner tuner(TunerOptions{.cpu_budget = 4, .initial_period = 1ms});
  EXPECT_TRUE(tuner.final_values().empty());  // nothing attached yet
  tuner.start();
  std::this_thread::sleep_for(20ms);  // the thread names itself once it runs
  EXPECT_EQ(threads_named(name), before + 1);
  EXPECT_EQ(tuner.ticks(), 0) << "no model, no tick";
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto it = ds.iterate();
    tuner.attach(it->model());
    int64_t n = 0;
    while (it->next() && ++n < 200) {
    }
    EXPECT_EQ(tuner.final_values().size(), 2u);
    EXPECT_GT(tuner.ticks(), 0);
    tuner.detach();
    const int64_t ticks = tuner.ticks();
    it.reset();  // the model goes; a tick now would touch freed memory (the sanitizers see it)
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(tuner.ticks(), ticks) << "detached: no tick";
    EXPECT_TRUE(tuner.running());
    EXPECT_EQ(threads_named(name), before + 1) << "the same thread, not a new one";
  }
  tuner.stop();
  EXPECT_FALSE(tuner.running());
}

}  // namespace
}  // namespace pipeprof::autotune
