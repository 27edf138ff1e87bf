// Cost of a span: off (one relaxed load) and on (two tick reads and a buffer append). BM_SpanOn
// measures, in the same run, the floor a span cannot go below (two counter reads, BM_TickPair) and
// reports its own cost as a ratio of it (`x_floor`; the target is at most 1.3).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::trace {
namespace {

// CPU nanoseconds per pair of ticks() reads: the best of a few rounds. The span loop is timed the
// same way (this thread's CPU time, which a busy machine's preemptions do not inflate).
double tick_pair_floor_ns() {
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    constexpr int kPairs = 200'000;
    const int64_t t0 = thread_cpu_ns();
    for (int i = 0; i < kPairs; ++i) {
      int64_t a = ticks();
      benchmark::DoNotOptimize(a);
      int64_t b = ticks();
      benchmark::DoNotOptimize(b);
    }
    best = std::min(best, static_cast<double>(thread_cpu_ns() - t0) / kPairs);
  }
  return best;
}

void BM_TickPair(benchmark::State& state) {
  for (auto _ : state) {
    int64_t a = ticks();
    benchmark::DoNotOptimize(a);
    int64_t b = ticks();
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_TickPair);

void BM_SpanOff(benchmark::State& state) {
  Recorder& rec = Recorder::global();
  if (rec.enabled()) rec.stop();
  const NameId name = rec.intern("bench span");
  for (auto _ : state) {
    ScopedSpan s(name, category::pipeline());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_SpanOff);

void BM_SpanOn(benchmark::State& state) {
  Recorder& rec = Recorder::global();
  const NameId name = rec.intern("bench span");
  const double floor_ns = tick_pair_floor_ns();
  rec.start();
  int64_t in_recording = 0;
  int64_t paused_ns = 0;
  const int64_t t0 = thread_cpu_ns();
  for (auto _ : state) {
    ScopedSpan s(name, category::pipeline());
    benchmark::ClobberMemory();
    // A thread buffer holds 4M events: start a new recording before it fills, outside the timing.
    if (++in_recording == 2'000'000) {
      state.PauseTiming();
      const int64_t p0 = thread_cpu_ns();
      rec.start();
      in_recording = 0;
      paused_ns += thread_cpu_ns() - p0;
      state.ResumeTiming();
    }
  }
  const double per_span =
      static_cast<double>(thread_cpu_ns() - t0 - paused_ns) / static_cast<double>(state.iterations());
  state.counters["floor_ns"] = floor_ns;
  state.counters["x_floor"] = per_span / floor_ns;
  state.counters["dropped"] = static_cast<double>(rec.dropped());
  rec.stop();
}
BENCHMARK(BM_SpanOn);

void BM_Counter(benchmark::State& state) {
  Recorder& rec = Recorder::global();
  const NameId name = rec.intern("bench counter");
  rec.start();
  int64_t in_recording = 0;
  double v = 0;
  for (auto _ : state) {
    rec.counter(name, v += 1);
    if (++in_recording == 2'000'000) {
      state.PauseTiming();
      rec.start();
      in_recording = 0;
      state.ResumeTiming();
    }
  }
  rec.stop();
}
BENCHMARK(BM_Counter);

}  // namespace
}  // namespace pipeprof::trace
