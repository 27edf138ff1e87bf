#include "pipeprof/trace/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

constexpr int64_t kMs = 1'000'000;

// Builds small pipeprof-style traces in milliseconds.
class Maker {
 public:
  Maker() { t.metadata["format"] = "pipeprof"; }
  uint32_t lane(const std::string& name) {
    const uint32_t l = t.thread_lane(1, next_tid_++);
    t.lanes[l].name = name;
    return l;
  }
  void span(uint32_t lane, double start_ms, double dur_ms, std::string_view name,
            std::string_view cat) {
    Span s;
    s.start_ns = std::llround(start_ms * kMs);
    s.dur_ns = std::llround(dur_ms * kMs);
    s.name = t.strings.intern(name);
    s.category = t.strings.intern(cat);
    t.lanes[lane].spans.push_back(s);
  }
  // A train loop of `n` iterations: get_next for wait_ms, then step for step_ms.
  uint32_t train_loop(int n, double wait_ms, double step_ms) {
    const uint32_t l = lane("train loop");
    span(l, 0, n * (wait_ms + step_ms), "epoch", "step");
    for (int i = 0; i < n; ++i) {
      const double at = i * (wait_ms + step_ms);
      span(l, at, wait_ms, "get_next", "wait");
      span(l, at + wait_ms, step_ms, "step", "step");
    }
    return l;
  }
  void counter(const std::string& name, double value) {
    Counter c;
    c.process = t.process(1);
    c.name = name;
    c.points = {{0, value}};
    t.counters.push_back(c);
  }
  Analysis analyze() {
    t.finalize();
    return trace::analyze(t);
  }
  Trace t;

 private:
  int64_t next_tid_ = 1;
};

const StageUsage* stage(const Analysis& a, std::string_view name) {
  for (const StageUsage& s : a.stages)
    if (s.stage == name) return &s;
  return nullptr;
}

TEST(StageOf, TakesTheTextBeforeThePhase) {
  EXPECT_EQ(stage_of("map 'mapped_function'"), "map 'mapped_function'");
  EXPECT_EQ(stage_of("artificial: read"), "artificial");
  EXPECT_EQ(stage_of("prefetch: fill"), "prefetch");
  EXPECT_EQ(stage_of("map 'a: b': wait"), "map 'a: b'");
  EXPECT_EQ(stage_of("interleave"), "interleave");
  EXPECT_EQ(stage_of(""), "");
}

TEST(Analysis, InputBoundThresholdsFollowTensorBoard) {
  struct Case {
    double wait, step;
    const char* verdict;
  };
  for (const Case& c : {Case{4, 96, "not input-bound"}, Case{5, 95, "moderately input-bound"},
                        Case{19.5, 80.5, "moderately input-bound"},
                        Case{20, 80, "highly input-bound"}, Case{0, 10, "not input-bound"}}) {
    Maker m;
    m.train_loop(10, c.wait, c.step);
    const Analysis a = m.analyze();
    ASSERT_TRUE(a.steps.present);
    EXPECT_EQ(a.steps.steps, 10);
    EXPECT_EQ(a.steps.waits, 10);
    EXPECT_NEAR(a.steps.input_bound_pct, 100 * c.wait / (c.wait + c.step), 1e-9);
    EXPECT_EQ(a.steps.verdict, c.verdict) << c.wait;
    EXPECT_NEAR(a.steps.mean_step_ms, c.step, 1e-9);
    EXPECT_NEAR(a.steps.mean_wait_ms, c.wait, 1e-9);
  }
  Maker m;
  m.train_loop(5, 4, 96);
  const Analysis a = m.analyze();
  EXPECT_EQ(a.suggestion, "not input-bound: the step takes 96% of the time");
  EXPECT_EQ(a.bottleneck, "");
}

TEST(Analysis, SynchronousReadsAskForPrefetch) {
  // naive: the reads run inside get_next on the train loop; nothing overlaps the steps.
  Maker m;
  const uint32_t loop = m.train_loop(4, 15, 10);
  for (int i = 0; i < 4; ++i)
    m.span(loop, i * 25.0 + 0.5, 14, "artificial: read", "pipeline");
  const Analysis a = m.analyze();
  EXPECT_EQ(a.steps.verdict, "highly input-bound");
  EXPECT_EQ(a.bottleneck, "artificial");
  EXPECT_EQ(a.suggestion, "add prefetch: reads and steps never overlap");
  const StageUsage* s = stage(a, "artificial");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->workers, 1);
  EXPECT_EQ(s->spans, 4);
  EXPECT_NEAR(s->busy_pct, 56.0, 1e-6);  // 4 x 14 ms of 100 ms
}

