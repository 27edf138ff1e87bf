// The tuners on the shipped tuning problems (autotune/problems/*.json): per strategy, the fraction
// of the grid optimum reached (optimum cost / true cost of the point the search returns, without
// noise) against the number of trials, beside two baselines (every knob at 1; parallelism = cores
// with buffers at 2) and the online tuner running the real pipeline once.
//
//   BM_Tune/<problem>/<strategy>/trials:<n>  counters of_optimum (mean over seeds), worst, trials,
//                                            grid_trials
//   BM_TuneBaseline/<problem>/<ones|cores>   counter of_optimum
//   BM_TuneOnline/<problem>                  counters of_optimum, changes (real time)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <thread>

#include "pipeprof/autotune/offline_tuner.h"
#include "pipeprof/autotune/online_tuner.h"
#include "tuning_problems.h"

namespace pipeprof::autotune::bench {
namespace {

struct Evaluated {
  Problem problem;
  int64_t grid_size = 0;
  double optimum = 0;
};

// The grid optimum of each problem, computed once on first use.
const Evaluated& evaluated(const Problem& p) {
  static std::map<std::string, std::unique_ptr<Evaluated>> cache;
  auto& e = cache[p.name];
  if (!e) {
    e = std::make_unique<Evaluated>(Evaluated{p});
    const auto points = grid(p.knobs);
    e->grid_size = static_cast<int64_t>(points.size());
    e->optimum = std::numeric_limits<double>::infinity();
    for (const auto& a : points)
      e->optimum = std::min(e->optimum, p.cost(a));
  }
  return *e;
}

void tune_bench(benchmark::State& state, const Problem& p, Strategy strategy, int64_t budget) {
  const Evaluated& e = evaluated(p);
  double sum = 0, worst = 1;
  uint64_t seed = 0;
  for (auto _ : state) {
    ++seed;
    std::mt19937_64 rng(seed * 7919);
    const auto r = tune_offline(
        p.knobs,
        [&](const KnobAssignment& a) { return Measurement{.wall_ms = p.noisy_cost(a, rng)}; },
        {.strategy = strategy, .budget = static_cast<int>(budget), .seed = seed});
    const double fraction = e.optimum / p.cost(r.best);
    sum += fraction;
    worst = std::min(worst, fraction);
  }
  state.counters["of_optimum"] = sum / static_cast<double>(seed);
  state.counters["worst"] = worst;
  state.counters["trials"] = static_cast<double>(budget);
  state.counters["grid_trials"] = static_cast<double>(e.grid_size);
}

void baseline_bench(benchmark::State& state, const Problem& p, bool ones) {
  const Evaluated& e = evaluated(p);
  KnobAssignment a;
  for (const auto& k : p.knobs)
    a[k.path] = ones ? 1 : (k.knob == "buffer_size" ? 2 : p.cores);
  double fraction = 0;
  for (auto _ : state)
    fraction = e.optimum / p.cost(a);
  state.counters["of_optimum"] = fraction;
}

// The online tuner on the real pipeline: each epoch a fresh iterator that starts from the values
// the previous epoch ended with; the last values are scored with the problem's cost.
void online_bench(benchmark::State& state, const Problem& p) {
  const Evaluated& e = evaluated(p);
  double fraction = 0;
  size_t changes = 0;
  for (auto _ : state) {
    const pipelines::Dataset ds = p.pipeline();
    std::vector<KnobValue> picked;
    changes = 0;
    for (int64_t epoch = 0; epoch < p.epochs(); ++epoch) {
      auto it = ds.iterate();
      apply_values(it->model(), picked);
      OnlineTuner tuner(it->model(), {.cpu_budget = static_cast<double>(p.cores)});
      tuner.start();
      while (it->next()) {
        if (p.step_ms() > 0)
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(p.step_ms()));
      }
      tuner.stop();
      picked = tuner.final_values();
      changes += tuner.changes().size();
    }
    KnobAssignment a;
    std::string label;
    for (const auto& v : picked) {
      a[key_to_pointer(v.stage_key) + "/" + v.knob] = v.value;
      label += (label.empty() ? "" : " ") + v.stage + " " + v.knob + "=" + std::to_string(v.value);
    }
    fraction = e.optimum / p.cost(a);
    state.SetLabel(label);
  }
  state.counters["of_optimum"] = fraction;
  state.counters["changes"] = static_cast<double>(changes);
}

const bool kRegistered = [] {
  std::vector<Problem> problems;
  try {
    problems = load_problems(PIPEPROF_AUTOTUNE_PROBLEMS_DIR);
  } catch (const std::exception& e) {
    fprintf(stderr, "tuning benchmarks: %s\n", e.what());
    return false;
  }
  for (const Problem& p : problems) {
    int64_t size = 1;
    for (const auto& k : p.knobs)
      size *= static_cast<int64_t>(k.values.size());
    for (Strategy s : {Strategy::kHill, Strategy::kRandom, Strategy::kGrid}) {
      for (int64_t divisor : {16, 8, 4, 2, 1}) {
        const int64_t budget = std::max<int64_t>(1, size / divisor);
        const std::string name =
            "BM_Tune/" + p.name + "/" + to_string(s) + "/trials:" + std::to_string(budget);
        benchmark::RegisterBenchmark(
            name.c_str(), [p, s, budget](benchmark::State& st) { tune_bench(st, p, s, budget); })
            ->Iterations(8)
            ->Unit(benchmark::kMillisecond);
      }
    }
    for (bool ones : {true, false}) {
      benchmark::RegisterBenchmark(
          ("BM_TuneBaseline/" + p.name + (ones ? "/ones" : "/cores")).c_str(),
          [p, ones](benchmark::State& st) { baseline_bench(st, p, ones); })
          ->Iterations(1);
    }
    benchmark::RegisterBenchmark(("BM_TuneOnline/" + p.name).c_str(),
                                 [p](benchmark::State& st) { online_bench(st, p); })
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace pipeprof::autotune::bench
