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
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
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
  std::vector<std::string> notes;  // what could not be analysed, and why
};

// Never throws on odd input: an empty trace gives an Analysis with notes.
Analysis analyze(const Trace& trace);

nlohmann::json to_json(const Analysis& analysis);
// A readable multi-line report.
std::string format_text(const Analysis& analysis);

// The stage a span name belongs to: the text before ": " (looked for after a quoted function
// name, so "map 'a: b': wait" is stage "map 'a: b'"), or the whole name.
std::string_view stage_of(std::string_view span_name);

}  // namespace pipeprof::trace
