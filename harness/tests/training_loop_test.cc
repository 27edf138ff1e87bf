// The run engine's training loop (training_loop.h) and its metrics (metrics.h).
#include "pipeprof/harness/training_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "pipeprof/harness/errors.h"
#include "pipeprof/harness/metrics.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"

namespace pipeprof::harness {
namespace {

using pipelines::Element;

std::function<std::unique_ptr<pipelines::Iterator>(int64_t, int64_t)> range_loader(int64_t n) {
  return [n](int64_t, int64_t) { return pipelines::range(n).iterate(); };
}

TEST(TrainingLoop, OneConsumerRunsEveryEpochToItsLoadersEnd) {
  LoopOptions o;
  o.epochs = 3;
  o.loader_life = LoaderLife::kEpoch;
  int opened = 0;
  o.open = [&](int64_t, int64_t) {
    ++opened;
    return pipelines::range(5).iterate();
  };
  int64_t seen = 0;
  o.step = [&](int64_t, Element& batch, int64_t) { seen += batch[0].values<int64_t>()[0]; };
  int64_t ended = 0;
  o.on_epoch_end = [&](const EpochRecord& e) { ended += e.epoch; };
  const LoopRun run = run_loop(o);
  EXPECT_EQ(opened, 3);  // a fresh loader per epoch
  EXPECT_EQ(seen, 3 * (0 + 1 + 2 + 3 + 4));
  EXPECT_EQ(ended, 1 + 2 + 3);
  ASSERT_EQ(run.consumers.size(), 1u);
  const ConsumerRecord& c = run.consumers[0];
  ASSERT_EQ(c.epochs.size(), 3u);
  for (const EpochRecord& e : c.epochs) {
    EXPECT_TRUE(e.complete);
    ASSERT_EQ(e.steps.size(), 5u);
    EXPECT_FALSE(e.stages.empty());  // each epoch's loader's statistics
    for (const StepRecord& s : e.steps) {
      EXPECT_EQ(s.samples, 1);
      EXPECT_EQ(s.proc_ns, s.load_ns + s.compute_ns);
      EXPECT_EQ(s.barrier_ns, 0);
    }
  }
  EXPECT_FALSE(run.interrupted);
  EXPECT_TRUE(c.autotune.is_null());  // no knobs, no tuner
}

TEST(TrainingLoop, ConsumersMeetAtTheBarrierAndStopTogether) {
  LoopOptions o;
  o.consumers = 3;
  o.epochs = 2;
  o.steps = 4;
  o.barrier = true;
  o.open = range_loader(1000);
  // Consumer 1 is slow: the others wait for it at the barrier, every step.
  o.step = [](int64_t rank, Element&, int64_t) {
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  };
  const LoopRun run = run_loop(o);
  ASSERT_EQ(run.consumers.size(), 3u);
  for (const ConsumerRecord& c : run.consumers) {
    ASSERT_EQ(c.epochs.size(), 2u);
    for (const EpochRecord& e : c.epochs) {
      EXPECT_EQ(e.steps.size(), 4u);
      EXPECT_TRUE(e.complete);
    }
  }
  int64_t fast_barrier = 0, slow_barrier = 0;
  for (const StepRecord& s : run.consumers[0].epochs[0].steps)
    fast_barrier += s.barrier_ns;
  for (const StepRecord& s : run.consumers[1].epochs[0].steps)
    slow_barrier += s.barrier_ns;
  EXPECT_GT(fast_barrier, slow_barrier);
  EXPECT_GT(fast_barrier, 4 * 2'000'000);
}

// A pause after a step (a checkpoint only consumer 0 writes): every consumer waits for it inside
// its own pause, not in the next step's barrier, and the epoch's AU leaves it out.
TEST(TrainingLoop, APauseAfterAStepIsEveryConsumersAndOutsideAu) {
  LoopOptions o;
  o.consumers = 3;
  o.epochs = 1;
  o.steps = 4;
  o.barrier = true;
  o.open = range_loader(1000);
  o.step = [](int64_t, Element&, int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  o.after_step = [](int64_t rank, int64_t, int64_t step) {
    if (step != 2) return false;
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(60));
    return true;
  };
  const LoopRun run = run_loop(o);
  ASSERT_EQ(run.consumers.size(), 3u);
  for (const ConsumerRecord& c : run.consumers) {
    const auto& steps = c.epochs.at(0).steps;
    ASSERT_EQ(steps.size(), 4u);
    // Consumer 0's 60 ms are every consumer's pause (less whatever late start the scheduler
    // gave it), not the next step's barrier wait.
    EXPECT_GE(steps[1].pause_ns, 30'000'000) << "consumer " << c.rank;
    EXPECT_EQ(steps[0].pause_ns + steps[2].pause_ns + steps[3].pause_ns, 0);
    EXPECT_LT(steps[2].barrier_ns, steps[1].pause_ns) << "consumer " << c.rank << " waited in step 3";
    // AU leaves the pause out: above the compute over the whole epoch.
    const EpochMetrics m = epoch_metrics(c.epochs[0], {.exclude_start = 0, .steps = 4}, 1);
    double compute = 0;
    for (const StepRecord& st : steps)
      compute += static_cast<double>(st.compute_ns);
    const double naive = compute / static_cast<double>(c.epochs[0].end_ns - c.epochs[0].start_ns);
    EXPECT_GT(m.au, naive) << "consumer " << c.rank;
  }
}

TEST(TrainingLoop, ALoaderThatRunsOutIsNotedAndItsEpochIsIncomplete) {
  LoopOptions o;
  o.consumers = 2;
  o.steps = 5;
  o.barrier = true;
  o.open = [](int64_t rank, int64_t) { return pipelines::range(rank == 0 ? 5 : 2).iterate(); };
  const LoopRun run = run_loop(o);
  ASSERT_EQ(run.notes.size(), 1u);
  EXPECT_NE(run.notes[0].find("accelerator 1"), std::string::npos) << run.notes[0];
  EXPECT_FALSE(run.consumers[1].epochs[0].complete);
  EXPECT_EQ(run.consumers[1].epochs[0].steps.size(), 2u);
}

TEST(TrainingLoop, AnErrorInOneConsumerStopsTheOthersAndIsRethrown) {
  LoopOptions o;
  o.consumers = 3;
  o.steps = 1'000'000;
  o.barrier = true;
  o.open = range_loader(10'000'000);
  o.step = [](int64_t rank, Element& batch, int64_t) {
    if (rank == 2 && batch[0].values<int64_t>()[0] == 10) throw std::runtime_error("step 10 broke");
  };
  EXPECT_THROW(
      {
        try {
          (void)run_loop(o);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "step 10 broke");
          throw;
        }
      },
      std::runtime_error);
}

TEST(TrainingLoop, StopEndsTheRunAfterTheCurrentStep) {
  std::atomic<bool> stop{false};
  LoopOptions o;
  o.epochs = 5;
  o.stop = &stop;
  o.open = range_loader(100);
  int steps = 0;
  o.step = [&](int64_t, Element&, int64_t) {
    if (++steps == 7) stop = true;
  };
  const LoopRun run = run_loop(o);
  EXPECT_TRUE(run.interrupted);
  EXPECT_EQ(steps, 7);
  ASSERT_EQ(run.consumers[0].epochs.size(), 1u);
  EXPECT_FALSE(run.consumers[0].epochs[0].complete);
}

// The watchdog: a loader that never yields (an artificial source that opens for a day) is
// reported, naming what it waits for, and fails the run after fail_after; the loader is cancelled.
TEST(TrainingLoop, TheWatchdogReportsAStallAndFailsIt) {
  LoopOptions o;
  o.steps = 10;
  o.open = [](int64_t, int64_t) {
    return pipelines::artificial({.open_ms = 86'400'000, .read_ms = 0, .num_samples = 10}).iterate();
  };
  std::vector<std::string> reports;
  std::mutex m;
  o.watchdog.report_after = std::chrono::milliseconds(100);
  o.watchdog.fail_after = std::chrono::milliseconds(450);
  o.watchdog.report = [&](const std::string& text) {
    std::lock_guard lock(m);
    reports.push_back(text);
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)run_loop(o);
    FAIL() << "the stalled run ended without an error";
  } catch (const RunFailure& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the run stalled: no progress for"), std::string::npos) << what;
    EXPECT_NE(what.find("artificial: its open (86400000 ms)"), std::string::npos) << what;
    EXPECT_NE(what.find("accelerator 0: a batch from its loader (epoch 1, step 1)"), std::string::npos)
        << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30)) << "the wait was not cancelled";
  std::lock_guard lock(m);
  ASSERT_GE(reports.size(), 2u) << "reported again while the stall lasts";
  EXPECT_NE(reports[0].find("no progress for"), std::string::npos) << reports[0];
  EXPECT_NE(reports[0].find("artificial: its open"), std::string::npos) << reports[0];
}

