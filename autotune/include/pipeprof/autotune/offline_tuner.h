// Offline tuning: a search over a spec's knobs (knob_space.h) that measures each candidate with a
// trial function, so that autotune does not depend on how a trial is run (the harness runs the
// pipeline; tests and benchmarks use the simulator or a synthetic cost model).
//
//   auto knobs = discover_knobs(spec);
//   OfflineResult r = tune_offline(knobs, [&](const KnobAssignment& a) {
//     return measure(apply_assignment(spec, knobs, a));
//   }, {.strategy = Strategy::kHill, .budget = 40});
//   save(apply_assignment(spec, knobs, r.best));
//
// Strategies (the objective is minimized: the wall time, or the consumer's mean wait):
// - grid: every assignment in order (the first knob varies slowest), one measurement each, until
//   the budget or the grid ends. The best single measurement wins.
// - random: uniformly random assignments, each at most once, one measurement each, until the
//   budget or the space ends. The best single measurement wins.
// - hill: start at the knobs' initial values. Rule: measure the current point `repeats` times;
//   try its neighbours (one knob one value up or down; the last winning direction first, the
//   others in random order); a neighbour is first measured once and dropped if that measurement
//   is worse than the current mean by `z` standard deviations of the current point's
//   measurements, else measured up to `repeats` times; it replaces the current
//   point only when its mean is lower by more than `z` standard errors of the difference (and
//   by at least `min_improvement` of the current mean), so noise alone does not move the search.
//   A neighbour whose mean is lower by more than `min_improvement` but not beyond the noise
//   is measured again, and the current point
//   with it, up to `max_repeats` times each, until it wins or falls behind.
//   When no neighbour wins, the points two values away along each knob are tried the same way,
//   the direction whose neighbour measured best first (a plateau: the next value measures alike,
//   a better one lies beyond it).
//   Stopping condition: when none of those wins either, the point is a local optimum: the search restarts
//   from a random unvisited point; it ends when the budget of measurements is spent or every
//   point has been visited. The result is the point with the lowest mean among those measured
//   `repeats` times.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/autotune/knob_space.h"

namespace pipeprof::autotune {

enum class Strategy { kHill, kRandom, kGrid };
enum class Objective { kThroughput, kWait };

// Throws std::invalid_argument naming the accepted values.
Strategy parse_strategy(const std::string& name);
Objective parse_objective(const std::string& name);
std::string to_string(Strategy strategy);
std::string to_string(Objective objective);

struct Measurement {
  double wall_ms = 0;  // the run's wall time
  double wait_ms = 0;  // the consumer's mean wait per element
  bool ok = true;      // false: the trial failed (counted, never chosen)
  std::string error;
};

// The value to minimize.
double objective_value(const Measurement& m, Objective objective);

using TrialFn = std::function<Measurement(const KnobAssignment&)>;

struct Trial {
  int index = 0;  // 0-based, in the order run
  KnobAssignment knobs;
  Measurement measurement;
  double value = 0;       // objective_value of the measurement
  std::string phase;      // "grid", "random", "start", "neighbour", "confirm", "restart"
  KnobAssignment best;    // the search's best point after this trial
  double best_value = 0;  // its estimate (mean of its measurements)
};

struct OfflineOptions {
  Strategy strategy = Strategy::kHill;
  Objective objective = Objective::kThroughput;
  int budget = 50;                // measurements
  int repeats = 3;                // hill: measurements per point before a comparison
  int max_repeats = 12;           // hill: measurements per point when a comparison is close
  double z = 2.0;                 // hill: standard errors a win must exceed
  double min_improvement = 0.01;  // hill: relative margin a win must exceed
  uint64_t seed = 1;
  std::function<void(const Trial&)> on_trial;  // progress, after every measurement
};

struct OfflineResult {
  KnobAssignment best;  // complete (every knob)
  double best_value = 0;
  std::vector<Trial> trials;
  std::string stopped;  // "budget" or "space exhausted"
};

// Throws std::invalid_argument when `knobs` is empty or a knob has no values.
OfflineResult tune_offline(const std::vector<KnobSpec>& knobs, const TrialFn& trial,
                           const OfflineOptions& options);

// {"strategy", "objective", "best": [...], "best_value", "trials": [{knobs, value, ...}]}
nlohmann::json to_json(const OfflineResult& result, const std::vector<KnobSpec>& knobs,
                       const OfflineOptions& options);

}  // namespace pipeprof::autotune
