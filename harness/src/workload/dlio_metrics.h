// DLIO's metrics from the training loop's records, computed as DLIO's StatsCounter computes them
// (MLPerf Storage v2 and later):
//
//   per accelerator and epoch, with s = output.metric.exclude_start_steps (1) and
//   e = steps - 1 - exclude_end_steps (steps: total_training_steps, or the epoch's steps):
//     AU         = sum(compute[s..e]) / (epoch wall - sum(proc[..s-1]) - sum(proc[e+1..]))
//     throughput = (len(compute) - 2) / that same time x batch_size     (DLIO's "- 2", as it is)
//   per epoch: AU the mean over accelerators, throughput the sum
//   the run:   train_au_mean_percentage = mean over epochs of 100 x AU, its population stdev;
//              train_throughput_mean_samples_per_second likewise; train_io_mean_MB_per_second =
//              that x record_length / 2^20; train_au_meet_expectation = "success" when the mean
//              AU is at least metric.au.
//
// summary.json holds DLIO's keys in DLIO's order, so MLPerf Storage's tooling reads it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/harness/metrics.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_training.h"

namespace pipeprof::harness::workload {

// One accelerator's epoch: the run engine's metrics (pipeprof/harness/metrics.h) with the
// workload's window (output.metric's exclusions, `steps` planned steps) and batch size.
EpochMetrics epoch_metrics(const DlioWorkload& w, const EpochRecord& epoch, int64_t steps);

struct RunMetrics {
  int64_t accelerators = 0;
  std::vector<double> au_percentage;            // per epoch: mean over accelerators, in %
  std::vector<double> throughput_samples_per_s;  // per epoch: sum over accelerators
  double au_mean_percentage = 0, au_stdev_percentage = 0;
  double throughput_mean = 0, throughput_stdev = 0;
  double io_mean_mb_per_s = 0, io_stdev_mb_per_s = 0;  // MiB/s, as DLIO's "MB"
  bool meets_au = false;
  // Per accelerator: its AU (mean over epochs, in %) and samples/s (mean over epochs).
  std::vector<double> accelerator_au_percentage;
  std::vector<double> accelerator_throughput;
  // Beyond DLIO: the wait per step (load) over every step of every accelerator, and the bytes the
  // loaders read from storage per epoch (all accelerators).
  double wait_p50_ms = 0, wait_p99_ms = 0, wait_mean_ms = 0;
  double barrier_mean_ms = 0;
  std::vector<int64_t> bytes_read_per_epoch;
  std::vector<double> epoch_seconds;  // the slowest accelerator's epoch wall time
};

// This machine's memory in GiB (DLIO's host_memory_GB).
double host_memory_gb();

// The mean and the population standard deviation (numpy's std), as DLIO reports its figures.
double mean(const std::vector<double>& v);
double population_stdev(const std::vector<double>& v);

RunMetrics run_metrics(const DlioWorkload& w, const TrainRun& run, int64_t steps);

// DLIO's summary.json for the run (start and end as DLIO writes them: local time,
// "%Y-%m-%dT%H:%M:%S.%f").
// With `checkpoint`: DLIO's checkpoint keys in its metric (save_checkpoint_duration_mean_seconds,
// ..._io_mean_GB_per_second, their stdevs, load_..., checkpoint_size_GB). Without training
// (workflow.train off), no train_ keys.
nlohmann::ordered_json summary_json(const DlioWorkload& w, const RunMetrics& m,
                                    const std::string& start, const std::string& end,
                                    const results::CheckpointRecord* checkpoint = nullptr);

// DLIO's per_epoch_stats.json: per epoch its start, end and duration (seconds as "%.2f" strings).
// With checkpoints: DLIO's save_ckpt<N> / load_ckpt<N> entries in their epochs (a checkpoint-only
// run: epoch 1); `checkpoint_gib` is DLIO's checkpoint_size_GB, the throughput's numerator.
nlohmann::ordered_json per_epoch_stats_json(const TrainRun& run,
                                            const std::vector<CheckpointOp>& checkpoints = {},
                                            double checkpoint_gib = 0);

// DLIO's [METRIC] block, as it prints it at the end of a run.
std::string metric_block(const DlioWorkload& w, const RunMetrics& m);

// The local time as DLIO stamps its summary ("2026-11-25T14:37:25.123456").
std::string dlio_timestamp();

}  // namespace pipeprof::harness::workload
