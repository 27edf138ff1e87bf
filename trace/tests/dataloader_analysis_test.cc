// The watched-DataLoader analysis (LoaderAnalysis): figures and suggestions from a trace as
// pipeprof.watch writes it, built here span by span.
#include <gtest/gtest.h>

#include <csignal>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

constexpr int64_t kMsNs = 1'000'000;

struct LoaderTrace {
  Trace t;
  LoaderTrace(int workers, bool persistent = true) {
    t.metadata = {{"format", "pipeprof"},
                  {"loader", "torch.utils.data.DataLoader"},
                  {"num_workers", std::to_string(workers)},
                  {"prefetch_factor", "2"},
                  {"pin_memory", "false"},
                  {"persistent_workers", persistent ? "true" : "false"},
                  {"batch_size", "8"},
                  {"cpus", "16"}};
    t.processes.reserve(16);
    t.lanes[t.thread_lane(1, 1)].name = "train loop";
  }
  void span(int64_t pid, int64_t tid, std::string_view name, std::string_view cat, int64_t start,
            int64_t end) {
    Span s;
    s.start_ns = start;
    s.dur_ns = end - start;
    s.name = t.strings.intern(name);
    s.category = t.strings.intern(cat);
    t.lanes[t.thread_lane(pid, tid)].spans.push_back(s);
  }
  // `batches` of get_next (wait_ms) then step (step_ms), from time 0.
  void loop(int batches, int64_t wait_ms, int64_t step_ms) {
    int64_t at = 0;
    for (int i = 0; i < batches; ++i) {
      span(1, 1, "get_next", "wait", at, at + wait_ms * kMsNs);
      at += wait_ms * kMsNs;
      span(1, 1, "step", "step", at, at + step_ms * kMsNs);
      at += step_ms * kMsNs;
    }
  }
  // A worker process busy `busy_pct` of [0, end): fetches of 8 __getitem__ and a collate.
  void worker(int id, int64_t pid, int64_t start, int64_t end, double busy_pct) {
    const uint32_t p = t.process(pid);
    t.processes[p].name = "DataLoader worker " + std::to_string(id);
    Lane& lane = t.lanes[t.thread_lane(pid, pid)];
    lane.name = "worker " + std::to_string(id);
    Instant i;
    i.ts_ns = start;
    i.name = t.strings.intern("worker started");
    i.category = t.strings.intern("pipeline");
    t.lanes[t.thread_lane(pid, pid)].instants.push_back(i);
    const int64_t period = 10 * kMsNs;
    const auto busy = static_cast<int64_t>(static_cast<double>(period) * busy_pct / 100.0);
    for (int64_t at = start; at + period <= end; at += period) {
      span(pid, pid, "fetch", "pipeline", at, at + busy);
      const int64_t item = busy * 9 / 10 / 8;
      for (int k = 0; k < 8; ++k)
        span(pid, pid, "__getitem__", "pipeline", at + k * item, at + (k + 1) * item);
      span(pid, pid, "collate_fn", "pipeline", at + 8 * item, at + busy);
    }
  }
  LoaderAnalysis analyze() {
    t.finalize();
    return trace::analyze(t).loader;
  }
};

bool has_knob(const LoaderAnalysis& a, std::string_view knob) {
  for (const Suggestion& s : a.suggestions)
    if (s.knob == knob) return true;
  return false;
}

TEST(DataLoaderAnalysis, AbsentWithoutTheLoaderMetadata) {
  Trace t;
  t.lanes[t.thread_lane(1, 1)].name = "train loop";
  t.finalize();
  EXPECT_FALSE(analyze(t).loader.present);
}

