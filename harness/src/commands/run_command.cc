// pipeprof run <id|spec.json> [--step S] [--epochs N] [--repetitions R] [--json out.json]
//              [--trace trace.json] [--producers N] [--queue-capacity N]
#include <fmt/format.h>

#include <iostream>
#include <optional>
#include <sstream>

#include "commands/commands.h"
#include "commands/outputs.h"
#include "commands/interrupt.h"
#include "commands/rank_results.h"
#include "commands/table.h"
#include "pipeprof/harness/cli.h"
#include "pipeprof/harness/cluster.h"
#include "pipeprof/trace/merge.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/results/report.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::harness {
namespace {

struct RunCommandOptions {
  WatchdogOptions watchdog;
  std::string target;
  std::string step;
  int64_t epochs = 0;
  int repetitions = 5;
  std::string json;
  std::string trace;
  int64_t producers = 0;       // 0: the spec's
  int64_t queue_capacity = 0;  // 0: the spec's
  std::string cache_dir;       // http URLs through a disk cache in this folder
  double cache_mib = 0;
};

// Writes --producers and --queue-capacity into every multiprocess and shared_store stage of the
// experiment (nested pipelines included). Throws SpecError when it has none, or the new values are
// invalid (the spec is parsed again).
void override_process_sources(Experiment& x, int64_t producers, int64_t queue_capacity) {
  if (producers == 0 && queue_capacity == 0) return;
  nlohmann::json doc = x.spec.document;
  int changed = 0;
  auto visit = [&](auto& self, nlohmann::json& node) -> void {
    if (node.is_object()) {
      if (const auto op = node.find("op");
          op != node.end() && op->is_string() &&
          (*op == "multiprocess" || *op == "shared_store")) {
        if (producers > 0) node["producers"] = producers;
        if (queue_capacity > 0) node["queue_capacity"] = queue_capacity;
        ++changed;
      }
      for (auto& [key, child] : node.items()) {
        if (key != "experiment") self(self, child);
      }
    } else if (node.is_array()) {
      for (auto& child : node)
        self(self, child);
    }
  };
  visit(visit, doc);
  if (changed == 0) {
    throw pipelines::SpecError(fmt::format(
        "{}: --producers and --queue-capacity need a multiprocess or shared_store stage", x.id));
  }
  x.spec = pipelines::parse_spec(doc, x.file.empty() ? x.id : x.file.string());
  // The published numbers are for the published producer count and queue.
  x.seed_ms.reset();
  x.documented_ideal_ms.reset();
}

// Under mpirun: every rank runs the experiment on its shard (the spec's rank tokens), and rank 0
// reports every rank (rank_results.h); --json holds rank 0's result with a "ranks" object, and
// --trace every rank's traced run merged onto rank 0's clock.
Outcome run_ranks(cluster::Cluster& ranks, const Experiment& x, const RunOptions& options,
                  const RunCommandOptions& o) {
  const bool root = ranks.rank() == 0;
  if (root) std::cerr << fmt::format("{} ({})\n", x.id, ranks.describe());
  RankedRun run;
  try {
    run = run_experiment_on_ranks(ranks, x, options);
  } catch (const std::exception& e) {
    if (!root) return Outcome::kInterrupted;  // the job is ending; rank 0 says why
    throw RunFailure(fmt::format("gathering the ranks' results: {}", e.what()));
  }
  if (!root) return Outcome::kOk;  // rank 0 reports, failures included
  if (!run.error.empty()) {
    if (run.input_error) throw InputError(run.error);
    throw RunFailure(run.error);
  }
  std::cout << rank_table(run.summary);
  if (run.merged && !o.trace.empty()) {
    trace::save_chrome_json(*run.merged, o.trace);
    std::cerr << fmt::format("wrote {} (every rank's traced run, one process per rank)\n", o.trace);
  }
  if (!o.json.empty()) {
    results::write_text_file(o.json, to_json(run.result).dump(2) + "\n");
    std::cerr << "wrote " << o.json << "\n";
  }
  return run.interrupted ? Outcome::kInterrupted : Outcome::kOk;
}

Outcome run_command(const RunCommandOptions& o) {
  InterruptGuard guard;
  // Under mpirun the spec's rank tokens stand for this rank.
  Experiment x = read_input(
      [&] { return find_experiment(o.target, cluster::spec_options(cluster::current())); });
  override_process_sources(x, o.producers, o.queue_capacity);
  if (cluster::current().rank() == 0) {
    check_output_file("--json", o.json);
    check_output_file("--trace", o.trace);
  }
  // What the pipeline reads http(s) URLs with: its counters, and with --cache-dir a read-through
  // disk cache (docs/remote.md), kept for later runs.
  std::shared_ptr<pipelines::RemoteCache> cache;
  if (!o.cache_dir.empty()) {
    if (o.cache_mib <= 0) throw InputError("--cache-dir needs --cache-mib (the cache's budget)");
    try {
      cache = std::make_shared<pipelines::RemoteCache>(pipelines::RemoteCacheOptions{
          .dir = o.cache_dir, .budget_bytes = static_cast<uint64_t>(o.cache_mib * 1048576.0)});
    } catch (const pipelines::RemoteError& e) {
      throw InputError(e.what());
    }
  }
  const auto storage = std::make_shared<pipelines::StorageContext>(
      pipelines::RemoteReadOptions{.stop = &InterruptGuard::flag()}, cache);
  RunOptions options{.step = o.step,
                     .epochs = o.epochs,
                     .repetitions = o.repetitions,
                     .stop = &InterruptGuard::flag(),
                     .trace = !o.trace.empty(),
                     .storage = storage};
  options.on_repetition = [&](int i, const Repetition& rep) {
    std::cerr << fmt::format("  repetition {}/{}: {:.2f} ms, wait mean {:.3f} ms{}\n", i + 1,
                             o.repetitions, rep.wall_ms, rep.wait.mean_ms,
                             rep.interrupted ? " (interrupted)" : "");
  };
  std::cerr << fmt::format("{}: {} ({} x {} epochs)\n", x.id, x.description, o.repetitions,
                           o.epochs > 0 ? o.epochs : x.epochs);
  cluster::Cluster& ranks = cluster::current();
  if (ranks.mpi()) return run_ranks(ranks, x, options, o);
  const ExperimentResult result = run_experiment(x, options);
  print_table(std::cout, {result});
  if (const auto r = storage->counters(); r.requests > 0 || cache) {
    std::cerr << fmt::format("remote: {} requests, {:.1f} MB fetched ({} retries){}\n", r.requests,
                             static_cast<double>(r.bytes) / 1e6, r.retries,
                             cache ? "; the cache in " + o.cache_dir : std::string());
  }
  if (!o.json.empty()) {
    results::write_text_file(o.json, to_json(result).dump(2) + "\n");
    std::cerr << "wrote " << o.json << "\n";
  }
  if (!o.trace.empty() && result.trace) {
    trace::save_chrome_json(*result.trace, o.trace);
    std::cerr << fmt::format(
        "wrote {} ({} spans of a traced run before the measured ones; open it in Perfetto UI or "
        "pipeprof-viewer, or run `pipeprof analyze {}`)\n",
        o.trace, result.trace->span_count(), o.trace);
  }
  return result.interrupted ? Outcome::kInterrupted : Outcome::kOk;
}

}  // namespace

