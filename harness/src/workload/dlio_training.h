// DLIO's training loop, emulated on the run engine's loop (pipeprof/harness/training_loop.h): N
// simulated accelerators in one process, each a consumer with its own shard of the dataset and its
// own loader (the workload's pipeline for rank k of N), meeting after every step at the barrier
// DLIO uses to simulate the allreduce. Per step, as DLIO times it:
//
//   load     from the end of the previous step's barrier to the batch in hand (the wait)
//   compute  the emulated step: a sleep of train.computation_time, drawn per step
//   proc     load + compute
//   barrier  the wait for the other accelerators (in the epoch's wall time, in no step's proc)
//
// An epoch starts at the block timestamp DLIO takes before it asks for the loader, and ends after
// the last step; metrics (dlio_metrics.h) are computed from these records.
//
// The training loops run at real-time priority where the process may (SCHED_FIFO 1; the loaders'
// threads stay at the normal priority): an accelerator does not wait for a host core, and with
// dozens of simulated accelerators on a few cores a loop woken by the barrier would otherwise wait
// for the scheduler for milliseconds (measured: 32 accelerators on 2 cores, AU 84% at normal
// priority, 99.4% at real-time, with the same loaders and waits of under 1 ms for a batch).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/harness/training_loop.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/trace/trace.h"
#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {

enum class LoaderMode {
  kPipeline,   // read the dataset through the workload's pipeline
  kSynthetic,  // no loader: a batch is in hand at once (DS-Analyzer's synthetic pass)
};

struct TrainOptions {
  int64_t accelerators = 1;
  int64_t epochs = 1;
  int64_t steps = 0;  // per epoch and accelerator (steps_per_epoch)
  LoaderMode mode = LoaderMode::kPipeline;
  bool drop_caches = false;  // drop the training files from the page cache before every epoch
  bool autotune = true;      // run the online tuner on the loaders' knobs, when they have any
  bool trace = false;        // record a trace of the run
  // Run the training loops at real-time priority (SCHED_FIFO 1) where permitted; a note says so
  // when not.
  bool realtime = true;
  const std::atomic<bool>* stop = nullptr;  // Ctrl-C: stop after the current step
  // Called on the first accelerator's thread after each of its steps (epoch from 1, step from 1).
  std::function<void(int64_t epoch, int64_t step)> on_step;
  // Called on the first accelerator's thread at the end of each of its epochs (from 1).
  std::function<void(int64_t epoch)> on_epoch_end;
  // Called on every accelerator's thread after each step and after each complete epoch (the run
  // engine's after_step / after_epoch: DLIO's checkpoints, which the training waits for).
  std::function<bool(int64_t rank, int64_t epoch, int64_t step)> after_step;
  std::function<void(int64_t rank, int64_t epoch, int64_t steps)> after_epoch;
  // Called on each accelerator's thread when its loader has opened (rank: of all ranks), with the
  // loader's live model: its stages' statistics, valid until that accelerator's loop ends (read
  // them on its own thread, in after_step).
  std::function<void(int64_t rank, pipelines::Model& loader)> on_loader;
  // The files to read (paths or URLs); empty: the workload's training files (training_files).
  std::vector<std::string> files;
  // What the loaders read remote objects with (a remote workload's: its cache and counters).
  std::shared_ptr<const pipelines::StorageContext> storage;
  // Ranks (an MPI job): this process's accelerators are ranks cluster->rank() x accelerators + k
  // of cluster->size() x accelerators, and the per-step barrier spans every rank: the last local
  // accelerator to arrive runs the ranks' collective, which also carries "stop" (Ctrl-C, a failed
  // loader, a loader out of batches on any rank), so every rank stops after the same step.
  // nullptr or one rank: this process alone.
  cluster::Cluster* cluster = nullptr;
};

struct TrainRun {
  std::vector<ConsumerRecord> accelerators;
  std::vector<std::string> files;  // the training files found
  nlohmann::json spec;             // rank 0's loader
  bool interrupted = false;
  std::shared_ptr<trace::Trace> trace;  // with TrainOptions::trace
  bool realtime = false;                // the training loops ran at real-time priority
  // Accelerators whose loader ran out before the epoch's steps (they leave the barrier).
  std::vector<std::string> notes;
};

// Runs the training emulation. Throws InputError when the training files are missing (naming the
// folder and how to generate them), and rethrows the first error of an accelerator's loader (the
// others are stopped and joined first).
TrainRun run_training(const DlioWorkload& w, const TrainOptions& options);

// What a batch of a workload's loader holds: its samples' bytes together (the samples stand as
// their sizes), and its samples.
int64_t batch_bytes(const pipelines::Element& batch);
int64_t batch_samples(const pipelines::Element& batch);

// The training files as DLIO lists them (sorted; at most num_files_train, an InputError when there
// are fewer). `sizes`, when given, gets each one's size in bytes (an S3 dataset's from the same
// listing).
std::vector<std::string> training_files(const DlioWorkload& w,
                                        const pipelines::StorageContext* storage = nullptr,
                                        std::vector<uint64_t>* sizes = nullptr);

// What an S3 workload's loaders and checkpoints read and write with (storage.storage_type: s3):
// its storage_options, the attempts it allows, and `stop` (Ctrl-C ends a request in progress);
// rank r of an mpirun job uses endpoint r % N of a comma-separated endpoint_url. nullptr for
// other workloads.
std::shared_ptr<pipelines::StorageContext> s3_storage(const DlioWorkload& w, const std::atomic<bool>* stop,
                                                      int64_t rank = 0);

}  // namespace pipeprof::harness::workload
