// pipeprof suite [--quick] [--out DIR] [--step S] [--repetitions R] [--only id,...] [--manifest F]
// The main job: runs what the suite's manifest lists (harness/suite.json: the catalog, the storage
// and scale-out sections), prints a progress line per experiment and a table, and writes
// results.json (with the environment) and report.md with its SVG charts into DIR. Ctrl-C stops
// after the current element and writes what was measured so far.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands/commands.h"
#include "commands/outputs.h"
#include "commands/interrupt.h"
#include "commands/rank_results.h"
#include "pipeprof/harness/cluster.h"
#include "commands/table.h"
#include "pipeprof/harness/machine.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/harness/version.h"
#include "pipeprof/results/document.h"
#include "pipeprof/results/environment.h"
#include "pipeprof/results/report.h"
#include "pipeprof/trace/chrome_json.h"
#include "workload/scaleout_suite.h"
#include "workload/storage_suite.h"
#include "workload/suite_manifest.h"

namespace pipeprof::harness {
namespace {

struct SuiteOptions {
  WatchdogOptions watchdog;
  bool quick = false;
  std::string out = "out";
  std::string step;
  int repetitions = 5;
  std::vector<std::string> only;
  bool no_trace = false;
  bool no_storage = false;
  bool no_scaleout = false;
  std::string manifest = workload::suite_manifest_path().string();
};

// results.json (schema results/schema/results.schema.json) and the report, through the same code
// as `pipeprof report`.
void write_outputs(const std::filesystem::path& dir, const std::vector<ExperimentResult>& runs,
                   const std::vector<nlohmann::json>& storage, const SleepOvershoot& overshoot,
                   bool interrupted, int repetitions, const std::string& started_utc) {
  std::filesystem::create_directories(dir);
  nlohmann::json experiments = nlohmann::json::array();
  for (const auto& r : runs)
    experiments.push_back(to_json(r));
  for (const auto& x : storage)
    experiments.push_back(x);
  const nlohmann::json doc =
      results::make_document(results::capture_environment(kVersion), std::move(experiments),
                             {.repetitions = repetitions,
                              .interrupted = interrupted,
                              .machine = {{"sleep_overshoot", to_json(overshoot)}},
                              .created_utc = started_utc});
  results::write_text_file(dir / "results.json", doc.dump(2) + "\n");
  results::write_report(results::render_report(doc, dir, (dir / "results.json").string()), dir);
}

// The catalog's experiments the selection names (every one with the whole catalog selected).
std::vector<Experiment> selected_experiments(std::vector<Experiment> catalog,
                                             const workload::SuiteSelection& selection) {
  if (selection.whole_catalog) return catalog;
  std::vector<Experiment> selected;
  for (auto& x : catalog) {
    const auto& ids = selection.catalog_ids;
    if (std::find(ids.begin(), ids.end(), x.id) != ids.end()) selected.push_back(std::move(x));
  }
  return selected;
}

struct SuiteFailures {
  int failed = 0, on_input = 0;
  size_t experiments = 0;
};

// The end of a suite: the table, results.json and the report (`runs` as results, `entries` as
// they are), and the exit status. Throws std::runtime_error naming what cannot be written.
Outcome finish_suite(const SuiteOptions& o, const std::vector<ExperimentResult>& table,
                     const std::vector<ExperimentResult>& runs,
                     const std::vector<nlohmann::json>& entries, const SleepOvershoot& overshoot,
                     int repetitions, const std::string& started_utc, const SuiteFailures& f) {
  const bool interrupted = InterruptGuard::flag();
  std::cout << "\n";
  print_table(std::cout, table);
  write_outputs(o.out, runs, entries, overshoot, interrupted, repetitions, started_utc);
  std::cerr << fmt::format("wrote {}/results.json and {}/report.md\n", o.out, o.out);
  if (interrupted) return Outcome::kInterrupted;
  if (f.on_input > 0) {
    throw InputError(fmt::format("{} of {} experiment(s) failed on bad input (see above)",
                                 f.on_input, f.experiments));
  }
  return f.failed > 0 ? Outcome::kFailed : Outcome::kOk;
}

// Under mpirun: every rank runs each catalog experiment (on its shard where the spec has rank
// tokens), and rank 0 writes one results.json and report with every experiment's per-rank results
// ("ranks") and traces merged over the ranks. The storage and scale-out sections start their own
// servers and mpirun: they run in a suite started without mpirun.
Outcome suite_on_ranks(const SuiteOptions& o, cluster::Cluster& ranks,
                       const std::vector<Experiment>& catalog, int repetitions,
                       const std::string& started_utc) {
  const bool root = ranks.rank() == 0;
  if (root) {
    std::cerr << fmt::format(
        "suite on {}: the catalog's experiments on every rank; the storage and scale-out "
        "sections run in a suite started without mpirun\n",
        ranks.describe());
  }
  const SleepOvershoot overshoot = measure_sleep_overshoot(10, o.quick ? 10 : 30);
  if (root) print_overshoot(std::cerr, overshoot);
  std::vector<ExperimentResult> results;
  std::vector<nlohmann::json> entries;
  int failed = 0, failed_on_input = 0;
  for (size_t i = 0; i < catalog.size(); ++i) {
    // Every rank takes part in every experiment's collectives; a stop is agreed on first.
    if (ranks.agree_stop(InterruptGuard::flag().load(), &InterruptGuard::flag())) break;
    const Experiment& x = catalog[i];
    if (root) std::cerr << fmt::format("[{:>2}/{}] {:<24} ", i + 1, catalog.size(), x.id) << std::flush;
    RunOptions options{.step = o.step,
                       .repetitions = repetitions,
                       .stop = &InterruptGuard::flag(),
                       .trace = !o.no_trace};
    if (root) options.on_repetition = [](int, const Repetition&) { std::cerr << "." << std::flush; };
    RankedRun run = run_experiment_on_ranks(ranks, x, options);
    if (run.broken) throw RunFailure(run.error);  // no collective can follow
    if (!root) continue;
    if (!run.error.empty()) {
      std::cerr << " failed: " << run.error << "\n";
      ++failed;
      if (run.input_error) ++failed_on_input;
      continue;
    }
    ExperimentResult& r = run.result;
    r.trace.reset();
    if (run.merged) {
      try {  // rank 0 alone: the others are already at the next experiment's collectives
        const std::filesystem::path rel = std::filesystem::path("traces") / (x.id + ".json");
        std::filesystem::create_directories(std::filesystem::path(o.out) / "traces");
        trace::save_chrome_json(*run.merged, std::filesystem::path(o.out) / rel);
        r.trace_file = rel.string();
      } catch (const std::exception& e) {
        std::cerr << " (the trace was not written: " << e.what() << ")";
        ++failed;
      }
    }
    std::cerr << " " << summary_line(r)
              << fmt::format("; all ranks {:.1f} samples/s",
                             run.summary.samples_per_second)
              << "\n";
    entries.push_back(to_json(r));  // with its ranks
    results.push_back(std::move(r));
  }
  if (!root) return InterruptGuard::flag() ? Outcome::kInterrupted : Outcome::kOk;
  // The entries carry their ranks: written as they are, the table from rank 0's results.
  return finish_suite(o, results, {}, entries, overshoot, repetitions, started_utc,
                      {failed, failed_on_input, catalog.size()});
}

Outcome suite(const SuiteOptions& o) {
  InterruptGuard guard;
  if (!o.step.empty()) (void)make_step(o.step);  // usable here (cuda needs a GPU), once
  // What runs is the manifest's (harness/suite.json): --only picks entries, catalog ids, kinds or
  // sections; --no-storage and --no-scaleout leave out a section.
  const workload::SuiteManifest manifest =
      read_input([&] { return workload::load_suite_manifest(o.manifest); });
  std::vector<std::string> skip;
  if (o.no_storage) skip.emplace_back("storage");
  if (o.no_scaleout) skip.emplace_back("scaleout");
  std::vector<Experiment> catalog = read_input([] {
    return load_catalog(catalog_dir(), cluster::spec_options(cluster::current()));
  });
  std::vector<std::string> catalog_ids;
  for (const Experiment& x : catalog)
    catalog_ids.push_back(x.id);
  const workload::SuiteSelection selection =
      read_input([&] { return workload::select_entries(manifest, o.only, skip, catalog_ids); });
  catalog = selected_experiments(std::move(catalog), selection);
  auto in_section = [&](const char* section) {
    return std::any_of(selection.entries.begin(), selection.entries.end(),
                       [&](const workload::SuiteEntry* e) { return e->section == section; });
  };
  const bool storage = in_section("storage");
  const bool scaleout = in_section("scaleout");
  const int repetitions = o.quick ? 1 : o.repetitions;
  const std::string started_utc = results::utc_now();
  cluster::Cluster& ranks = cluster::current();
  if (ranks.rank() == 0) check_output_folder("--out", o.out);
  if (ranks.mpi()) return suite_on_ranks(o, ranks, catalog, repetitions, started_utc);
  const SleepOvershoot overshoot = measure_sleep_overshoot(10, o.quick ? 10 : 30);
  print_overshoot(std::cerr, overshoot);

  std::vector<ExperimentResult> results;
  int failed = 0, failed_on_input = 0;
  for (size_t i = 0; i < catalog.size() && !InterruptGuard::flag(); ++i) {
    const Experiment& x = catalog[i];
    std::cerr << fmt::format("[{:>2}/{}] {:<24} ", i + 1, catalog.size(), x.id) << std::flush;
    try {
      RunOptions options{.step = o.step,
                         .repetitions = repetitions,
                         .stop = &InterruptGuard::flag(),
                         .trace = !o.no_trace};
      options.on_repetition = [](int, const Repetition&) { std::cerr << "." << std::flush; };
      results.push_back(run_experiment(x, options));
      // Written at once, so an interrupted suite keeps the traces of what it ran.
      if (ExperimentResult& r = results.back(); r.trace) {
        const std::filesystem::path rel = std::filesystem::path("traces") / (x.id + ".json");
        std::filesystem::create_directories(std::filesystem::path(o.out) / "traces");
        trace::save_chrome_json(*r.trace, std::filesystem::path(o.out) / rel);
        r.trace_file = rel.string();
        r.trace.reset();
      }
      std::cerr << " " << summary_line(results.back()) << "\n";
    } catch (...) {  // the others still run; the exit status says what went wrong
      const ExitStatus status = exit_status_of(std::current_exception());
      std::cerr << " failed: " << status.message << "\n";
      ++failed;
      if (status.code == kExitBadInput) ++failed_on_input;
    }
  }
  std::vector<nlohmann::json> storage_entries;
  if (storage && !InterruptGuard::flag()) {
    std::cerr << "[storage] DLIO / MLPerf Storage workloads (datasets in " << o.out
              << "/data; --no-storage skips them)\n";
    int storage_failed = 0;
    storage_entries = workload::run_storage_suite(
        {.out = o.out,
         .quick = o.quick,
         .stop = &InterruptGuard::flag(),
         .log = [](const std::string& line) { std::cerr << "[storage] " << line << "\n"; }},
        selection.entries, storage_failed);
    failed += storage_failed;
  }
  if (scaleout && !InterruptGuard::flag()) {
    std::cerr << "[scaleout] the scale-out specs under mpirun (--no-scaleout skips them)\n";
    int scaleout_failed = 0;
    std::vector<nlohmann::json> entries = workload::run_scaleout_suite(
        {.out = o.out,
         .quick = o.quick,
         .stop = &InterruptGuard::flag(),
         .log = [](const std::string& line) { std::cerr << "[scaleout] " << line << "\n"; }},
        selection.entries, scaleout_failed);
    failed += scaleout_failed;
    for (auto& e : entries)
      storage_entries.push_back(std::move(e));
  }
  return finish_suite(o, results, results, storage_entries, overshoot, repetitions, started_utc,
                      {failed, failed_on_input, catalog.size()});
}

}  // namespace

CommandRunner add_suite_command(CLI::App& app) {
  auto o = std::make_shared<SuiteOptions>();
  auto* cmd = app.add_subcommand("suite",
                                 "Run the whole experiment catalog and write results and a report");
  cmd->add_flag("--quick", o->quick, "One repetition per experiment (a quick check)");
  cmd->add_option("--out", o->out, "Output folder for results.json, report.md and its charts")
      ->capture_default_str();
  cmd->add_option("--step", o->step,
                  "Training step for every experiment (default: each experiment's own)");
  cmd->add_option("--repetitions", o->repetitions,
                  "Repetitions per experiment; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--only", o->only,
                  "Run only these: catalog experiment ids, suite entry ids (e.g. unet3d_h100, "
                  "npz_256k_cold, dell_new), kinds (workload, search, peer, growing_cache, scaleout) "
                  "or sections (catalog, storage, scaleout)")
      ->delimiter(',');
  cmd->add_option("--manifest", o->manifest,
                  "The suite's manifest: what runs, in order, with its quick and full settings "
                  "($PIPEPROF_SUITE, else the shipped harness/suite.json)")
      ->capture_default_str();
  cmd->add_flag("--no-scaleout", o->no_scaleout,
                "Skip the scale-out section (dell_old and dell_new on 1, 2 and 4 ranks under "
                "mpirun)");
  cmd->add_flag("--no-storage", o->no_storage,
                "Skip the storage section (the MLPerf Storage workloads and the loader comparison "
                "with PyTorch's DataLoader, whose datasets take about 11 GB under OUT/data)");
  cmd->add_flag("--no-trace", o->no_trace,
                "Do not record traces (by default one extra, unmeasured run of each experiment is "
                "traced into OUT/traces/<id>.json)");
  cmd->footer(
      "Exit status: 0 ok, 1 an experiment failed or an output cannot be written, 2 bad usage or "
      "bad input (an unknown id in --only, an unusable --step, an invalid catalog spec), 130 "
      "interrupted by Ctrl-C (what was measured is written).");
  o->watchdog.add_to(cmd);
  return [o] {
    o->watchdog.apply();
    return suite(*o);
  };
}

}  // namespace pipeprof::harness
