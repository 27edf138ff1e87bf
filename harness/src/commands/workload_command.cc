// pipeprof workload <workload.yaml> [overrides...] [--accelerators N] [--find-max-accelerators]
//                   [--stall-analysis] [--scale F] [--out DIR] [--spec-out FILE] [--trace FILE]
// Runs a DLIO / MLPerf Storage workload file: data generation when its workflow asks, then the
// training emulation with N simulated accelerators, and writes DLIO's summary.json and
// per_epoch_stats.json beside pipeprof's results.json (and report.md) into the output folder.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands/commands.h"
#include "commands/outputs.h"
#include "commands/interrupt.h"
#include "pipeprof/harness/cluster.h"
#include "pipeprof/harness/machine.h"
#include "pipeprof/harness/ranks.h"
#include "pipeprof/harness/version.h"
#include "pipeprof/results/document.h"
#include "pipeprof/results/environment.h"
#include "pipeprof/results/report.h"
#include "workload/growing_run.h"
#include "workload/remote_env.h"
#include "pipeprof/trace/chrome_json.h"
#include "workload/workload_pipeline.h"
#include "workload/accelerator_search.h"
#include "workload/workload_run.h"

namespace pipeprof::harness {
namespace {

namespace fs = std::filesystem;
using workload::DlioWorkload;

struct WorkloadOptions {
  WatchdogOptions watchdog;
  std::string file;
  std::vector<std::string> overrides;
  int64_t accelerators = 1;
  bool find_max = false;
  int64_t max_accelerators = 256;
  double recheck_au = workload::kRecheckAuPoints;
  bool stall_analysis = false;
  double scale = 0;  // 0: the workload's pipeprof.scale (1 without one)
  std::string out;
  std::string spec_out;
  std::string trace;
  bool drop_caches = false;
  bool no_autotune = false;
  bool normal_priority = false;
  bool fail_below_au = false;
  bool quiet = false;
  bool dry_run = false;
};

void write_json(const fs::path& path, const nlohmann::ordered_json& doc) {
  results::write_text_file(path, doc.dump(4) + "\n");
}

// "epoch 2/5  step 13/24" redrawn on stderr when it is a terminal, at most every 100 ms.
class Progress {
 public:
  Progress(bool enabled, int64_t epochs, int64_t steps)
      : enabled_(enabled && isatty(STDERR_FILENO) != 0), epochs_(epochs), steps_(steps) {}
  void operator()(int64_t epoch, int64_t step) {
    if (!enabled_) return;
    const int64_t now = trace::now_ns();
    if (now - last_ns_ < 100'000'000 && step != steps_) return;
    last_ns_ = now;
    std::fprintf(stderr, "\r  %sepoch %lld/%lld  step %lld/%lld   ", label_.c_str(),
                 static_cast<long long>(epoch), static_cast<long long>(epochs_),
                 static_cast<long long>(step), static_cast<long long>(steps_));
    std::fflush(stderr);
  }
  void label(std::string text) { label_ = std::move(text); }
  void done() {
    if (enabled_) std::fputs("\r\033[K", stderr);
  }

