// The online tuner: a thread that watches a running pipeline's model (pipelines/model.h) and
// moves its kAutotune knobs one step at a time while the pipeline runs.
//
//   auto it = dataset.iterate();
//   autotune::OnlineTuner tuner(it->model(), {.cpu_budget = 2});
//   tuner.start();
//   while (auto e = it->next()) { ... }
//   tuner.stop();
//   for (const auto& c : tuner.changes()) ...   // what was moved, when and why
//   tuner.final_values();                        // what autotune picked
//
// One tuner (and one thread) may serve the iterators of several epochs in turn: constructed
// without a model, it is attach()ed to each iterator's model and detach()ed before that iterator
// goes, so an epoch starts and ends without creating or joining a thread.
//
// The rule (one decision per tick; see online_tuner.cc for the details):
// - A parallelism knob is a candidate when its stage is saturated: every worker is running the
//   stage's function and no finished element waits for the consumer, so one more worker would
//   start the next element sooner. Its predicted gain is the drop of the stage's share of the
//   output interval, latency x ratio x (1/p - 1/(p + 1)); before the stage has finished any
//   element its latency is unknown and the move is an exploration, taken only when no known
//   gain is available.
// - A buffer_size knob is a candidate when the consumer waited for the buffer and the buffer was
//   also seen full since the last decision (a bursty producer); the gain is the consumer's wait
//   per element. It doubles. The wait for the output's first element (the pipeline's start) does
//   not count.
// - The candidate with the largest gain is taken if the gain is at least `min_gain` of the
//   predicted output interval and the move keeps the CPU demand (sum over stages of workers x
//   CPU share) within `cpu_budget` cores and the buffered bytes within `memory_budget_bytes`.
//   A stage that sleeps or waits (CPU share near 0) costs almost nothing, so it may get more
//   workers than there are cores; a computing stage is held to the cores.
// - When the CPU demand exceeds the budget, the tuner takes a worker from the stage that burns
//   the most CPU first.
// Cadence: every `initial_period` while something changes or the stages are still warming up
// (fewer than `warmup_elements` elements from every tuned stage); otherwise the period doubles
// after every `quiet_ticks` ticks without a move, up to `max_period`. Stopping condition: the tuner
// never stops by itself; it settles (no move, period at its maximum) when no candidate passes the
// rules, and it ends on stop().
//
// Every move is a trace counter "<stage>: <knob>" (Knob::set records it) and an entry of
// changes().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "pipeprof/autotune/performance_model.h"
#include "pipeprof/pipelines/model.h"

namespace pipeprof::autotune {

struct TunerOptions {
  double cpu_budget = 0;                           // cores; 0: the machine's hardware threads
  int64_t memory_budget_bytes = int64_t{1} << 30;  // buffered bytes (element_bytes x elements)
  int64_t element_bytes = 0;  // bytes of one buffered element; 0: learned from observe_element
  std::chrono::nanoseconds initial_period = std::chrono::milliseconds(1);
  std::chrono::nanoseconds max_period = std::chrono::milliseconds(500);
  int64_t warmup_elements = 4;  // tuned stages' elements before the cadence backs off
  int64_t quiet_ticks = 4;      // ticks without a move before the period doubles
  double min_gain = 0.02;       // of the predicted output interval
  int64_t max_parallelism = 0;  // upper bound for parallelism knobs (0: the knob's own maximum)
};

struct KnobValue {
  std::string stage_key;  // e.g. "stages[1]"
  std::string stage;      // display name, e.g. "map 'mapped_function'"
  std::string knob;       // e.g. "parallelism"
  int64_t value = 0;
};

struct KnobChange {
  double time_ms = 0;  // since start(), or since the model was attached
  std::string stage_key, stage, knob;
  int64_t old_value = 0, new_value = 0;
  std::string reason;
};

class OnlineTuner {
 public:
  // The name of the tuner's thread (at most 15 characters, the kernel's limit).
  static constexpr const char* kThreadName = "pipeprof-tuner";

  explicit OnlineTuner(pipelines::Model& model, TunerOptions options = {});
  // No model yet: the thread, once started, waits for attach().
  explicit OnlineTuner(TunerOptions options);
  ~OnlineTuner();  // stops and joins the thread
  OnlineTuner(const OnlineTuner&) = delete;
  OnlineTuner& operator=(const OnlineTuner&) = delete;

  void start();  // starts the thread (no-op when running)
  void stop();   // wakes and joins the thread (no-op when stopped)
  bool running() const { return thread_.joinable(); }

  // Watches `model` from now on (the decision state starts afresh; changes() keeps what earlier
  // models saw). detach(): no tick touches the model once it returns; the thread, if running,
  // waits for the next attach(). final_values() reads the attached model.
  void attach(pipelines::Model& model);
  void detach();

  // One decision now, on the caller's thread (what the thread does every tick). Returns whether
  // a knob moved. Not to be called while the thread runs.
  bool tick();
  // The consumer may report the size of the elements it receives (memory budget).
  void observe_element_bytes(int64_t bytes);

  std::vector<KnobChange> changes() const;
  std::vector<KnobValue> final_values() const;  // every knob of the model, now
  std::chrono::nanoseconds period() const;
  int64_t ticks() const { return ticks_.load(std::memory_order_relaxed); }

 private:
  struct Candidate;
  void run();
  bool decide(const PerformanceModel& model, double unknown_share);
  void apply(const StageModel& stage, const std::string& knob, int64_t value,
             const std::string& reason);
  pipelines::Knob* knob_of(const std::string& stage_key, const std::string& knob) const;
  double process_cpu_rate();

  void reset_state();  // with model_mu_ held

  // The model and the decision state below are used by tick() with model_mu_ held.
  mutable std::mutex model_mu_;
  pipelines::Model* model_ = nullptr;
  TunerOptions options_;
  int64_t start_ns_ = 0;
  std::atomic<int64_t> element_bytes_{0};
  std::atomic<int64_t> ticks_{0};
  std::atomic<int64_t> period_ns_{0};
  int64_t quiet_ = 0;  // ticks without a move at the current period
  // Per stage: whether its buffer was seen full since the last move, since when its workers are
  // busy, and at the previous tick its consumers' wait and the output's elements.
  struct Window {
    bool full = false;
    int64_t busy_since = -1;  // since when a worker was busy at every tick (-1: not busy)
    int64_t blocked_ns = 0, root_elements = 0;
  };
  std::vector<std::pair<std::string, Window>> windows_;
  static constexpr int64_t kCpuWindowNs = 8'000'000;
  std::deque<std::pair<int64_t, int64_t>> cpu_samples_;  // (wall, process CPU) at each tick
  bool rate_known_ = false;

  mutable std::mutex mu_;  // guards changes_, stop_ and attached_
  std::condition_variable cv_;
  bool stop_ = false;
  bool attached_ = false;
  std::vector<KnobChange> changes_;
  std::thread thread_;
};

// Every knob of `model` and its value now.
std::vector<KnobValue> knob_values(const pipelines::Model& model);

// Sets each value's knob in `model` when the stage and knob exist (warm start from an earlier
// iterator of the same pipeline). Returns how many were set.
int64_t apply_values(pipelines::Model& model, const std::vector<KnobValue>& values);

nlohmann::json to_json(const std::vector<KnobChange>& changes);
nlohmann::json to_json(const std::vector<KnobValue>& values);

}  // namespace pipeprof::autotune
