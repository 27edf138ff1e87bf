// Cost of a span: off (one relaxed load) and on (two tick reads and a buffer append).
#include <benchmark/benchmark.h>

#include "pipeprof/trace/recorder.h"

namespace pipeprof::trace {
namespace {

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
  rec.start();
  int64_t in_recording = 0;
  for (auto _ : state) {
    ScopedSpan s(name, category::pipeline());
    benchmark::ClobberMemory();
    // A thread buffer holds 4M events: start a new recording before it fills, outside the timing.
    if (++in_recording == 2'000'000) {
      state.PauseTiming();
      rec.start();
      in_recording = 0;
      state.ResumeTiming();
    }
  }
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
