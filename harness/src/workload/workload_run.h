// Running a DLIO workload: the training emulation with N simulated accelerators and its metrics,
// DS-Analyzer's stall split, and the workload as a pipeprof experiment result (results.json,
// report, compare). The search for the most accelerators is in accelerator_search.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/harness/ranks.h"
#include "pipeprof/harness/runner.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_training.h"

namespace pipeprof::harness::workload {

struct WorkloadOptions {
  int64_t accelerators = 1;
  bool drop_caches = false;  // every epoch cold (the MLPerf rule when the dataset fits in memory)
  bool autotune = true;
  bool trace = false;
  bool realtime = true;  // the training loops at real-time priority where permitted
  const std::atomic<bool>* stop = nullptr;
  // Progress: called about every 100 ms with the first accelerator's epoch and step.
  std::function<void(int64_t epoch, int64_t step)> on_step;
  // Where a remote workload (pipeprof.remote) keeps its local copy or cache; empty: a temporary
  // folder, removed afterwards.
  std::filesystem::path scratch_dir;
  // Ranks (mpirun): every rank runs `accelerators` of them on its shard; rank 0's result holds
  // every rank's (the rank path: pipeprof/harness/ranks.h). nullptr: this process alone.
  cluster::Cluster* cluster = nullptr;
  // How a rank's error is told apart (bad input or a failure); the command line's by default.
  ErrorClassifier classify;
  // workflow.checkpoint during training: write DLIO's checkpoints where DLIO writes them (off for
  // the probes of --find-max-accelerators and --stall-analysis).
  bool checkpoints = true;
};

struct WorkloadResult {
  int64_t accelerators = 0;
  int64_t steps = 0;  // per epoch and accelerator
  TrainRun run;
  RunMetrics metrics;
  std::string start, end;  // DLIO's timestamps
  double cpu_ms = 0;       // process CPU time during the run
  // pipeprof.remote: RemoteEnvironment::report (none for local files).
  std::optional<results::RemoteRecord> remote;
  // Ranks: every rank's row on rank 0 (none alone).
  std::optional<RanksSummary> ranks;
  // The checkpoints written during training (every rank's on rank 0), and their plan.
  std::optional<CheckpointPlan> checkpoint_plan;
  std::vector<CheckpointOp> checkpoints;
};

// With ranks, every rank calls it; rank 0 gets the whole run, the others their own. A rank that
// fails makes every rank stop at the next step; rank 0 then throws the first failure, naming the
// rank (InputError for bad input, RunFailure otherwise); the other ranks return normally.
WorkloadResult run_workload(const DlioWorkload& w, const WorkloadOptions& options,
                            LoaderMode mode = LoaderMode::kPipeline);

// The storage's read bandwidth for the workload's training files, in MiB/s: `threads` threads
// reading the files front to back in 1 MiB read calls (as fio's sequential read does), from the
// page cache or (cold) from the device. find_max_accelerators reads with 16 threads (4 per core on
// larger machines), enough reads in flight to find what the storage gives. Names with a scheme
// (http(s)://, s3://) are read through the storage layer with `storage`'s settings, each front
// to back (cold drops only local files); a name that cannot be read counts no bytes.
double measure_storage_mib_per_s(const std::vector<std::string>& files, int threads, bool cold,
                                 const std::atomic<bool>* stop = nullptr,
                                 const std::shared_ptr<const pipelines::StorageContext>& storage = nullptr);

// The files' bytes together (a file that cannot be read counts 0).
int64_t files_bytes(const std::vector<std::string>& files);

// Files taken evenly across `files` (every k-th) so that they hold at most about `max_bytes`;
// all of them when they hold less.
std::vector<std::string> spread_files(const std::vector<std::string>& files, int64_t max_bytes);

// The mean sample size in bytes: the training files' bytes over their samples.
double mean_sample_bytes(const DlioWorkload& w, const std::vector<std::string>& files);

// What one simulated accelerator demands at AU 100%, in MiB/s.
double demand_mib_per_s(const DlioWorkload& w, double sample_bytes);

// DS-Analyzer's differential method: the same epochs three times, with a synthetic loader (no I/O,
// no preparation), with the dataset in the page cache (warm), and with it dropped before every
// epoch (cold). Per epoch: fetch stall = cold - warm, preparation stall = warm - synthetic.
struct StallEpoch {
  double synthetic_s = 0, warm_s = 0, cold_s = 0;
  double fetch_stall_s = 0, prep_stall_s = 0;
};
struct StallAnalysis {
  std::vector<StallEpoch> epochs;
  double synthetic_au = 0, warm_au = 0, cold_au = 0;  // % (DLIO's AU of each pass)
  bool interrupted = false;
};
StallAnalysis stall_analysis(const DlioWorkload& w, const WorkloadOptions& options,
                             const std::function<void(const std::string&)>& on_pass);

// The run as an experiment result of kind workload (results.json): a repetition per epoch, whose
// ideal is the epoch's computation time (AU 100%) or, on a remote dataset, what the store can
// serve; its workload record holds DLIO's metrics and the rest (workload_record).
ExperimentResult to_experiment(const DlioWorkload& w, const WorkloadResult& r);
results::WorkloadRecord workload_record(const DlioWorkload& w, const WorkloadResult& r);

// --dry-run: what a run of the workload on `ranks` ranks (accelerators x processes) would read,
// write and generate: the files, the bytes per rank and in all, the dataset against this
// client's memory (MLPerf Storage's rule: at least 5 times, or cold reads), and the checkpoint per
// rank and in all. Touches no storage. Throws InputError as plan_checkpoint does.
std::string dry_run_text(const DlioWorkload& w, int64_t ranks);

// A checkpoint-only run (workflow.checkpoint without training) as an experiment result of kind
// workload: no repetitions, its workload record holding the checkpoint.
ExperimentResult checkpoint_experiment(const DlioWorkload& w, const CheckpointPlan& plan,
                                       const std::vector<CheckpointOp>& ops, int64_t ranks,
                                       bool interrupted);

// A stall analysis as results.json holds it (`workload.stall_analysis`).
results::StallRecord stall_record(const StallAnalysis& a);

}  // namespace pipeprof::harness::workload