CommandRunner add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run one experiment (catalog id or spec file) and compare it with its ideal");
  cmd->add_option("experiment", o->target, "Catalog id (see `pipeprof list`) or a spec file")
      ->required();
  cmd->add_option(
      "--step", o->step,
      "Training step: sleep:<ms>, cpu:<ms>, cuda:<ms>, none, auto (default: the experiment's)");
  cmd->add_option("--epochs", o->epochs, "Epochs (default: the experiment's)")
      ->check(positive_count());
  cmd->add_option("--repetitions", o->repetitions, "Repetitions; the median is reported")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--producers", o->producers,
                  "Producer processes of the multiprocess or shared_store stage (default: the "
                  "spec's)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--queue-capacity", o->queue_capacity,
                  "Elements in flight between producers and consumer (default: the spec's)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Read http:// URLs through a read-through disk cache in this folder (kept: a "
                  "later run starts warm; docs/remote.md)");
  cmd->add_option("--cache-mib", o->cache_mib, "The disk cache's budget in MiB (least recently used evicted)")
      ->check(positive_number());
  cmd->add_option("--json", o->json, "Write the result (every repetition) as JSON to this file");
  cmd->add_option("--trace", o->trace,
                  "Record one extra, unmeasured run's timeline and write it as Chrome-trace JSON");
  cmd->footer(
      "Exit status: 0 ok, 1 the pipeline failed or an output cannot be written, 2 bad usage or bad "
      "input (an unknown experiment, an invalid spec or step), 130 interrupted by Ctrl-C.");
  o->watchdog.add_to(cmd);
  return [o] {
    o->watchdog.apply();
    return run_command(*o);
  };
}

}  // namespace pipeprof::harness
