// pipeprof tune <id|spec.json> [--budget N] [--strategy hill|random|grid]
//               [--objective throughput|wait] [--step S] [--epochs N] [--repeats R] [--seed S]
//               [--max-parallelism P] [--max-producers N] [--model] [--out tuned.json]
//               [--log log.json]
//
// Offline tuning: searches the spec's "autotune" parameters (autotune/offline_tuner.h), running
// each candidate once through the harness runner with the online tuner off, and writes the spec
// with the best values (loadable by `pipeprof run`) and the log of every trial. With --model each
// candidate is the ideal-time simulator's instead (autotune/simulator.h, with the memcpy and fill
// rates measured once, at the start): no pipeline runs, so a search over producer processes and
// queue capacities costs milliseconds per trial; each point is measured once (the model has no
// noise).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "commands/commands.h"
#include "commands/outputs.h"
#include "commands/interrupt.h"
#include "pipeprof/autotune/knob_space.h"
#include "pipeprof/autotune/offline_tuner.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/results/report.h"

namespace pipeprof::harness {
namespace {

struct TuneCommandOptions {
  WatchdogOptions watchdog;
  std::string target;
  int budget = 30;
  std::string strategy = "hill";
  std::string objective = "throughput";
  std::string step;
  int64_t epochs = 0;
  int repeats = 3;
  uint64_t seed = 1;
  int64_t max_parallelism = 16;
  int64_t max_producers = 16;
  bool model = false;
  std::string out;
  std::string log;
};

void write_json(const std::string& file, const nlohmann::json& json) {
  results::write_text_file(file, json.dump(2) + "\n");  // throws naming the file
  std::cerr << "wrote " << file << "\n";
}

Outcome tune_command(const TuneCommandOptions& o) {
  InterruptGuard guard;
  autotune::OfflineOptions options;
  options.strategy = autotune::parse_strategy(o.strategy);
  options.objective = autotune::parse_objective(o.objective);
  const Experiment x = read_input([&] { return find_experiment(o.target); });
  check_output_file("--out", o.out);
  check_output_file("--log", o.log);
  const auto knobs = read_input([&] {
    return autotune::discover_knobs(
        x.spec.document, {.max_parallelism = o.max_parallelism, .max_producers = o.max_producers});
  });
  if (knobs.empty()) {
    throw InputError(o.target + ": no parameter is \"autotune\"; nothing to tune");
  }
  options.budget = o.budget;
  options.repeats = o.model ? 1 : o.repeats;
  options.seed = o.seed;

  // The model's trials: the simulator on the candidate, with the step and epochs a run would use.
  MachineRates rates;
  autotune::SimOptions sim;
  if (o.model) {
    auto step = read_input([&] { return make_step(o.step.empty() ? x.step : o.step, x.step); });
    sim = autotune::SimOptions{.step_ms = step.step->target_ms(),
                               .epochs = o.epochs > 0 ? o.epochs : x.epochs};
    const autotune::SimResult first = simulate_measured(x.spec.document, sim, rates);
    if (!first.supported) {
      throw InputError(o.target + ": the simulator has no model of this spec: " + first.reason);
    }
    std::vector<std::string> measured;
    if (rates.memcpy_gb_per_s > 0)
      measured.push_back(fmt::format("memcpy {:.1f} GB/s", rates.memcpy_gb_per_s));
    if (rates.fill_gb_per_s > 0)
      measured.push_back(fmt::format("fill {:.2f} GB/s", rates.fill_gb_per_s));
    if (rates.socket_gb_per_s > 0)
      measured.push_back(fmt::format("socket receive {:.1f} GB/s", rates.socket_gb_per_s));
    if (rates.store_first_write_gb_per_s > 0) {
      measured.push_back(
          fmt::format("first writes into a store {:.2f} GB/s", rates.store_first_write_gb_per_s));
    }
    std::cerr << (measured.empty() ? std::string("model: no machine rate needed\n")
                                   : fmt::format("model: {}, measured now\n",
                                                 fmt::join(measured, ", ")));
  }

  bool interrupted = false;
  std::string failure;
  const autotune::TrialFn trial = [&](const autotune::KnobAssignment& a) {
    autotune::Measurement m;
    if (InterruptGuard::flag().load()) {
      interrupted = true;
      return autotune::Measurement{.ok = false, .error = "interrupted"};
    }
    Experiment candidate = x;
    candidate.spec = pipelines::parse_spec(autotune::apply_assignment(x.spec.document, knobs, a),
                                           x.file.string());
    if (o.model) {
      const autotune::SimResult s = simulate_measured(candidate.spec.document, sim, rates);
      if (!s.supported) return autotune::Measurement{.ok = false, .error = s.reason};
      return autotune::Measurement{.wall_ms = s.total_ms, .wait_ms = s.wait_mean_ms};
    }
    const ExperimentResult r = run_experiment(candidate, {.step = o.step,
                                                          .epochs = o.epochs,
                                                          .repetitions = 1,
                                                          .stop = &InterruptGuard::flag(),
                                                          .autotune = false});
    if (r.repetitions.empty()) {
      interrupted = interrupted || r.interrupted;
      return autotune::Measurement{.ok = false, .error = "interrupted"};
    }
    m.wall_ms = r.median_wall_ms;
    m.wait_ms = r.median_wait.mean_ms;
    return m;
  };
  options.on_trial = [&](const autotune::Trial& t) {
    if (!t.measurement.ok) return;
    std::cerr << fmt::format(
        "  trial {}/{} [{}] {} -> {:.2f} ms{}\n", t.index + 1, o.budget, t.phase,
        autotune::to_string(t.knobs, knobs), t.value,
        t.best.empty() ? std::string() : fmt::format(" (best {:.2f} ms)", t.best_value));
  };

  std::cerr << fmt::format("{}: tuning {} knob(s) with {} search, objective {}, {} trials{}\n",
                           x.id, knobs.size(), o.strategy, o.objective, o.budget,
                           o.model ? " of the model" : "");
  const autotune::OfflineResult result = autotune::tune_offline(knobs, trial, options);
  std::cout << fmt::format("best ({} {:.2f} ms): {}\n", o.objective, result.best_value,
                           autotune::to_string(result.best, knobs));

  if (!o.out.empty()) {
    nlohmann::json tuned = autotune::apply_assignment(x.spec.document, knobs, result.best);
    tuned["description"] =
        fmt::format("{} (tuned offline{}: {} search, {} trials, {} {:.2f} ms)",
                    x.spec.document.value("description", x.id), o.model ? " on the model" : "",
                    o.strategy, result.trials.size(), o.objective, result.best_value);
    write_json(o.out, tuned);
  }
  if (!o.log.empty()) {
    nlohmann::json log = autotune::to_json(result, knobs, options);
    log["experiment"] = x.id;
    log["trials_of"] = o.model ? "model" : "runs";
    if (o.model) {
      log["measured_rates"] = to_json(rates);  // the rates the model needed
    }
    log["interrupted"] = interrupted;
    write_json(o.log, log);
  }
  return interrupted ? Outcome::kInterrupted : Outcome::kOk;
}

}  // namespace

CommandRunner add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneCommandOptions>();
  auto* cmd = app.add_subcommand(
      "tune", "Search a spec's \"autotune\" knobs offline and write the tuned spec");
  cmd->add_option("experiment", o->target, "Catalog id (see `pipeprof list`) or a spec file")
      ->required();
  cmd->add_option("--budget", o->budget, "Trials (one run each)")->check(CLI::Range(1, 100000));
  cmd->add_option("--strategy", o->strategy, "Search: hill, random or grid")
      ->check(CLI::IsMember({"hill", "random", "grid"}));
  cmd->add_option("--objective", o->objective,
                  "What to minimize: throughput (wall time) or wait (mean wait per element)")
      ->check(CLI::IsMember({"throughput", "wait"}));
  cmd->add_option(
      "--step", o->step,
      "Training step: sleep:<ms>, cpu:<ms>, cuda:<ms>, none, auto (default: the experiment's)");
  cmd->add_option("--epochs", o->epochs, "Epochs per trial (default: the experiment's)")
      ->check(positive_count());
  cmd->add_option("--repeats", o->repeats, "Hill climbing: trials per point before comparing")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--seed", o->seed, "Seed of the random choices");
  cmd->add_option("--max-parallelism", o->max_parallelism, "Largest parallelism tried")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--max-producers", o->max_producers, "Most producer processes tried")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--model", o->model,
                "Measure each candidate with the ideal-time simulator instead of a run (producers "
                "and queues of process sources, with the machine's memcpy and fill rates)");
  cmd->add_option("--out", o->out, "Write the tuned spec (loadable by `pipeprof run`) here");
  cmd->add_option("--log", o->log, "Write every trial as JSON here");
  cmd->footer(
      "Exit status: 0 tuned, 1 a trial's pipeline failed or an output cannot be written, 2 bad "
      "usage or bad input (an unknown experiment, an invalid spec or step, no \"autotune\" "
      "parameter), 130 interrupted by Ctrl-C (the best so far is written).");
  o->watchdog.add_to(cmd);
  return [o] {
    o->watchdog.apply();
    return tune_command(*o);
  };
}

}  // namespace pipeprof::harness
