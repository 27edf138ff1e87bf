// The run engine's training loop: the one loop that every kind of run goes through (a catalog
// experiment's repetitions, a DLIO workload's simulated accelerators, the growing cache's epochs,
// every rank of an MPI job).
//
// N consumers, each with its own loader, run `epochs` epochs of at most `steps` steps. Per step:
//
//   load     from the end of the previous step (its barrier, when there is one) to the batch in
//            hand: the wait, a `get_next` span
//   compute  the step itself (LoopOptions::step), a `step` span
//   proc     load + compute
//   barrier  with LoopOptions::barrier, the wait for the other consumers (and, with a cluster,
//            the other ranks' collective): DLIO's simulated allreduce, a `barrier` span
//
// An epoch (an `epoch` span) starts when its consumers start it together (after the barrier, when
// there is one) and ends after its last step. Every consumer records its steps, its epochs and
// its loader's statistics (ConsumerRecord); metrics.h turns them into AU, throughput and waits.
//
// A loader is made once for the whole run (a repeated pipeline; LoaderLife::kRun) or afresh for
// every epoch (LoaderLife::kEpoch: state in the graph does not carry over, a folder is listed
// again); a consumer without a loader (open returns nullptr) has a batch in hand at once. When the
// loader has knobs the online tuner moves them while the loop runs; with fresh loaders its picks
// carry over from one epoch's loader to the next.
//
// The loop runs on the calling thread when there is one consumer and no real-time priority is
// asked for; otherwise each consumer has a thread. An error in a consumer stops the others, which
// are joined, and is rethrown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/model.h"

namespace pipeprof::harness {

struct StepRecord {
  int64_t load_ns = 0;
  int64_t compute_ns = 0;
  int64_t proc_ns = 0;
  int64_t barrier_ns = 0;
  int64_t samples = 0;
  int64_t bytes = 0;  // the batch's sample bytes, where the loader reports them
  // LoopOptions::after_step's time after this step (a checkpoint the training waited for): in the
  // epoch's wall time, in neither this step's proc nor the next one's load.
  int64_t pause_ns = 0;
};

struct EpochRecord {
  int64_t epoch = 0;     // from 1
  int64_t start_ns = 0;  // trace clock
  int64_t end_ns = 0;
  std::vector<StepRecord> steps;
  int64_t bytes_read = 0;  // storage bytes the loader's file sources read in this epoch
  bool complete = false;   // ran every step it was asked for (or, without a step count, to the
                           // loader's end)
  // With LoaderLife::kEpoch: the statistics of this epoch's loader, once it was torn down.
  std::vector<pipelines::NodeSnapshot> stages;
};

struct ConsumerRecord {
  int64_t rank = 0;
  std::vector<EpochRecord> epochs;
  std::vector<pipelines::NodeSnapshot> stages;  // the loader's statistics in the last epoch
  // What the online tuner moved: {"changes": [{epoch, time_ms, stage, knob, old, new, reason}],
  // "final": [{stage, knob, value}]}; null when it did not run.
  nlohmann::json autotune;
};

enum class LoaderLife {
  kRun,    // one loader for every epoch (its pipeline repeats)
  kEpoch,  // a fresh loader for every epoch
};

// The loop's watchdog. When nothing progresses for `report_after` (no step ends, no byte is read
// or written, no element comes from a producer process, no collective of the ranks completes) it
// reports what this process's threads wait for (pipelines/waits.h: the file, URL, producer
// process, the ranks' collective, the accelerator's step), oldest first, and again every
// `report_after` while the stall lasts. After `fail_after` the run fails (RunFailure naming them):
// the loaders are cancelled and the ranks' collective given up.
struct Watchdog {
  std::chrono::milliseconds report_after{std::chrono::seconds(60)};  // 0: never
  std::chrono::milliseconds fail_after{0};                           // 0: never
  // Receives each report (several lines, no final newline); nullptr: "warning: ..." on stderr.
  std::function<void(const std::string& report)> report;
};
// The watchdog every LoopOptions starts with: the command line sets it once from --stall-report
// and --stall-timeout (a process-wide choice, as Ctrl-C is).
void set_default_watchdog(const Watchdog& watchdog);
Watchdog default_watchdog();

struct LoopOptions {
  int64_t consumers = 1;
  int64_t epochs = 1;
  int64_t steps = 0;  // per epoch and consumer; 0: until the loader ends
  // The consumers meet after every step, and at the start of every epoch.
  bool barrier = false;
  // With a barrier: ranks of an MPI job. This process's consumers are ranks first_rank ..
  // first_rank + consumers - 1, and the last of them to arrive at a barrier runs the ranks'
  // collective, which also carries "stop" (Ctrl-C, a failed loader, a loader out of batches on any
  // rank), so that every rank stops after the same step. nullptr or one rank: this process alone.
  cluster::Cluster* cluster = nullptr;
  int64_t first_rank = 0;