// With a barrier: one accelerator's loader stalls, the others wait for it at the barrier. The
// report names both; the failure releases the others too.
TEST(TrainingLoop, TheWatchdogEndsAStallBehindTheBarrier) {
  LoopOptions o;
  o.consumers = 3;
  o.steps = 50;
  o.barrier = true;
  o.open = [](int64_t rank, int64_t) {
    if (rank == 1) return pipelines::artificial({.open_ms = 86'400'000, .read_ms = 0, .num_samples = 1}).iterate();
    return pipelines::range(1000).iterate();
  };
  std::string report;
  o.watchdog.report_after = std::chrono::milliseconds(100);
  o.watchdog.fail_after = std::chrono::milliseconds(400);
  o.watchdog.report = [&](const std::string& text) {
    if (report.empty()) report = text;
  };
  EXPECT_THROW((void)run_loop(o), RunFailure);
  EXPECT_NE(report.find("accelerator 1: a batch from its loader (epoch 1, step 1)"), std::string::npos) << report;
  EXPECT_NE(report.find("accelerator 0: the other accelerators at the barrier after step 1"), std::string::npos)
      << report;
}

// A run that moves does not stall, however long it takes: its steps are its progress.
TEST(TrainingLoop, TheWatchdogLeavesAMovingRunAlone) {
  LoopOptions o;
  o.steps = 40;
  o.open = range_loader(1000);
  o.step = [](int64_t, Element&, int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); };
  int reports = 0;
  o.watchdog.report_after = std::chrono::milliseconds(250);
  o.watchdog.fail_after = std::chrono::seconds(2);
  o.watchdog.report = [&](const std::string&) { ++reports; };
  const LoopRun run = run_loop(o);  // about 0.4 s in all, far more than report_after
  EXPECT_EQ(run.consumers[0].epochs[0].steps.size(), 40u);
  EXPECT_EQ(reports, 0);
}

