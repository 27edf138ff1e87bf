// Iterator: the running state of a Dataset. The public next() is non-virtual: it records the
// stage's statistics (elements, self time excluding inputs and blocking waits, sampled CPU share)
// and calls the operation's next_impl(). Workers are owned by their iterator and joined when it is
// destroyed; destroying the iterator returned by Dataset::iterate() first cancels the whole tree,
// so every worker wakes from its waits and simulated latencies at once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "pipeprof/pipelines/model.h"
#include "pipeprof/pipelines/tensor.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::pipelines {

class DatasetNode;

class StorageContext;

// Where an iterator sits in its tree: the model it reports to, the JSON path prefix of its
// pipeline (e.g. "stages[1].pipeline.") and the key of the stage that consumes it; and what the
// whole tree reads remote objects with (remote.h; nullptr: the default policy, no cache, not
// counted).
struct IteratorContext {
  std::shared_ptr<Model> model;
  std::string prefix;
  std::string parent;
  std::shared_ptr<const StorageContext> storage;
};

class Iterator {
 public:
  virtual ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element, or std::nullopt at the end of the sequence. Throws PipelineError (naming the
  // stage) when a stage fails; elements before the failure have been delivered.
  std::optional<Element> next();

  Model& model() const { return *model_; }
  const std::shared_ptr<Model>& shared_model() const { return model_; }
  // What the tree reads remote objects with (nullptr: the defaults).
  const std::shared_ptr<const StorageContext>& storage() const { return storage_; }
  // The model entry of this iterator's stage (nullptr for the tree's root handle).
  Node* node() const { return node_; }

 protected:
  // `dataset` may be nullptr for an iterator that is not a stage (the root handle).
  Iterator(const IteratorContext& ctx, const DatasetNode* dataset);

  virtual std::optional<Element> next_impl() = 0;

  // Context for an input iterator of this stage. `prefix` extends the JSON path for nested
  // pipelines ("inputs[1]." for zip, "pipeline." for interleave); empty for the main input.
  IteratorContext input_context(const std::string& nested = {}) const;
  Cancellation& cancellation() const { return model_->cancellation(); }
  NodeStats& stats() const { return node_->stats(); }
  const std::string& stage_name() const { return stage_name_; }

  // Trace names of this stage: its work spans ("map 'f'") and its waits ("map 'f': wait").
  trace::NameId trace_work_name() const { return trace_work_; }
  // A phase of the stage's work, e.g. trace_phase("read") -> "artificial: read" (interned once
  // per call: keep the id).
  trace::NameId trace_phase(std::string_view phase) const;
  // Stores the buffer occupancy statistic and records it as the "<stage>: buffered" counter.
  void set_buffered(int64_t n);

  // Marks a blocking wait on the calling thread: its time is counted as blocked, never as work of
  // this stage or of the stage that called it.
  class BlockedScope {
   public:
    explicit BlockedScope(Iterator& it);
    ~BlockedScope();
    BlockedScope(const BlockedScope&) = delete;
    BlockedScope& operator=(const BlockedScope&) = delete;

   private:
    Iterator& it_;
    int64_t start_ticks_;
  };

  // Marks work this stage does on one of its own worker threads (a map call, ...), with its
  // wall time and (sampled) CPU time.
  class WorkScope {
   public:
    explicit WorkScope(Iterator& it) : WorkScope(it, it.trace_work_) {}
    // `trace_name`: the span's name, e.g. a trace_phase() of the stage.
    WorkScope(Iterator& it, trace::NameId trace_name);
    ~WorkScope();
    WorkScope(const WorkScope&) = delete;
    WorkScope& operator=(const WorkScope&) = delete;

   private:
    Iterator& it_;
    trace::NameId trace_name_;
    int64_t start_ticks_;
    int64_t start_cpu_ns_;
  };

 private:
  // Statistics of next() accumulated here by the one thread that calls it at a time, and added to
  // the shared NodeStats every kStatsFlushEvery calls, after ~1 ms, at the end of the sequence and
  // on destruction: the hot path does no atomic read-modify-write.
  struct LocalStats {
    int64_t elements = 0;
    int64_t timed_calls = 0;
    int64_t self_ticks = 0;
    int64_t buffered_sum = 0;
    int64_t sampled_wall_ticks = 0;
    int64_t sampled_cpu_ns = 0;
    int64_t calls = 0;
    int64_t last_flush_ticks = 0;
  };
  void flush_stats();
  std::optional<Element> next_untimed();
  void count_element();

  LocalStats local_;
  std::shared_ptr<Model> model_;
  std::shared_ptr<const StorageContext> storage_;
  Node* node_ = nullptr;
  std::string key_;
  std::string prefix_;
  std::string stage_name_;
  trace::NameId trace_work_ = trace::Recorder::kNoArg;
  trace::NameId trace_wait_ = trace::Recorder::kNoArg;
  trace::NameId trace_buffered_ = trace::Recorder::kNoArg;
};

// Prepares the calling thread for pipeline work: minimal timer slack, so simulated latencies
// are precise. The operations call it first thing on every worker thread they own.
void prepare_worker_thread();
// The same, and names the thread "<stage> #<index>" in traces (and, shortened, for debuggers).
void prepare_worker_thread(const std::string& stage_name, int64_t index);

}  // namespace pipeprof::pipelines
