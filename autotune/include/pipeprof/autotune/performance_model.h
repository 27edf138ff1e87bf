// The performance model of a running iterator tree, built from its statistics (model.h).
//
// Per stage it keeps what the tuner needs to predict the effect of a knob: the wall latency of
// one element of the stage's own work, the CPU share of that work (CPU time / wall time: near 1
// for a stage that computes, near 0 for one that sleeps or waits for I/O), how many of the
// stage's elements one output element of the pipeline needs (the input/output ratio, e.g. 256
// for the stage below a batch(256)), its workers and its buffer.
//
// Prediction: every stage serves one output element of the pipeline in `demand = latency x
// ratio` of one thread's time, spread over the stage's workers (its parallelism, or that of the
// parallel interleave that runs it, else 1). The pipeline's output interval is that of its
// slowest stage: interval = max over stages of demand / workers. It is a throughput model: it
// ignores the start-up transient, which the online tuner handles with its saturation rule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipeprof/pipelines/model.h"

namespace pipeprof::autotune {

struct StageModel {
  std::string key, op, name, parent;
  int64_t elements = 0;
  double latency_ns = 0;    // wall time of one element of the stage's own work (0: unknown)
  double cpu_share = 0;     // CPU / wall of that work, 0..1
  bool cpu_known = false;   // whether any CPU sample was taken
  double ratio = 1;         // the stage's elements per output element of the pipeline
  int64_t parallelism = 0;  // the "parallelism" knob's value (0: no such knob)
  int64_t buffer_size = 0;  // the "buffer_size" knob's value (0: no such knob)
  int64_t active_workers = 0;
  int64_t buffered = 0;
  int64_t buffer_capacity = 0;
  int64_t blocked_ns = 0;    // time consumers of this stage waited for it
  int64_t max_fill_ns = 0;   // the longest single pull of its input by the stage's worker
  std::string worker_owner;  // key of the stage whose workers run this one ("": the consumer)

  bool known() const { return elements > 0 && latency_ns > 0; }
};

// Knob values to evaluate instead of the current ones: stage key -> knob name -> value.
using KnobOverrides = std::map<std::string, std::map<std::string, int64_t>>;

class PerformanceModel {
 public:
  // From the live model: statistics, knob values and the number of workers busy right now.
  static PerformanceModel from(const pipelines::Model& model);
  // From plain stage figures (tests, benchmarks).
  explicit PerformanceModel(std::vector<StageModel> stages);
  PerformanceModel() = default;

  const std::vector<StageModel>& stages() const { return stages_; }
  const StageModel* find(const std::string& key) const;

  // Workers that run stage `s` under the given knob values.
  int64_t workers(const StageModel& s, const KnobOverrides& overrides = {}) const;
  // Predicted output interval of the pipeline (ns per element); 0 when no stage is known yet.
  double interval_ns(const KnobOverrides& overrides = {}) const;
  // Cores the stages' workers burn: sum over stages with their own workers of workers x share,
  // where a share above `whole_core_share` counts as a whole core (a computing thread that shows
  // less was preempted, not idle) and one below `idle_share` as none (a waiting stage: sleep or
  // I/O). `unknown_share` stands in for stages with no CPU sample.
  double cpu_cores(const KnobOverrides& overrides, double unknown_share,
                   double whole_core_share = 0.25, double idle_share = 0.1) const;
  // The CPU share of the work a stage's workers do: its own, or for a parallel interleave, that
  // of the nested stages its workers run.
  double worker_share(const StageModel& s, double unknown_share) const;
  // Elements the stages may hold at once (buffers and parallel map slots).
  int64_t buffer_elements(const KnobOverrides& overrides = {}) const;

 private:
  static int64_t value_of(const StageModel& s, const std::string& knob, int64_t current,
                          const KnobOverrides& overrides);
  std::vector<StageModel> stages_;
};

}  // namespace pipeprof::autotune