TEST(TrainingLoop, WithoutALoaderABatchIsInHandAtOnce) {
  LoopOptions o;
  o.steps = 3;
  o.count = [](const Element&, bool has_loader, StepRecord& s) { s.samples = has_loader ? 1 : 8; };
  const LoopRun run = run_loop(o);
  ASSERT_EQ(run.consumers[0].epochs[0].steps.size(), 3u);
  EXPECT_EQ(loop_figures(run.consumers).samples, 24);
}

TEST(TrainingLoop, TheTunerMovesKnobsAndItsPicksAreRecorded) {
  LoopOptions o;
  o.epochs = 2;
  o.loader_life = LoaderLife::kEpoch;
  o.open = [](int64_t, int64_t) {
    return pipelines::range(40)
        .map(pipelines::make_function("sleep_ms", {{"ms", 2}}), {.parallelism = pipelines::kAutotune})
        .iterate();
  };
  const LoopRun run = run_loop(o);
  const nlohmann::json& tuned = run.consumers[0].autotune;
  ASSERT_FALSE(tuned.is_null());
  EXPECT_TRUE(tuned.contains("changes"));
  ASSERT_TRUE(tuned.contains("final"));
  EXPECT_FALSE(tuned["final"].empty());
}

StepRecord step(double load_ms, double compute_ms, double barrier_ms = 0, int64_t samples = 1) {
  StepRecord s;
  s.load_ns = static_cast<int64_t>(load_ms * 1e6);
  s.compute_ns = static_cast<int64_t>(compute_ms * 1e6);
  s.proc_ns = s.load_ns + s.compute_ns;
  s.barrier_ns = static_cast<int64_t>(barrier_ms * 1e6);
  s.samples = samples;
  return s;
}

