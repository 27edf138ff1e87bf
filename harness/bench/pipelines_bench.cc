// Framework overhead of the pipelines library: the cost per element of sequential operations
// (range, map, batch) and of a hand-off between threads (prefetch, parallel map).
// Targets: at most 100 ns per element per sequential operation, at most 2 us per element through a
// thread hand-off. The counter time_per_element is the time per input element (the range).
#include <benchmark/benchmark.h>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"

namespace pipeprof::pipelines {
namespace {

constexpr int64_t kElements = 100'000;

// Pulls one epoch; returns the number of elements.
int64_t drain(const Dataset& ds) {
  auto it = ds.iterate();
  int64_t n = 0;
  while (auto e = it->next()) {
    benchmark::DoNotOptimize(e->data());
    ++n;
  }
  return n;
}

void run(benchmark::State& state, const Dataset& ds, int64_t elements_out) {
  for (auto _ : state) {
    const int64_t n = drain(ds);
    if (n != elements_out) state.SkipWithError("unexpected element count");
  }
  // Per input element (kElements), the unit the targets are stated in.
  state.counters["time_per_element"] = benchmark::Counter(
      static_cast<double>(kElements),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(state.iterations() * kElements);
}

void BM_Sequential_Range(benchmark::State& state) {
  run(state, range(kElements), kElements);
}
BENCHMARK(BM_Sequential_Range)->Unit(benchmark::kMillisecond);

void BM_Sequential_RangeMap(benchmark::State& state) {
  run(state, range(kElements).map(make_function("increment")), kElements);
}
BENCHMARK(BM_Sequential_RangeMap)->Unit(benchmark::kMillisecond);

void BM_Sequential_RangeMapBatch(benchmark::State& state) {
  run(state, range(kElements).map(make_function("increment")).batch(256), (kElements + 255) / 256);
}
BENCHMARK(BM_Sequential_RangeMapBatch)->Unit(benchmark::kMillisecond);

void BM_Sequential_RangeBatchMap(benchmark::State& state) {
  run(state, range(kElements).batch(256).map(make_function("increment")), (kElements + 255) / 256);
}
BENCHMARK(BM_Sequential_RangeBatchMap)->Unit(benchmark::kMillisecond);

void BM_Handoff_Prefetch(benchmark::State& state) {
  run(state, range(kElements).prefetch(state.range(0)), kElements);
}
BENCHMARK(BM_Handoff_Prefetch)
    ->Arg(1)
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Handoff_ParallelMap(benchmark::State& state) {
  run(state, range(kElements).map(make_function("identity"), {.parallelism = state.range(0)}),
      kElements);
}
BENCHMARK(BM_Handoff_ParallelMap)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace pipeprof::pipelines
