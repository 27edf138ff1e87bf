// Trace analysis: why does the training loop wait, and how busy is the accelerator?
//
//   const trace::Analysis a = trace::analyze(trace::load_chrome_json("run.json"));
//   std::cout << trace::format_text(a);          // or trace::to_json(a).dump(2)
//
// For pipeprof traces (metadata "format" = "pipeprof", or a "train loop" lane) it gives the step
// breakdown (time in "step" spans vs. time waiting in "get_next"), the input-bound percentage with
// TensorBoard's thresholds, the busy percentage of every pipeline stage, the bottleneck stage and
// a suggestion. For any trace with GPU lanes (ours, PyTorch profiler / Kineto, ...) it gives the
// busy and idle percentage per device and stream, and the top kernels by total time.
//
// Rules:
// - The analysed window is the train loop's extent (its epoch, step and get_next spans), or the
//   whole trace when there is no train loop.
// - Time on a lane belongs to the innermost span covering it. A stage is busy while the innermost
//   span is one of its work spans (category "pipeline", stage = the name before ": "); time inside
//   a nested wait span or another stage's span is not its work. busy % = the stage's busy time
//   summed over its lanes / (workers x window), where workers = the most of its calls that ran at
//   once, or the last value of its "<stage>: parallelism" counter when that is larger. (Counting
//   the lanes its spans occur on would overcount: every epoch's iterator starts new threads, and a
//   sequential stage runs on whichever worker pulls from it.)
// - input-bound % = wait / (wait + step): < 5 % "not input-bound", 5-20 % "moderately
//   input-bound", >= 20 % "highly input-bound" (TensorBoard's profiler thresholds).
// - The bottleneck is the busiest stage, named only when the loop is input-bound.
// - GPU busy % = the union of a stream's (or a device's) kernel, memcpy and memset spans over the
//   trace's extent; annotation ranges (Kineto "gpu_user_annotation") are not activity.
//
// PyTorch profiler traces (any trace with "ProfilerStep#N" spans) get a per-step analysis
// (TorchAnalysis, rules in torch_steps.cc and docs/analysis.md):
// - A step is a ProfilerStep#N span, extended to the end of the GPU work launched inside it (the
//   ac2g flows from its launches) but not past the next step's start, so steps never overlap and
//   in practice only the last step grows.
// - The DataLoader wait is the union of "enumerate(DataLoader)#...__next__" spans (single- and
//   multi-process iterators) and "enumerate(DataPipe)#..." spans inside the step.
// - The step-time breakdown follows the TensorBoard PyTorch profiler plugin: each instant of the
//   step belongs to the highest-priority activity running then, Kernel > Memcpy > Memset >
//   Communication (NCCL kernels) > Runtime (cuda_runtime / cuda_driver) > DataLoader > CPU Exec
//   (operators on any CPU thread) > Other. The raw DataLoader wait is reported as well, since the
//   priority rule hides the part of it that overlaps GPU work.
// - input-bound % = DataLoader wait / step time, with the thresholds above.
// - GPU idle time is split as HolisticTraceAnalysis does: per stream, each gap between consecutive
//   kernels/copies/sets (its part inside the steps) is "kernel wait" when the gap is at most 30 ns
//   (HTA's consecutive_kernel_delay default), "host wait" when the next one was launched (its ac2g
//   flow's start) after the previous one ended, "other" otherwise (launched earlier, or no flow).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

struct StepBreakdown {
  bool present = false;     // a train loop with step or get_next spans was found
  int64_t steps = 0;        // "step" spans
  int64_t waits = 0;        // "get_next" spans
  int64_t step_ns = 0;      // total time in steps
  int64_t wait_ns = 0;      // total time waiting for input
  double mean_step_ms = 0;  // per step
  double mean_wait_ms = 0;  // per get_next
  double input_bound_pct = 0;
  std::string verdict;  // "not input-bound", "moderately input-bound", "highly input-bound"
};

struct StageUsage {
  std::string stage;             // display name, e.g. "map 'mapped_function'"
  int64_t spans = 0;             // work spans
  int64_t busy_ns = 0;           // busy time summed over its lanes, inside the window
  int lanes = 0;                 // lanes its work spans occur on
  int peak_concurrency = 0;      // the most of its calls running at once
  int workers = 0;               // max(1, peak_concurrency, last parallelism counter value)
  bool has_parallelism = false;  // a "<stage>: parallelism" counter exists
  double busy_pct = 0;           // busy_ns / (workers x window)
};