TEST(Analysis, SaturatedParallelMapAsksForMoreParallelism) {
  Maker m;
  m.train_loop(10, 10, 10);  // 200 ms window, 50% input-bound
  const uint32_t prefetch = m.lane("prefetch #0");
  for (int w = 0; w < 2; ++w) {
    const uint32_t l = m.lane("map 'mapped_function' #" + std::to_string(w));
    for (int i = 0; i < 20; ++i)
      m.span(l, i * 10.0 + 0.15 * w, 9.7, "map 'mapped_function'", "pipeline");
  }
  // The prefetch thread mostly waits for the map inside its fills.
  for (int i = 0; i < 20; ++i) {
    m.span(prefetch, i * 10.0, 10, "prefetch: fill", "pipeline");
    m.span(prefetch, i * 10.0 + 0.5, 9.5, "map 'mapped_function': wait", "wait");
  }
  m.counter("map 'mapped_function': parallelism", 2);
  const Analysis a = m.analyze();
  ASSERT_GE(a.stages.size(), 2u);
  EXPECT_EQ(a.stages[0].stage, "map 'mapped_function'");
  EXPECT_EQ(a.stages[0].workers, 2);
  EXPECT_EQ(a.stages[0].lanes, 2);
  EXPECT_TRUE(a.stages[0].has_parallelism);
  EXPECT_NEAR(a.stages[0].busy_pct, 97.0, 1e-6);
  const StageUsage* p = stage(a, "prefetch");
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(p->busy_pct, 5.0, 1e-6);  // 0.5 of every 10 ms: the rest is the nested wait
  EXPECT_EQ(a.bottleneck, "map 'mapped_function'");
  EXPECT_EQ(a.suggestion,
            "raise map 'mapped_function' parallelism: its 2 workers are busy 97% of the time");
}

TEST(Analysis, ParallelismCounterCountsIdleWorkers) {
  Maker m;
  m.train_loop(10, 10, 10);
  const uint32_t l = m.lane("map 'f' #0");
  m.span(l, 0, 200, "map 'f'", "pipeline");
  m.span(m.lane("prefetch #0"), 0, 1, "prefetch: fill", "pipeline");
  m.counter("map 'f': parallelism", 4);
  const Analysis a = m.analyze();
  const StageUsage* s = stage(a, "map 'f'");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->lanes, 1);
  EXPECT_EQ(s->workers, 4);
  EXPECT_NEAR(s->busy_pct, 25.0, 1e-6);
  EXPECT_NE(a.suggestion.find("no stage is saturated"), std::string::npos) << a.suggestion;
}

TEST(Analysis, SequentialStageBehindPrefetchAsksForParallelism) {
  Maker m;
  m.train_loop(10, 10, 10);
  const uint32_t p = m.lane("prefetch #0");
  for (int i = 0; i < 20; ++i) {
    m.span(p, i * 10.0, 10, "prefetch: fill", "pipeline");
    m.span(p, i * 10.0 + 0.25, 9.5, "artificial: read", "pipeline");
  }
  const Analysis a = m.analyze();
  EXPECT_EQ(a.bottleneck, "artificial");
  EXPECT_NEAR(stage(a, "artificial")->busy_pct, 95.0, 1e-6);
  EXPECT_NEAR(stage(a, "prefetch")->busy_pct, 5.0, 1e-6);
  EXPECT_EQ(a.suggestion,
            "parallelize artificial: its one thread is busy 95% of the time (interleave with "
            "num_parallel_calls, or prefetch)");
}

TEST(Analysis, WorkersAreCallsRunningAtOnceNotThreadsSeen) {
  // Two epochs, each with its own prefetch thread; a sequential read that hops between the two
  // threads of a parallel map. Neither stage ever runs two calls at once.
  Maker m;
  m.train_loop(10, 10, 10);  // [0, 200) ms
  const uint32_t epoch1 = m.lane("prefetch #0");
  const uint32_t epoch2 = m.lane("prefetch #0");
  for (int i = 0; i < 10; ++i) {
    m.span(i < 5 ? epoch1 : epoch2, i * 20.0, 18, "artificial: read", "pipeline");
  }
  const uint32_t w0 = m.lane("map 'f' #0");
  const uint32_t w1 = m.lane("map 'f' #1");
  for (int i = 0; i < 10; ++i) {
    m.span(i % 2 == 0 ? w0 : w1, i * 20.0, 15, "map 'f'", "pipeline");
    m.span(i % 2 == 0 ? w0 : w1, i * 20.0, 1, "range", "pipeline");  // nested, sequential
  }
  const Analysis a = m.analyze();
  const StageUsage* read = stage(a, "artificial");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->lanes, 2);
  EXPECT_EQ(read->peak_concurrency, 1);
  EXPECT_EQ(read->workers, 1);
  EXPECT_NEAR(read->busy_pct, 90.0, 1e-6);
  const StageUsage* range = stage(a, "range");
  EXPECT_EQ(range->lanes, 2);
  EXPECT_EQ(range->workers, 1);
  EXPECT_EQ(stage(a, "map 'f'")->workers, 1);
  EXPECT_NEAR(stage(a, "map 'f'")->busy_pct, 70.0, 1e-6);
  EXPECT_EQ(a.bottleneck, "artificial");
}