TEST(DataLoaderAnalysis, SaturatedWorkersAskForMoreWorkers) {
  LoaderTrace lt(2);
  lt.loop(100, 6, 4);  // 60 % waiting
  lt.worker(0, 100, 0, 1000 * kMsNs, 95);
  lt.worker(1, 101, 0, 1000 * kMsNs, 95);
  const LoaderAnalysis a = lt.analyze();
  ASSERT_TRUE(a.present);
  EXPECT_EQ(a.num_workers, 2);
  EXPECT_EQ(a.batches, 100);
  EXPECT_NEAR(a.wait_p50_ms, 6.0, 1e-9);
  EXPECT_EQ(a.ready_pct, 0.0);
  ASSERT_EQ(a.workers.size(), 2u);
  EXPECT_NEAR(a.workers_busy_pct, 95.0, 1.0);
  EXPECT_EQ(a.workers[0].items, 800);
  EXPECT_EQ(a.workers[0].fetches, 100);
  EXPECT_NEAR(a.collate_share_pct, 10.0, 1.0);
  EXPECT_EQ(a.restarts, 0);
  ASSERT_TRUE(has_knob(a, "num_workers"));
  // 2 workers x 95 % busy x (6 + 4) / 4 = 4.75: about 5.
  EXPECT_NE(a.suggestions.front().text.find("about 5"), std::string::npos)
      << a.suggestions.front().text;
}

TEST(DataLoaderAnalysis, IdleWorkersAndSteadyWaitsPointBetweenWorkersAndLoop) {
  LoaderTrace lt(4);
  lt.loop(100, 5, 5);
  for (int w = 0; w < 4; ++w)
    lt.worker(w, 100 + w, 0, 1000 * kMsNs, 20);
  const LoaderAnalysis a = lt.analyze();
  EXPECT_NEAR(a.workers_busy_pct, 20.0, 1.0);
  EXPECT_FALSE(has_knob(a, "num_workers"));
  EXPECT_TRUE(has_knob(a, "batch transfer"));
}

TEST(DataLoaderAnalysis, NotInputBoundWithIdleWorkersSaysFewerWouldDo) {
  LoaderTrace lt(8);
  lt.loop(100, 0, 10);
  for (int w = 0; w < 8; ++w)
    lt.worker(w, 100 + w, 0, 1000 * kMsNs, 15);
  const LoaderAnalysis a = lt.analyze();
  EXPECT_EQ(a.ready_pct, 100.0);
  ASSERT_TRUE(has_knob(a, "num_workers"));
  EXPECT_NE(a.suggestions.back().text.find("2 would keep up"), std::string::npos)
      << a.suggestions.back().text;
}

TEST(DataLoaderAnalysis, AWorkersBusyShareIsOfTheTimeItRan) {
  // One worker whose process took the first 300 ms of a 1 s window to start, then fetched 95 % of
  // the time: it is saturated, not 66 % busy, and more workers are what the loop needs.
  LoaderTrace lt(1);
  lt.loop(100, 6, 4);
  lt.worker(0, 100, 300 * kMsNs, 1000 * kMsNs, 95);
  const LoaderAnalysis a = lt.analyze();
  ASSERT_EQ(a.workers.size(), 1u);
  EXPECT_EQ(a.workers[0].running_ns, 700 * kMsNs);
  EXPECT_NEAR(a.workers[0].busy_pct, 95.0, 0.5);
  EXPECT_NEAR(a.workers_busy_pct, 95.0, 0.5);
  EXPECT_TRUE(has_knob(a, "num_workers"));
  // A second worker of the settings that left no spans counts as idle for the whole window.
  LoaderTrace two(2);
  two.loop(100, 6, 4);
  two.worker(0, 100, 300 * kMsNs, 1000 * kMsNs, 95);
  EXPECT_NEAR(two.analyze().workers_busy_pct, 95.0 * 700 / 1700, 0.5);
}

TEST(DataLoaderAnalysis, WorkersStartedEveryEpochAreRestarts) {
  LoaderTrace lt(2, /*persistent=*/false);
  lt.loop(100, 1, 9);
  for (int epoch = 0; epoch < 3; ++epoch)
    for (int w = 0; w < 2; ++w)
      lt.worker(w, 100 + 10 * epoch + w, epoch * 300 * kMsNs, epoch * 300 * kMsNs + 200 * kMsNs, 50);
  const LoaderAnalysis a = lt.analyze();
  EXPECT_EQ(a.worker_starts, 6);
  EXPECT_EQ(a.restarts, 4);
  ASSERT_EQ(a.workers.size(), 2u);
  EXPECT_EQ(a.workers[1].pids, (std::vector<int64_t>{101, 111, 121}));
  // Each process ran from its start to the next one's, the last to the window's end (1 s).
  EXPECT_EQ(a.workers[1].running_ns, 1000 * kMsNs);
  // With the epochs in the trace, a process lasts no longer than its epoch: the 50 ms between an
  // epoch's end and the next workers' start are not a worker's idle time.
  LoaderTrace epochs(2, /*persistent=*/false);
  epochs.loop(100, 1, 9);
  for (int epoch = 0; epoch < 3; ++epoch) {
    const int64_t start = epoch * 300 * kMsNs;
    epochs.span(1, 1, "epoch", "step", start, epoch < 2 ? start + 250 * kMsNs : 1000 * kMsNs);
    for (int w = 0; w < 2; ++w)
      epochs.worker(w, 100 + 10 * epoch + w, start, start + 200 * kMsNs, 50);
  }
  EXPECT_EQ(epochs.analyze().workers[1].running_ns, (250 + 250 + 400) * kMsNs);
  EXPECT_NEAR(a.mean_start_ms, 5.0, 0.01);  // the first fetch ends half a period after the start
  EXPECT_TRUE(has_knob(a, "persistent_workers"));
}