struct StreamUsage {
  int64_t pid = 0;
  int32_t device = -1;
  int64_t stream = -1;
  std::string lane;  // the lane's name
  int64_t spans = 0;
  int64_t busy_ns = 0;
  double busy_pct = 0;
  double idle_pct = 0;
};

struct DeviceUsage {
  int32_t device = -1;
  int streams = 0;
  int64_t busy_ns = 0;  // union over its streams
  double busy_pct = 0;
  double idle_pct = 0;
  int64_t kernel_ns = 0;  // sums (not unions) per kind of activity
  int64_t memcpy_ns = 0;
  int64_t memset_ns = 0;
};

struct KernelStat {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
  double mean_ns = 0;
  double share_pct = 0;  // of all kernel time
};

struct GpuUsage {
  bool present = false;   // the trace has GPU lanes
  int64_t window_ns = 0;  // the trace's extent, the denominator of busy %
  std::vector<DeviceUsage> devices;
  std::vector<StreamUsage> streams;
  std::vector<KernelStat> top_kernels;  // by total time, at most kTopKernels
};

// The TensorBoard PyTorch profiler plugin's step-time categories, highest priority first.
enum class StepCategory : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kCommunication,
  kRuntime,
  kDataLoader,
  kCpuExec,
  kOther,
};
inline constexpr size_t kStepCategories = 8;
// "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other".
std::string_view step_category_name(StepCategory c);

