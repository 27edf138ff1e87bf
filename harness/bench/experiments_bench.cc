// Every catalog experiment as a benchmark: manual time is the wall time of one repetition (all
// epochs), with counters ideal_ms, efficiency (ideal / measured) and wait_ms (mean wait per step).
#include <benchmark/benchmark.h>

#include "pipeprof/harness/runner.h"

namespace pipeprof::harness {
namespace {

void run_experiment_bench(benchmark::State& state, const Experiment& x) {
  double sum_wall = 0, sum_wait = 0;
  int64_t reps = 0;
  std::optional<double> ideal;
  for (auto _ : state) {
    const ExperimentResult r = run_experiment(x, {.repetitions = 1});
    if (r.repetitions.empty()) {
      state.SkipWithError("no repetition completed");
      return;
    }
    state.SetIterationTime(r.repetitions[0].wall_ms / 1e3);
    sum_wall += r.repetitions[0].wall_ms;
    sum_wait += r.repetitions[0].wait.mean_ms;
    ideal = r.ideal_ms;
    ++reps;
  }
  if (reps == 0) return;
  const double mean_wall = sum_wall / static_cast<double>(reps);
  if (ideal) {
    state.counters["ideal_ms"] = *ideal;
    if (*ideal > 0) state.counters["efficiency"] = *ideal / mean_wall;
  }
  state.counters["wait_ms"] = sum_wait / static_cast<double>(reps);
}

// Registered at start-up from the catalog, so a new experiment file is a new benchmark.
const bool kRegistered = [] {
  for (const Experiment& x : load_catalog()) {
    benchmark::RegisterBenchmark(("BM_Experiment/" + x.id).c_str(),
                                 [x](benchmark::State& state) { run_experiment_bench(state, x); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(x.epochs > 2 ? 3 : 5);
  }
  return true;
}();

}  // namespace
}  // namespace pipeprof::harness
