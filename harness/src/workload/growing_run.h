// EXPERIMENTS.md C3, a local sample cache that grows every epoch (pipeprof.remote.mode:
// growing_cache): the workload's training files are served by nginx (ObjectServer) as the remote
// store; `samplers` processes fetch them and write TFRecord shards of `shard_samples` tf.Examples
// into <scratch>/growing_cache (GrowingSampleCache); the training job lists the folder at the start
// of every epoch and trains on every complete shard, so the training set grows epoch by epoch;
// before an epoch the oldest shards beyond the disk budget (cache_budget_mib) are evicted.
// Deserialization (parse_example) runs in the readers' threads (a parallel map), never in the
// training loop. Per epoch: shards and samples seen, steps, time, AU, wait per step, and the
// deserialization rate per reader thread (the seed needs 300-600 MB/s).
//
// The loader: list_files(shards, shuffled) -> interleave(tfrecord, read_threads) ->
// map(parse_example: image bytes, label int64; read_threads, named "deserialize") -> batch ->
// prefetch(prefetch_size).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/harness/runner.h"
#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {

struct GrowingEpoch {
  int64_t epoch = 0;  // from 1
  int64_t shards = 0, samples = 0, steps = 0;
  int64_t evicted_shards = 0;  // removed for the budget before the epoch
  double seconds = 0;
  double au_percentage = 0;  // DLIO's: the first step excluded
  double wait_mean_ms = 0, wait_p99_ms = 0;
  int64_t bytes = 0;                        // record bytes deserialized
  double deserialize_mb_s_per_thread = 0;   // MB/s (1e6) in one reader thread
};

struct GrowingRun {
  std::vector<GrowingEpoch> epochs;
  double time_to_first_step_s = 0;  // from the samplers' start to the first batch in hand
  int64_t samplers = 0, shard_samples = 0;
  nlohmann::json spec;  // the loader
  bool interrupted = false;
};

// Runs it (InputError / pipelines::RemoteError on bad settings or a failed sampler). `on_epoch`
// is called after each epoch.
GrowingRun run_growing_cache(const DlioWorkload& w, const std::filesystem::path& scratch,
                             const std::atomic<bool>* stop,
                             const std::function<void(const GrowingEpoch&)>& on_epoch = {});

// The run as an experiment entry: a repetition per epoch, its ideal the epoch's compute time, and
// a "workload" object with the settings and "growing_cache": the per-epoch figures.
nlohmann::json growing_entry(const DlioWorkload& w, const GrowingRun& run);
std::string growing_table(const GrowingRun& run);

}  // namespace pipeprof::harness::workload
