// The runner: an experiment's pipeline around its training step, through the run engine's training
// loop (training_loop.h). Per repetition: for each epoch a fresh iterator; per element, the wait
// for the element and the step. Every repetition is kept;
// the median is reported. The ideal and bound come from the simulator; efficiency = ideal / median.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/autotune/simulator.h"
#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/metrics.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/results/records.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::harness {

// The machine's memcpy bandwidth in GB/s: the best of a few copies of `bytes` between buffers
// touched beforehand (so page faults are not counted).
double measure_memcpy_gb_per_s(size_t bytes = size_t{256} << 20, int copies = 4);
// The machine's fill rate in GB/s: the best of a few fills of `bytes` of float32 with the
// pseudo-random generator of random_tensors and fill_random (pipelines::fill_random), into a buffer
// touched beforehand.
double measure_fill_gb_per_s(size_t bytes = size_t{64} << 20, int fills = 3);

// The simulator on `spec` with the machine's rates: those in `rates` (non-zero: measured before);
// when the simulation needs a rate still missing, that rate (only those it asks for) is measured,
// written back to `rates`, and the spec simulated again. `options`' own rates are replaced.
using MachineRates = pipelines::sim::MeasuredRates;
autotune::SimResult simulate_measured(const nlohmann::json& spec, autotune::SimOptions options,
                                      MachineRates& rates);
// The rates measured (those above 0) as {"memcpy_gb_per_s": ..., ...}: results' and tune logs'
// measured_rates.
nlohmann::json to_json(const MachineRates& rates);

struct Repetition {
  double wall_ms = 0;
  int64_t steps = 0;
  WaitStats wait;
  double step_mean_ms = 0;
  double cpu_ms = 0;        // process CPU time (all threads)
  int64_t peak_rss_kb = 0;  // the process's peak resident set so far
  // Mean wait without the first element of each epoch (which waits for the pipeline to start):
  // the wait once producers keep up.
  double steady_wait_mean_ms = 0;
  // Accelerator utilization in %: the share of the wall time spent in steps (metrics.h,
  // loop_figures), or a workload's own definition (DLIO's window).
  double au_percentage = 0;
  int64_t samples = 0;  // samples consumed (every consumer's)
  bool interrupted = false;
};

// A repetition's figures from the training loop's records (wall time, CPU time and peak RSS are
// the caller's).
Repetition repetition_of(const LoopFigures& figures);

struct RunOptions {
  std::string step;    // empty: the experiment's own step
  int64_t epochs = 0;  // 0: the experiment's own
  int repetitions = 5;
  const std::atomic<bool>* stop =
      nullptr;  // set (e.g. by Ctrl-C) to stop after the current element
  std::function<void(int, const Repetition&)> on_repetition;
  // Run the online tuner (autotune/online_tuner.h) while the pipeline runs, when the spec has
  // kAutotune knobs. Its picks carry over from one epoch to the next of a repetition.
  bool autotune = true;
  // Record a trace of one extra, unmeasured run before the measured repetitions (kept even when
  // it is interrupted).
  bool trace = false;
  // What the pipeline reads remote objects with: a disk cache, the read policy and the counters
  // (pipeprof/pipelines/remote.h). nullptr: the defaults, not counted.
  std::shared_ptr<const pipelines::StorageContext> storage;
};

struct ExperimentResult {
  std::string id, description, step;
  std::string notice;  // e.g. the step `auto` fell back to
  int64_t epochs = 0;
  nlohmann::json spec;
  std::vector<Repetition> repetitions;
  double median_wall_ms = 0;
  WaitStats median_wait;
  int64_t elements = 0;  // steps per repetition
  std::optional<double> ideal_ms, bound_ms, efficiency, seed_ms, documented_ideal_ms;
  std::string simulation_note;  // why there is no ideal, when there is none
  bool interrupted = false;
  std::vector<pipelines::NodeSnapshot> stages;  // statistics of the last epoch run
  // What the online tuner picked in the last repetition: {"final": [{stage, knob, value}, ...],
  // "changes": [{epoch, time_ms, stage, knob, old, new, reason}, ...]}; null when not tuned.
  nlohmann::json autotune;
  std::shared_ptr<trace::Trace> trace;  // with RunOptions::trace: the traced run
  std::string ideal_basis;  // why ideal_ms is not the configured knobs' ideal, when it is not
  std::string trace_file;   // where that trace was written, relative to the results file
  double median_steady_wait_ms = 0;
  // The machine's rates measured in the same run (0: not measured): memcpy for pipelines with a
  // process-based transport (multiprocess, shared_store; it gives their floor too), the others
  // where the simulation of the ideal needed them.
  MachineRates rates;
  // The consumer's mean wait per element in the ideal (the simulator's), beside median_wait.
  std::optional<double> ideal_wait_ms;
  // Part B (the Ray article): its metric is the mean wait per batch, published as seed_wait_ms.
  std::string part;
  std::optional<double> seed_wait_ms;
  int64_t producers = 0;  // producer processes of a process source (0: none)
  // What the entry is in results.json, and the typed records its kind carries
  // (pipeprof/results/records.h): a DLIO workload's run, the ranks of a run under mpirun.
  results::EntryKind kind = results::EntryKind::kExperiment;
  std::optional<results::WorkloadRecord> workload;
  std::optional<results::RanksSummary> ranks;
  std::optional<results::LoaderWatchRecord> loader_watch;  // a watched PyTorch loop (Python module)
};

// Throws StepError for an unusable step.
ExperimentResult run_experiment(const Experiment& experiment, const RunOptions& options);

nlohmann::json to_json(const ExperimentResult& result);

// The medians over result.repetitions: median_wall_ms, median_wait, median_steady_wait_ms, and
// elements (the last repetition's steps).
void summarize_repetitions(ExperimentResult& result);

// A process-based transport's floor: the bytes its stages copied per element, and the time those
// copies take at the memcpy bandwidth measured in the same run (nullopt when not measured).
double bytes_copied_per_element(const ExperimentResult& result);
std::optional<double> copy_floor_ms_per_element(const ExperimentResult& result);

}  // namespace pipeprof::harness