TEST(DataLoaderAnalysis, EachEpochsFirstWaitIsTheStartUpNotTheSteadyState) {
  LoaderTrace lt(4);
  // Two epochs of 20 batches: a 200 ms first wait (the workers starting), then 0.1 ms waits.
  int64_t at = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const int64_t start = at;
    for (int i = 0; i < 20; ++i) {
      const int64_t wait = i == 0 ? 200 * kMsNs : kMsNs / 10;
      lt.span(1, 1, "get_next", "wait", at, at + wait);
      at += wait;
      lt.span(1, 1, "step", "step", at, at + 10 * kMsNs);
      at += 10 * kMsNs;
    }
    lt.span(1, 1, "epoch", "step", start, at);
  }
  const LoaderAnalysis a = lt.analyze();
  EXPECT_EQ(a.epochs, 2);
  EXPECT_NEAR(a.first_wait_ms, 400.0, 1e-6);
  EXPECT_LT(a.steady_input_bound_pct, 1.1);
  EXPECT_EQ(a.ready_pct, 100.0);  // the start-up waits are not in it
  EXPECT_NEAR(a.wait_p99_ms, 0.1, 1e-9);
  ASSERT_EQ(a.suggestions.size(), 1u);
  EXPECT_EQ(a.suggestions[0].knob, "start-up");
  EXPECT_NE(a.suggestions[0].text.find("400.0 ms"), std::string::npos) << a.suggestions[0].text;
}

TEST(DataLoaderAnalysis, ADeadWorkerIsNamedWithItsSignal) {
  LoaderTrace lt(2);
  lt.loop(10, 1, 9);
  lt.worker(0, 100, 0, 100 * kMsNs, 50);
  lt.worker(1, 101, 0, 50 * kMsNs, 50);
  lt.t.metadata["dead_workers"] = R"([{"worker": 1, "pid": 101, "exitcode": -9}])";
  const LoaderAnalysis a = lt.analyze();
  ASSERT_EQ(a.workers.size(), 2u);
  EXPECT_TRUE(a.workers[1].died);
  EXPECT_EQ(a.workers[1].exitcode, -SIGKILL);
  ASSERT_TRUE(has_knob(a, "worker"));
  const std::string& text = a.suggestions.front().text;
  EXPECT_NE(text.find("worker 1 (pid 101) killed by signal 9 (SIGKILL)"), std::string::npos) << text;
}

TEST(DataLoaderAnalysis, SurvivesTheWriterAndReader) {
  LoaderTrace lt(1);
  lt.loop(20, 3, 2);
  lt.worker(0, 100, 0, 100 * kMsNs, 90);
  lt.t.metadata["dead_workers"] = "not json";
  lt.t.finalize();
  const Analysis direct = analyze(lt.t);
  const std::string json = [&] {
    std::ostringstream out;
    write_chrome_json(lt.t, out);
    return out.str();
  }();
  const Analysis read = analyze(parse_chrome_json(json));
  EXPECT_EQ(to_json(read).at("loader"), to_json(direct).at("loader"));
  EXPECT_EQ(read.loader.notes.size(), 1u);  // the malformed dead_workers, said and ignored
  EXPECT_NE(format_text(read).find("DataLoader: num_workers 1"), std::string::npos);
}

}  // namespace
}  // namespace pipeprof::trace