EpochRecord epoch_of(std::vector<StepRecord> steps, double wall_ms) {
  EpochRecord e;
  e.epoch = 1;
  e.start_ns = 0;
  e.end_ns = static_cast<int64_t>(wall_ms * 1e6);
  e.steps = std::move(steps);
  e.complete = true;
  return e;
}

TEST(Metrics, EpochAuLeavesOutTheWindowsSteps) {
  // 4 steps: 10 ms load + 10 ms compute each, 80 ms in all.
  const EpochRecord e = epoch_of({step(10, 10), step(10, 10), step(10, 10), step(10, 10)}, 80);
  EXPECT_NEAR(epoch_metrics(e, {}, 1).au, 0.5, 1e-9);
  // The first step left out, proc time included: 30 ms of compute in 60 ms.
  EXPECT_NEAR(epoch_metrics(e, {.exclude_start = 1}, 1).au, 0.5, 1e-9);
  // DLIO's throughput: (steps - 2) / time x batch.
  EXPECT_NEAR(epoch_metrics(e, {}, 4).throughput, 2.0 / 0.080 * 4, 1e-6);
  // A slow first step (the pipeline starting) no longer counts once left out.
  const EpochRecord slow = epoch_of({step(100, 10), step(0, 10), step(0, 10)}, 130);
  EXPECT_NEAR(epoch_metrics(slow, {}, 1).au, 30.0 / 130.0, 1e-9);
  EXPECT_NEAR(epoch_metrics(slow, {.exclude_start = 1}, 1).au, 1.0, 1e-9);
  EXPECT_FALSE(epoch_metrics(epoch_of({step(1, 1)}, 2), {}, 1).measured);
}

TEST(Metrics, LoopFiguresTakeTheSlowestConsumerAndPoolTheWaits) {
  ConsumerRecord fast, slow;
  fast.epochs = {epoch_of({step(1, 10, 9), step(1, 10, 9)}, 40)};
  slow.epochs = {epoch_of({step(10, 10), step(10, 10)}, 40)};
  slow.epochs[0].end_ns = static_cast<int64_t>(50e6);
  const LoopFigures f = loop_figures({fast, slow});
  EXPECT_EQ(f.steps, 2);
  EXPECT_EQ(f.samples, 4);
  EXPECT_NEAR(f.wall_ms, 50, 1e-9);
  EXPECT_NEAR(f.au_percentage, 40.0, 1e-9);  // 20 ms of steps in 50 ms
  EXPECT_NEAR(f.wait.mean_ms, 5.5, 1e-9);
  EXPECT_NEAR(f.steady_wait_mean_ms, 5.5, 1e-9);
  EXPECT_NEAR(f.step_mean_ms, 10, 1e-9);
  EXPECT_NEAR(f.barrier_mean_ms, 4.5, 1e-9);
  EXPECT_TRUE(f.complete);
  // One epoch of several: only that one counts.
  fast.epochs.push_back(epoch_of({step(100, 1)}, 101));
  fast.epochs.back().complete = false;
  EXPECT_TRUE(loop_figures({fast}, 0).complete);
  EXPECT_FALSE(loop_figures({fast}, 1).complete);
  EXPECT_EQ(loop_figures({fast}).steps, 3);
  // The first wait of each epoch is not a steady one.
  EXPECT_NEAR(loop_figures({fast}).steady_wait_mean_ms, 1.0, 1e-9);
}

}  // namespace
}  // namespace pipeprof::harness