TEST(Analysis, WorkOutsideTheTrainLoopWindowIsNotCounted) {
  Maker m;
  m.train_loop(1, 50, 50);  // window [0, 100) ms
  const uint32_t l = m.lane("interleave #0");
  m.span(l, -100, 150, "interleave", "pipeline");  // half of it before the window
  m.span(l, 90, 100, "interleave: open", "pipeline");
  const Analysis a = m.analyze();
  EXPECT_EQ(a.window_start_ns, 0);
  EXPECT_EQ(a.window_end_ns, 100 * kMs);
  EXPECT_NEAR(stage(a, "interleave")->busy_pct, 60.0, 1e-6);  // [0, 50) and [90, 100)
}

TEST(Analysis, GpuBusyIdleAndTopKernels) {
  Trace t;
  const uint32_t cpu = t.thread_lane(1, 1);
  auto add = [&](uint32_t lane, int64_t start, int64_t dur, std::string_view name,
                 std::string_view cat) {
    Span s;
    s.start_ns = start;
    s.dur_ns = dur;
    s.name = t.strings.intern(name);
    s.category = t.strings.intern(cat);
    t.lanes[lane].spans.push_back(s);
  };
  add(cpu, 0, 100, "train", "cpu_op");  // the trace spans [0, 100)
  const uint32_t s7 = t.gpu_lane(1, 0, 7);
  const uint32_t s13 = t.gpu_lane(1, 0, 13);
  const uint32_t d1 = t.gpu_lane(1, 1, 7);
  add(s7, 0, 10, "gemm", "kernel");
  add(s7, 20, 10, "gemm", "kernel");
  add(s7, 0, 100, "forward", "gpu_user_annotation");  // not activity
  add(s13, 5, 10, "relu", "kernel");
  add(s13, 50, 4, "Memcpy HtoD", "gpu_memcpy");
  add(s13, 60, 1, "Memset (Device)", "gpu");
  add(d1, 90, 10, "gemm", "gpu");
  t.finalize();
  const Analysis a = analyze(t);
  ASSERT_TRUE(a.gpu.present);
  EXPECT_EQ(a.gpu.window_ns, 100);
  ASSERT_EQ(a.gpu.streams.size(), 3u);
  EXPECT_EQ(a.gpu.streams[0].stream, 7);
  EXPECT_EQ(a.gpu.streams[0].device, 0);
  EXPECT_EQ(a.gpu.streams[0].spans, 2);
  EXPECT_NEAR(a.gpu.streams[0].busy_pct, 20, 1e-9);
  EXPECT_NEAR(a.gpu.streams[0].idle_pct, 80, 1e-9);
  EXPECT_NEAR(a.gpu.streams[1].busy_pct, 15, 1e-9);
  ASSERT_EQ(a.gpu.devices.size(), 2u);
  EXPECT_EQ(a.gpu.devices[0].streams, 2);
  EXPECT_EQ(a.gpu.devices[0].busy_ns, 30);  // [0, 15) + [20, 30) + [50, 54) + [60, 61)
  EXPECT_NEAR(a.gpu.devices[0].idle_pct, 70, 1e-9);
  EXPECT_EQ(a.gpu.devices[0].kernel_ns, 30);
  EXPECT_EQ(a.gpu.devices[0].memcpy_ns, 4);
  EXPECT_EQ(a.gpu.devices[0].memset_ns, 1);
  EXPECT_NEAR(a.gpu.devices[1].busy_pct, 10, 1e-9);
  ASSERT_EQ(a.gpu.top_kernels.size(), 2u);
  EXPECT_EQ(a.gpu.top_kernels[0].name, "gemm");
  EXPECT_EQ(a.gpu.top_kernels[0].count, 3);
  EXPECT_EQ(a.gpu.top_kernels[0].total_ns, 30);
  EXPECT_NEAR(a.gpu.top_kernels[0].mean_ns, 10, 1e-9);
  EXPECT_NEAR(a.gpu.top_kernels[0].share_pct, 75, 1e-9);
  EXPECT_EQ(a.gpu.top_kernels[1].name, "relu");
  EXPECT_FALSE(a.steps.present);
  EXPECT_EQ(a.suggestion, "");
}