 private:
  bool enabled_;
  int64_t epochs_, steps_;
  int64_t last_ns_ = 0;
  std::string label_;
};

// Ctrl-C during --stall-analysis or --find-max-accelerators: what they measured, in
// OUT/analysis.json (the measured run did not happen).
// What --stall-analysis and --find-max-accelerators found, before the measured run.
struct Analyses {
  std::optional<results::StallRecord> stall;
  std::optional<results::AcceleratorSearch> search;
};

Outcome write_interrupted(const fs::path& out, const Analyses& found) {
  nlohmann::json extra = nlohmann::json::object();
  if (found.stall) extra["stall_analysis"] = results::to_json(*found.stall);
  if (found.search) extra["max_accelerators"] = results::to_json(*found.search);
  fs::create_directories(out);
  results::write_text_file(out / "analysis.json",
                           nlohmann::json{{"interrupted", true}, {"workload", extra}}.dump(2) + "\n");
  std::cerr << "wrote " << (out / "analysis.json").string() << " (interrupted)\n";
  return Outcome::kInterrupted;
}

fs::path output_folder(const WorkloadOptions& o, const DlioWorkload& w) {
  if (!o.out.empty()) return o.out;
  if (!w.output_folder.empty()) return w.output_folder;
  return fs::path("out") / "workload" / w.name;
}

void print_summary(std::ostream& out, const DlioWorkload& w, const workload::WorkloadResult& r) {
  const workload::RunMetrics& m = r.metrics;
  out << fmt::format("{}: {} accelerator(s), {} epoch(s) x {} steps, batch {}, {} loader, {}\n",
                     w.name, r.accelerators, m.au_percentage.size(), r.steps, w.batch_size,
                     workload::loader_name(w.loader),
                     pipelines::formats::data_format_name(w.dataset.format));
  out << workload::metric_block(w, m);
  int64_t bytes = 0;
  for (int64_t b : m.bytes_read_per_epoch)
    bytes += b;
  out << fmt::format(
      "wait per step: mean {:.2f} ms, p50 {:.2f} ms, p99 {:.2f} ms; barrier wait {:.2f} ms; read "
      "{:.1f} MB from storage\n",
      m.wait_mean_ms, m.wait_p50_ms, m.wait_p99_ms, m.barrier_mean_ms,
      static_cast<double>(bytes) / 1e6);
  if (m.accelerator_au_percentage.size() > 1) {
    const auto [lo, hi] = std::minmax_element(m.accelerator_au_percentage.begin(),
                                              m.accelerator_au_percentage.end());
    out << fmt::format("AU per accelerator: {:.2f}% (accelerator {}) to {:.2f}% (accelerator {})\n",
                       *lo, lo - m.accelerator_au_percentage.begin(), *hi,
                       hi - m.accelerator_au_percentage.begin());
  }
  if (r.ranks) {
    const RanksSummary& s = *r.ranks;
    out << fmt::format("ranks: {}\n", s.cluster);
    for (const RankRow& row : s.rows) {
      out << fmt::format("  rank {} @ {}: {} accelerator(s), AU {:.2f}%, {:.1f} samples/s\n", row.rank,
                         row.host, row.accelerators.value_or(0), row.au_percentage, row.samples_per_second);
    }
    out << fmt::format(
        "all ranks: {:.1f} samples/s; slowest rank {} ({:.1f}% below the mean); clock error of "
        "the merged trace <= {:.1f} us\n",
        s.samples_per_second, s.slowest_rank, s.slowest_behind_mean_percent,
        static_cast<double>(s.clock_error_ns.value_or(0)) / 1e3);
  }
  if (r.remote) out << workload::RemoteEnvironment::table(*r.remote);
  for (const std::string& note : r.run.notes)
    out << "note: " << note << "\n";
}

// DLIO's [METRIC] lines for checkpoints, and MLPerf's figures beside them.
std::string checkpoint_table(const results::CheckpointRecord& c) {
  std::string out = fmt::format(
      "checkpoint: {:.3f} GiB (checkpoint_size_GB), {} file(s) from {} rank(s), {} in {}\n",
      c.size_gib, c.files, c.ranks, c.fsync ? "fsync" : "no fsync", c.folder);
  for (const results::CheckpointOpRecord& op : c.ops) {
    out += fmt::format(
        "  {} {} (epoch {}, step {}): rank 0 {:.3f} s ({:.3f} GiB/s); slowest rank {:.3f} s, {:.3f} "
        "GiB/s of {:.3f} GiB\n",
        op.kind, op.index, op.epoch, op.step, op.rank0_seconds, op.dlio_gib_per_s,
        op.slowest_seconds, op.gib_per_s, static_cast<double>(op.bytes) / 1073741824.0);
  }
  if (c.save_duration_mean_s) {
    out += fmt::format("[METRIC] Checkpoint save duration (seconds): {:.4f} ({:.4f})\n",
                       *c.save_duration_mean_s, c.save_duration_stdev_s.value_or(0));
    out += fmt::format("[METRIC] Checkpoint save I/O Throughput (GB/second): {:.4f} ({:.4f})\n",
                       *c.save_io_mean_gib_per_s, c.save_io_stdev_gib_per_s.value_or(0));
  }
  if (c.load_duration_mean_s) {
    out += fmt::format("[METRIC] Checkpoint load duration (seconds): {:.4f} ({:.4f})\n",
                       *c.load_duration_mean_s, c.load_duration_stdev_s.value_or(0));
    out += fmt::format("[METRIC] Checkpoint load I/O Throughput (GB/second): {:.4f} ({:.4f})\n",
                       *c.load_io_mean_gib_per_s, c.load_io_stdev_gib_per_s.value_or(0));
  }
  if (c.save_gib_per_s || c.load_gib_per_s) {
    out += fmt::format("MLPerf (slowest rank): save {} GiB/s, load {} GiB/s\n",
                       c.save_gib_per_s ? fmt::format("{:.3f}", *c.save_gib_per_s) : "-",
                       c.load_gib_per_s ? fmt::format("{:.3f}", *c.load_gib_per_s) : "-");
  }
  if (c.training_stall_s) {
    out += fmt::format("the training waited {:.3f} s for checkpoints (outside AU's window)\n",
                       *c.training_stall_s);
  }
  return out;
}

// workflow.checkpoint without training: the checkpoints written, then read back cold; DLIO's
// summary.json and per_epoch_stats.json, results.json and the report.
Outcome checkpoint_only(const WorkloadOptions& o, const DlioWorkload& w,
                        const workload::CheckpointPlan& plan, const fs::path& out) {
  cluster::Cluster& ranks = cluster::current();
  const bool root = ranks.rank() == 0;
  const int64_t total = o.accelerators * ranks.size();
  if (root && !o.quiet) {
    std::cerr << fmt::format(
        "{}: {} checkpoint(s) of {:.2f} GiB written, {} read, by {} rank(s) into {}\n", w.name,
        std::max<int64_t>(0, w.checkpoint_settings.num_write), plan.size_gib(),
        std::max<int64_t>(0, w.checkpoint_settings.num_read), total, plan.folder);
  }
  const std::string start = workload::dlio_timestamp();
  // This process's ranks; under mpirun every process reports to rank 0 through the one rank path
  // (ranks.h), which names a failing rank with its exit code and merges the traces.
  auto body = [&]() {
    trace::Recorder& rec = trace::Recorder::global();
    if (!o.trace.empty()) {
      rec.start();
      rec.set_thread_name("main");
    }
    workload::CheckpointRun run;
    try {
      run = workload::run_checkpoints(
          w, plan, ranks.rank() * o.accelerators, o.accelerators, &ranks,
          {.direct = w.odirect,
           .stop = &InterruptGuard::flag(),
           .storage = workload::s3_storage(w, &InterruptGuard::flag(), ranks.rank())},
          [&](const std::string& what) {
            if (root && !o.quiet) std::cerr << "  " << what << "\n";
          });
    } catch (...) {
      if (!o.trace.empty()) (void)rec.stop();
      throw;
    }
    RankReport report{.interrupted = run.interrupted, .payload = workload::ops_to_text(run.ops)};
    if (!o.trace.empty()) report.trace = std::make_shared<trace::Trace>(rec.stop());
    return report;
  };
  std::vector<workload::CheckpointOp> ops;
  std::shared_ptr<trace::Trace> traced;
  bool interrupted = false;
  if (ranks.size() > 1) {
    RankRun ran = run_on_ranks(ranks, body,
                               {.stop = &InterruptGuard::flag(), .classify = rank_failure_of});
    if (ran.broken) {
      if (ran.mine.error) {
        if (ran.mine.error->input) throw InputError(ran.mine.error->message);
        throw RunFailure(ran.mine.error->message);
      }
      throw RunFailure("the job broke: another rank stopped answering (mpirun names it)");
    }
    if (!root) return ran.mine.interrupted ? Outcome::kInterrupted : Outcome::kOk;
    if (ran.failure) {
      if (ran.failure->input) throw InputError(ran.failure->message);
      throw RunFailure(ran.failure->message);
    }
    for (const RankReport& rep : ran.ranks) {
      interrupted = interrupted || rep.interrupted;
      for (workload::CheckpointOp& op : workload::ops_from_text(rep.payload))
        ops.push_back(std::move(op));
    }
    traced = ran.merged;
  } else {
    RankReport mine = body();
    interrupted = mine.interrupted;
    ops = workload::ops_from_text(mine.payload);
    traced = mine.trace;
  }
  const std::string end = workload::dlio_timestamp();
  const nlohmann::json machine{{"sleep_overshoot", to_json(measure_sleep_overshoot(10, 10))}};
  ExperimentResult x = workload::checkpoint_experiment(w, plan, ops, total, interrupted);
  const results::CheckpointRecord& c = *x.workload->checkpoint;
  std::cout << checkpoint_table(c);
  fs::create_directories(out);
  write_json(out / "summary.json",
             workload::summary_json(w, {.accelerators = total}, start, end, &c));
  write_json(out / "per_epoch_stats.json",
             workload::per_epoch_stats_json({}, ops, plan.size_gib()));
  {
    std::string log;
    for (const std::string& warning : w.warnings)
      log += "warning: " + warning + "\n";
    log += checkpoint_table(c);
    results::write_text_file(out / w.log_file, log);
  }
  if (traced) {
    trace::save_chrome_json(*traced, o.trace);
    std::cerr << fmt::format("wrote {} ({} spans)\n", o.trace, traced->span_count());
    x.trace_file = fs::absolute(o.trace).string();
  }
  const nlohmann::json doc = results::make_document(
      results::capture_environment(kVersion), nlohmann::json::array({to_json(x)}),
      {.repetitions = 1, .interrupted = interrupted, .machine = machine,
       .created_utc = results::utc_now()});
  results::write_text_file(out / "results.json", doc.dump(2) + "\n");
  results::write_report(results::render_report(doc, out, (out / "results.json").string()), out);
  std::cerr << fmt::format(
      "wrote {}/summary.json, per_epoch_stats.json, {}, results.json and report.md\n",
      out.string(), w.log_file);
  return interrupted ? Outcome::kInterrupted : Outcome::kOk;
}

Outcome workload_command(const WorkloadOptions& o) {
  DlioWorkload w = read_input([&] { return workload::load_workload(o.file, o.overrides); });
  workload::apply_scale(w, o.scale > 0 ? o.scale : w.scale);
  for (const std::string& warning : w.warnings)
    std::cerr << "warning: " << warning << "\n";
  const InterruptGuard guard;
  const fs::path out = output_folder(o, w);
  cluster::Cluster& ranks = cluster::current();
  const bool root = ranks.rank() == 0;
  if (o.dry_run) {  // before the output checks, which create the folder
    if (root) std::cout << workload::dry_run_text(w, o.accelerators * ranks.size());
    return Outcome::kOk;
  }
  if (root) {
    check_output_folder("--out", out);
    check_output_file("--trace", o.trace);
    check_output_file("--spec-out", o.spec_out);
  }
  if (ranks.size() > 1) {
    if (o.find_max || o.stall_analysis || w.remote.mode == workload::RemoteMode::kGrowingCache) {
      throw InputError(fmt::format(
          "{}: under mpirun each rank runs its shard of the measured run; --find-max-accelerators, "
          "--stall-analysis and pipeprof.remote.mode growing_cache run in one process",
          w.file));
    }
    if (root && !o.quiet) {
      std::cerr << fmt::format("{}: {} x {} accelerator(s) ({})\n", w.name, ranks.size(),
                               o.accelerators, ranks.describe());
    }
  }

  // The checkpoint's shape is checked before anything runs (ranks a multiple of the model's
  // parallelism), and its room on the storage before anything is written.
  std::optional<workload::CheckpointPlan> plan;
  if (w.checkpoint) {
    plan = read_input([&] { return workload::plan_checkpoint(w, o.accelerators * ranks.size()); });
    int64_t count = std::max<int64_t>(0, w.checkpoint_settings.num_write);
    if (w.train) {
      count = 0;
      const int64_t steps = workload::steps_per_epoch(w, o.accelerators * ranks.size());
      for (int64_t e = 1; e <= w.epochs; ++e) {
        for (int64_t st = 1; st <= steps; ++st)
          count += workload::checkpoint_after_step(w, st) ? 1 : 0;
        count += workload::checkpoint_after_epoch(w, e) ? 1 : 0;
      }
    }
    // Every process checks its ranks' share; under mpirun they agree, so that none waits for a
    // process that refused.
    std::exception_ptr no_room;
    try {
      read_input([&] {
        workload::check_room(*plan, count, ranks.rank() * o.accelerators, o.accelerators);
        return 0;
      });
    } catch (...) {
      no_room = std::current_exception();
    }
    if (ranks.size() > 1 && ranks.agree_stop(no_room != nullptr, &InterruptGuard::flag()) && !no_room) {
      throw InputError(
          "checkpoint.checkpoint_folder: another rank has no room for its checkpoints (its message "
          "names the folder)");
    }
    if (no_room) std::rethrow_exception(no_room);
  }

  if (!o.spec_out.empty() && root) {
    std::vector<std::string> files;
    try {
      files = workload::training_files(w);
    } catch (const InputError&) {  // not generated yet: the names DLIO's layout gives them
      files = workload::expected_training_files(w);
    }
    results::write_text_file(o.spec_out,
                             workload::loader_spec(w, files, 0, o.accelerators).dump(2) + "\n");
    std::cerr << fmt::format("wrote {} (rank 0 of {}'s loader; run it with `pipeprof run {}`)\n",
                             o.spec_out, o.accelerators, o.spec_out);
  }
  if (w.generate_data) {
    // Rank 0 generates; the others wait for it (and stop with it when it fails).
    Outcome g = Outcome::kOk;
    if (root) {
      std::cerr << fmt::format("generating the dataset in {} (workflow.generate_data)\n",
                               w.dataset.data_folder);
      try {
        g = run_datagen(w.dataset, {.quiet = o.quiet,
                                    .summary_to_stderr = true,
                                    .storage = workload::s3_storage(w, &InterruptGuard::flag())});
      } catch (...) {
        (void)ranks.agree_stop(true, &InterruptGuard::flag());
        throw;
      }
    }
    if (ranks.agree_stop(g != Outcome::kOk, &InterruptGuard::flag()))
      return root ? g : Outcome::kInterrupted;
  }
  if (!w.train && w.checkpoint) return checkpoint_only(o, w, *plan, out);
  if (!w.train) {
    std::cerr << (w.generate_data ? "workflow: data generation only (train and checkpoint are "
                                    "off): done\n"
                                  : "workflow: train, checkpoint and generate_data are off: "
                                    "nothing to run\n");
    return Outcome::kOk;
  }
  if (w.evaluation) {
    std::cerr << "warning: " << w.file
              << ": workflow.evaluation: evaluation steps are not emulated (training only)\n";
  }

  // How late this machine's sleeps wake up: the emulated computation time is slept (results.json's
  // machine object; about a tenth of a second).
  const nlohmann::json machine{{"sleep_overshoot", to_json(measure_sleep_overshoot(10, 10))}};

  if (w.remote.mode == workload::RemoteMode::kGrowingCache) {
    // C3: its own loop (the epochs grow); results.json and the report, no DLIO summary.
    if (o.accelerators != 1 || o.find_max || o.stall_analysis) {
      throw InputError(fmt::format("{}: pipeprof.remote.mode growing_cache runs one accelerator, "
                                   "without --find-max-accelerators or --stall-analysis",
                                   w.file));
    }
    const workload::GrowingRun g = workload::run_growing_cache(
        w, out, &InterruptGuard::flag(), [&](const workload::GrowingEpoch& e) {
          if (!o.quiet) {
            std::cerr << fmt::format("epoch {}: {} shards, {} samples, {:.2f} s, AU {:.1f}%\n",
                                     e.epoch, e.shards, e.samples, e.seconds, e.au_percentage);
          }
        });
    std::cout << workload::growing_table(g);
    fs::create_directories(out);
    const nlohmann::json doc = results::make_document(
        results::capture_environment(kVersion),
        nlohmann::json::array({workload::growing_entry(w, g)}),
        {.repetitions = 1, .interrupted = g.interrupted, .machine = machine,
         .created_utc = results::utc_now()});
    results::write_text_file(out / "results.json", doc.dump(2) + "\n");
    results::write_report(results::render_report(doc, out, (out / "results.json").string()), out);
    std::cerr << fmt::format("wrote {}/results.json and report.md\n", out.string());
    return g.interrupted ? Outcome::kInterrupted : Outcome::kOk;
  }

  workload::WorkloadOptions options{.accelerators = o.accelerators,
                                    .drop_caches = o.drop_caches,
                                    .autotune = !o.no_autotune,
                                    .trace = !o.trace.empty(),
                                    .realtime = !o.normal_priority,
                                    .stop = &InterruptGuard::flag(),
                                    .scratch_dir = out,
                                    .cluster = &ranks,
                                    .classify = rank_failure_of};
  Progress progress(!o.quiet && root, w.epochs,
                    workload::steps_per_epoch(w, o.accelerators * ranks.size()));
  options.on_step = [&](int64_t e, int64_t s) { progress(e, s); };

  Analyses found;
  if (o.stall_analysis) {
    std::cerr << "stall analysis (DS-Analyzer): synthetic, warm and cold passes of " << w.epochs
              << " epoch(s)\n";
    const workload::StallAnalysis a = workload::stall_analysis(w, options, [&](const std::string& p) {
      progress.done();
      progress.label(p + ": ");
      if (!o.quiet) std::cerr << "  " << p << "\n";
    });
    progress.done();
    std::cout << "epoch  synthetic s  warm s  cold s  fetch stall s  prep stall s\n";
    for (size_t i = 0; i < a.epochs.size(); ++i) {
      const auto& e = a.epochs[i];
      std::cout << fmt::format("{:>5}  {:>11.3f}  {:>6.3f}  {:>6.3f}  {:>13.3f}  {:>12.3f}\n",
                               i + 1, e.synthetic_s, e.warm_s, e.cold_s, e.fetch_stall_s,
                               e.prep_stall_s);
    }
    std::cout << fmt::format("AU: synthetic {:.2f}%, warm {:.2f}%, cold {:.2f}%\n", a.synthetic_au,
                             a.warm_au, a.cold_au);
    found.stall = workload::stall_record(a);
    if (a.interrupted) return write_interrupted(out, found);
  }
  if (o.find_max) {
    std::cerr << fmt::format("searching the most accelerators at AU >= {:.0f}% (up to {})\n",
                             w.au * 100, o.max_accelerators);
    const workload::MaxAcceleratorSearch s = workload::find_max_accelerators(
        w, options, o.max_accelerators,
        [&](const workload::Probe& p) {
          progress.done();
          std::cerr << "  " << workload::probe_text(p) << '\n';
        },
        o.recheck_au);
    found.search = workload::search_record(s, o.drop_caches, o.max_accelerators);
    const results::StorageBound& bound = *found.search->storage;
    std::cout << fmt::format(
        "max accelerators at AU >= {:.0f}%: {}\nstorage: {:.1f} MiB/s read ({}; the mean of {} "
        "measures, before the search and after every probe run: {:.1f} to {:.1f}), an accelerator "
        "demands {:.1f} MiB/s: the storage bound is {:.1f} accelerators ({:.0f}% reached)\n",
        w.au * 100, s.max_accelerators, s.storage_mib_per_s,
        workload::storage_source_text(s, o.drop_caches),
        s.storage_samples.size(),
        bound.lowest(), bound.highest(),
        s.demand_mib_per_s, s.bound,
        workload::storage_bound_reached_percent(s));
    if (s.interrupted) return write_interrupted(out, found);
  }

  // The measured run: N accelerators, the workload's epochs.
  progress.label("");
  workload::WorkloadResult r = workload::run_workload(w, options);
  progress.done();
  if (!root) return r.run.interrupted ? Outcome::kInterrupted : Outcome::kOk;  // rank 0 writes
  std::cout << "\n";
  print_summary(std::cout, w, r);

  fs::create_directories(out);
  ExperimentResult x = workload::to_experiment(w, r);
  const results::CheckpointRecord* checkpoint =
      x.workload->checkpoint ? &*x.workload->checkpoint : nullptr;
  if (checkpoint != nullptr) std::cout << checkpoint_table(*checkpoint);
  write_json(out / "summary.json", workload::summary_json(w, r.metrics, r.start, r.end, checkpoint));
  write_json(out / "per_epoch_stats.json",
             workload::per_epoch_stats_json(r.run, r.checkpoints,
                                            r.checkpoint_plan ? r.checkpoint_plan->size_gib() : 0));
  {
    std::ostringstream log;
    for (const std::string& warning : w.warnings)
      log << "warning: " << warning << "\n";
    print_summary(log, w, r);
    if (checkpoint != nullptr) log << checkpoint_table(*checkpoint);
    results::write_text_file(out / w.log_file, log.str());
  }
  if (r.run.trace) {
    trace::save_chrome_json(*r.run.trace, o.trace);
    std::cerr << fmt::format("wrote {} ({} spans; open it in pipeprof-viewer or Perfetto UI)\n",
                             o.trace, r.run.trace->span_count());
    x.trace_file = fs::absolute(o.trace).string();
  }
  x.workload->stall_analysis = found.stall;
  x.workload->max_accelerators = found.search;
  const nlohmann::json doc = results::make_document(
      results::capture_environment(kVersion), nlohmann::json::array({to_json(x)}),
      {.repetitions = 1, .interrupted = r.run.interrupted, .machine = machine,
       .created_utc = results::utc_now()});
  results::write_text_file(out / "results.json", doc.dump(2) + "\n");
  results::write_report(results::render_report(doc, out, (out / "results.json").string()), out);
  std::cerr << fmt::format("wrote {}/summary.json, per_epoch_stats.json, {}, results.json and report.md\n",
                           out.string(), w.log_file);
  if (r.run.interrupted) return Outcome::kInterrupted;
  if (o.fail_below_au && !r.metrics.meets_au) {
    std::cerr << fmt::format("AU {:.2f}% is below the workload's {:.0f}%\n",
                             r.metrics.au_mean_percentage, w.au * 100);
    return Outcome::kFailed;
  }
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_workload_command(CLI::App& app) {
  auto o = std::make_shared<WorkloadOptions>();
  auto* cmd = app.add_subcommand(
      "workload",
      "Run a DLIO / MLPerf Storage workload file: data generation when its workflow asks, then "
      "training emulated on simulated accelerators; writes DLIO's summary.json and pipeprof's "
      "results.json");
  cmd->add_option("workload", o->file, "A DLIO workload file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("overrides", o->overrides,
                  "Overrides in DLIO's (Hydra's) form: ++workload.reader.read_threads=8, "
                  "workload.train.epochs=2, +workload.train.seed=7, ~workload.train.seed");
  cmd->add_option("--accelerators,-n", o->accelerators,
                  "Simulated accelerators: training loops in this process, each with its own "
                  "shard and loader, meeting at a barrier after every step")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_flag("--find-max-accelerators", o->find_max,
                "Search the most accelerators whose AU meets the workload's metric.au (the MLPerf "
                "Storage result), and the bound the storage's bandwidth sets");
  cmd->add_option("--max-accelerators", o->max_accelerators,
                  "The largest count --find-max-accelerators tries")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--recheck-au", o->recheck_au,
                  "A probe of --find-max-accelerators whose AU lies within this many points of "
                  "metric.au is run again and decided by the median of three runs (0: every probe "
                  "runs once)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_flag("--stall-analysis", o->stall_analysis,
                "DS-Analyzer's split: synthetic (no I/O), warm (page cache) and cold passes, with "
                "fetch and preparation stall per epoch");
  cmd->add_option("--scale", o->scale,
                  "Fraction of the dataset's files to use, in (0, 1] (default: the workload's "
                  "pipeprof.scale, else 1: full size)")
      ->check(unit_fraction());
  cmd->add_option("--out", o->out,
                  "Output folder (default: the workload's output.folder, else out/workload/<name>)");
  cmd->add_option("--spec-out", o->spec_out,
                  "Write rank 0's loader as a pipeprof spec (run, tune, inspect it)");
  cmd->add_option("--trace", o->trace,
                  "Record the measured run's timeline (every accelerator, loader stage and read) "
                  "as Chrome-trace JSON");
  cmd->add_flag("--drop-caches", o->drop_caches,
                "Drop the training files from the page cache before every epoch (cold reads; the "
                "MLPerf rule when the dataset fits in memory)");
  cmd->add_flag("--no-autotune", o->no_autotune,
                "Do not run the online tuner (read_threads: autotune then stays at its start)");
  cmd->add_flag("--normal-priority", o->normal_priority,
                "Run the simulated accelerators' training loops at normal priority (by default "
                "they run at real-time priority where permitted, so that with more accelerators "
                "than cores a step starts the moment the barrier opens, as on an accelerator)");
  cmd->add_flag("--fail-below-au", o->fail_below_au,
                "Exit 1 when the mean AU is below the workload's metric.au");
  cmd->add_flag("--quiet,-q", o->quiet, "No progress line");
  cmd->add_flag("--dry-run", o->dry_run,
                "Print what the run would read, write and generate (files, bytes per rank and in "
                "all, the dataset against this client's memory, the checkpoint per rank and in "
                "all) without touching storage");
  cmd->footer(
      "AU = time computing / wall time of the training loop, the first step excluded, as DLIO "
      "computes it (mean over accelerators; throughput summed). Unknown keys of the file are "
      "warnings; a value that cannot be used exits 2 naming the file and the key.\n"
      "Exit status: 0 ok, 1 a loader failed or --fail-below-au, 2 bad usage or bad input (the "
      "workload file, an override, missing data files), 130 interrupted by Ctrl-C (what was "
      "measured is written).");
  o->watchdog.add_to(cmd);
  return [o] {
    o->watchdog.apply();
    return workload_command(*o);
  };
}

}  // namespace pipeprof::harness