  LoaderLife loader_life = LoaderLife::kRun;
  // The loader of the consumer of rank `rank` for `epoch` (from 1; with LoaderLife::kRun, called
  // once, for epoch 1, before the consumers gather). nullptr: no loader, a batch in hand at once.
  std::function<std::unique_ptr<pipelines::Iterator>(int64_t rank, int64_t epoch)> open;
  // The step, from `loaded_ns` (the batch in hand); it may release the batch.
  std::function<void(int64_t rank, pipelines::Element& batch, int64_t loaded_ns)> step;
  // The batch's samples and bytes into its record; by default its samples are the first tensor's
  // rows (1 for a scalar), and a consumer without a loader counts `batch_size` samples.
  std::function<void(const pipelines::Element& batch, bool has_loader, StepRecord& record)> count;

  // On the first consumer's thread, before every epoch (before its barrier).
  std::function<void(int64_t epoch)> before_epoch;
  // On the first consumer's thread, after each of its steps (epoch and step from 1; not timed as
  // the next step's load).
  std::function<void(int64_t epoch, int64_t step)> on_step;
  // On the first consumer's thread at the end of each of its epochs.
  std::function<void(const EpochRecord& epoch)> on_epoch_end;
  // On every consumer's thread after each of its steps (after the barrier): work every accelerator
  // does between two steps and the training waits for (DLIO's checkpoints). It returns true when
  // the step is such a pause, and must return the same on every consumer for the same step: with
  // a barrier the consumers then meet again before the pause ends, so that the slowest one's work
  // is in every consumer's pause_ns (outside AU's window) rather than in the next step's barrier
  // wait. An exception stops the run as a loader's does.
  std::function<bool(int64_t rank, int64_t epoch, int64_t step)> after_step;
  // On every consumer's thread after each of its complete epochs (outside the epoch's wall time;
  // the next epoch starts when every consumer is done with it). `steps`: the epoch's steps.
  std::function<void(int64_t rank, int64_t epoch, int64_t steps)> after_epoch;

  bool autotune = true;  // the online tuner on the loaders' knobs, when they have any
  // The consumers at real-time priority (SCHED_FIFO 1) where permitted; a note says so when not.
  bool realtime = false;
  const std::atomic<bool>* stop = nullptr;  // Ctrl-C: stop after the current step
  Watchdog watchdog = default_watchdog();

  // The consumers' lanes in a trace: their thread names and sort indexes.
  std::function<std::string(int64_t rank)> lane_name;
  int sort_index = -100;  // the first consumer's; the others follow
};

struct LoopRun {
  std::vector<ConsumerRecord> consumers;
  bool interrupted = false;  // stopped by LoopOptions::stop
  bool realtime = false;     // the consumers ran at real-time priority
  // Consumers whose loader ran out before the epoch's steps (they leave the barrier), a priority
  // that could not be had.
  std::vector<std::string> notes;
};

LoopRun run_loop(const LoopOptions& options);

}  // namespace pipeprof::harness