TEST(Analysis, EmptyAndOddTracesDoNotCrash) {
  const Analysis empty = analyze(Trace{});
  EXPECT_FALSE(empty.steps.present);
  EXPECT_FALSE(empty.gpu.present);
  EXPECT_FALSE(empty.notes.empty());
  EXPECT_FALSE(format_text(empty).empty());
  EXPECT_TRUE(to_json(empty).contains("notes"));

  Maker m;
  const uint32_t loop = m.lane("train loop");
  m.span(loop, 5, 0, "step", "step");  // zero-length steps and waits only
  m.span(loop, 5, 0, "get_next", "wait");
  const uint32_t odd = m.lane("");
  m.span(odd, -10, 30, ": ", "pipeline");
  m.span(odd, 0, 40, "x", "pipeline");  // overlaps the first without nesting
  m.span(odd, 20, 5, "y: z", "pipeline");
  Span nameless;
  nameless.start_ns = 1;
  nameless.dur_ns = 1;
  m.t.lanes[odd].spans.push_back(nameless);
  m.counter("x: parallelism", std::nan(""));
  const uint32_t gpu = m.t.gpu_lane(1, 0, 0);
  m.t.lanes[gpu].spans.push_back(nameless);
  const Analysis a = m.analyze();
  EXPECT_TRUE(a.steps.present);
  EXPECT_EQ(a.steps.input_bound_pct, 0);
  for (const StageUsage& s : a.stages) {
    EXPECT_GE(s.busy_pct, 0);
    EXPECT_LE(s.busy_pct, 100);
  }
  EXPECT_FALSE(format_text(a).empty());
  // The JSON holds the same figures and reads back (a NaN is written as null, not as invalid JSON).
  const nlohmann::json j = nlohmann::json::parse(to_json(a).dump());
  EXPECT_EQ(j.at("stages").size(), a.stages.size());
  EXPECT_EQ(j.at("steps").at("input_bound_pct"), 0);
}

TEST(Analysis, ReportsCarryTheFigures) {
  Maker m;
  m.t.metadata["experiment"] = "naive";
  const uint32_t loop = m.train_loop(4, 15, 10);
  for (int i = 0; i < 4; ++i)
    m.span(loop, i * 25.0 + 0.5, 14, "artificial: read", "pipeline");
  const Analysis a = m.analyze();
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["format"], "pipeprof");
  EXPECT_EQ(j["experiment"], "naive");
  EXPECT_EQ(j["steps"]["steps"], 4);
  EXPECT_NEAR(j["steps"]["input_bound_pct"].get<double>(), 60.0, 1e-9);
  EXPECT_EQ(j["steps"]["verdict"], "highly input-bound");
  EXPECT_EQ(j["bottleneck"], "artificial");
  EXPECT_EQ(j["stages"][0]["stage"], "artificial");
  EXPECT_EQ(j["suggestion"], a.suggestion);
  EXPECT_TRUE(j["gpu"].is_null());
  const std::string text = format_text(a);
  EXPECT_NE(text.find("input-bound 60.0%: highly input-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("bottleneck: artificial"), std::string::npos) << text;
  EXPECT_NE(text.find("suggestion: add prefetch"), std::string::npos) << text;
}

TEST(Analysis, KinetoTraceThroughTheReader) {
  const Trace t = parse_chrome_json(R"js({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 10, "dur": 30,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 8, "ts": 20, "dur": 40,
     "args": {"device": 0, "stream": 8}}]})js");
  const Analysis a = analyze(t);
  EXPECT_EQ(a.format, "kineto");
  ASSERT_EQ(a.gpu.devices.size(), 1u);
  EXPECT_NEAR(a.gpu.devices[0].busy_pct, 50, 1e-9);  // [10, 60) of [0, 100)
  EXPECT_NEAR(a.gpu.devices[0].idle_pct, 50, 1e-9);
  EXPECT_EQ(a.gpu.top_kernels.front().name, "k2");
  EXPECT_NE(format_text(a).find("device 0: busy 50.0%, idle 50.0%"), std::string::npos)
      << format_text(a);
}

}  // namespace
}  // namespace pipeprof::trace