// One training step: a PyTorch ProfilerStep#N, or for pipeprof traces a train loop step (its
// get_next wait is DataLoader, the step span CPU Exec).
struct StepTime {
  std::string name;  // "ProfilerStep#12", "step 3"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::array<int64_t, kStepCategories> breakdown_ns{};  // by the priority rule; sums to the step
  int64_t dataloader_ns = 0;                            // raw DataLoader wait (no priority rule)
  int64_t optimizer_ns = 0;                             // Optimizer.step# spans
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct GpuIdle {
  int64_t idle_ns = 0;  // gaps between a stream's activities, summed over streams, inside steps
  int64_t host_wait_ns = 0;
  int64_t kernel_wait_ns = 0;
  int64_t other_ns = 0;
};

struct Suggestion {
  std::string knob;  // "num_workers", "pin_memory", ...
  std::string text;  // one sentence with the figure from the trace that backs it
};

struct TorchAnalysis {
  bool present = false;  // the trace has ProfilerStep#N spans
  // The loader's iterator class as the spans name it ("_SingleProcessDataLoaderIter",
  // "_MultiProcessingDataLoaderIter", "DataPipe"), "" when no DataLoader span was seen.
  std::string iterator;
  std::vector<StepTime> steps;  // in time order
  int64_t step_ns = 0;          // sums over the steps
  std::array<int64_t, kStepCategories> breakdown_ns{};
  int64_t dataloader_ns = 0;
  int64_t optimizer_ns = 0;
  double mean_step_ms = 0;
  double mean_dataloader_ms = 0;  // per step
  double input_bound_pct = 0;     // dataloader_ns / step_ns
  std::string verdict;
  bool has_gpu = false;
  GpuIdle gpu_idle;
  int64_t pageable_memcpy_ns = 0;  // "Memcpy HtoD (Pageable -> Device)" inside the steps
  std::vector<Suggestion> suggestions;
};

// A PyTorch DataLoader watched by the Python module (`pipeprof.watch`), read back from its trace.
// Such a trace has the metadata "loader" = "torch.utils.data.DataLoader" and the loader's settings
// ("num_workers", "prefetch_factor", "pin_memory", "persistent_workers", "batch_size", "cpus",
// "device"), a "train loop" lane (get_next, step, epoch), a "pin_memory" lane in the loop's
// process, and one process per worker process named "DataLoader worker N" whose lane holds
// "fetch" spans (one per batch or sample asked of it) around "__getitem__" / "__getitems__" /
// "next(dataset)" and "collate_fn" spans, "wait for index" spans between fetches and a "worker
// started" instant. Workers that died are in the metadata "dead_workers" (a JSON array of
// {"worker", "pid", "exitcode"}). Rules:
// - a worker's busy % = its fetch spans / the time it ran inside the loop's window (from each of
//   its "worker started" instants to the next one or the window's end, and without
//   persistent_workers no further than the end of the epoch it started in; the whole window
//   without one), so its process starting is not idle time; the workers' busy % = their fetch
//   spans / their running time summed (a worker of the settings without spans: idle the whole
//   window);
//   its pids are every process it ran as (a new one per epoch without persistent_workers:
//   restarts = starts - workers);
// - ready % = the share of get_next waits under 1 ms: how often a batch was there when the loop
//   asked; the wait percentiles and ready % leave out each epoch's first wait (its start-up, given
//   as first_wait_ms), and steady input-bound % is the input-bound % without them;
// - the suggestions (in PyTorch's terms, each with the figures behind it) follow docs/python.md.
struct LoaderWorker {
  int worker = 0;
  std::vector<int64_t> pids;  // in the order they started
  int64_t fetches = 0;
  int64_t items = 0;  // __getitem__ calls, or samples of __getitems__ / next(dataset) calls
  int64_t busy_ns = 0;
  int64_t running_ns = 0;  // the time it ran inside the window: busy_pct's denominator
  int64_t getitem_ns = 0;  // __getitem__, __getitems__ or next(dataset)
  int64_t collate_ns = 0;
  double busy_pct = 0;
  bool died = false;
  int exitcode = 0;  // of a worker that died: negative, the signal
};

struct LoaderAnalysis {
  bool present = false;
  int num_workers = 0;  // from the settings
  int prefetch_factor = 0;
  bool pin_memory = false;
  bool persistent_workers = false;
  int batch_size = 0;
  int cpus = 0;
  std::string device;  // where the step runs ("cuda", "cpu"), "" when not said
  int64_t batches = 0;  // the loop's steps (its get_next waits include each epoch's last, empty one)
  double wait_p50_ms = 0;
  double wait_p99_ms = 0;
  double ready_pct = 0;
  // Each epoch's first wait (the iterator and its workers starting, the prefetch filling) apart
  // from the rest: the steady input-bound % leaves them out, and so do the percentiles.
  int64_t epochs = 0;
  double first_wait_ms = 0;  // summed over the epochs
  double steady_input_bound_pct = 0;
  double workers_busy_pct = 0;  // over all the workers' running time
  double pin_memory_busy_pct = 0;
  int64_t worker_starts = 0;
  int64_t restarts = 0;
  double mean_start_ms = 0;  // from a worker's start to the end of its first fetch
  double getitem_share_pct = 0;  // of the workers' busy time
  double collate_share_pct = 0;
  double mean_item_us = 0;  // per item of __getitem__ / __getitems__
  std::vector<LoaderWorker> workers;
  std::vector<Suggestion> suggestions;
  std::vector<std::string> notes;
};

struct Analysis {
  static constexpr size_t kTopKernels = 10;

  std::string format;           // the trace's metadata "format" ("" when absent)
  std::string experiment;       // metadata "experiment" when present
  int64_t window_start_ns = 0;  // the analysed window
  int64_t window_end_ns = 0;
  int64_t spans = 0;  // spans in the trace
  StepBreakdown steps;
  std::vector<StageUsage> stages;  // busiest first
  std::string bottleneck;          // a stage name, or "" when not input-bound or unknown
  std::string suggestion;          // one sentence; "" when there is nothing to judge
  GpuUsage gpu;
  TorchAnalysis torch;
  LoaderAnalysis loader;
  // Per step, for the viewer's steps window: the PyTorch steps, else the train loop's steps.
  std::vector<StepTime> step_times;
  std::vector<std::string> notes;  // what could not be analysed, and why
};

// The verdict for an input-bound percentage: "not input-bound" (< 5), "moderately input-bound"
// (< 20), "highly input-bound".
std::string_view input_bound_verdict(double pct);

// Never throws on odd input: an empty trace gives an Analysis with notes.
Analysis analyze(const Trace& trace);

nlohmann::json to_json(const Analysis& analysis);
// A readable multi-line report.
std::string format_text(const Analysis& analysis);

// The stage a span name belongs to: the text before ": " (looked for after a quoted function
// name, so "map 'a: b': wait" is stage "map 'a: b'"), or the whole name.
std::string_view stage_of(std::string_view span_name);

}  // namespace pipeprof::trace
