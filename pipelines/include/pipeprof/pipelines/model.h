// The live model of a running pipeline: one entry per stage (operation) of the iterator tree with
// its statistics and knobs. Iterators of the same stage (e.g. the per-input pipelines an interleave
// opens one after another) share one entry, so the model has the shape of the Dataset graph.
// The online tuner reads statistics from here and writes knobs; the harness and trace read it too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pipeprof::pipelines {

// Passed as a parallelism or buffer size, asks for a knob that the tuner may move.
inline constexpr int64_t kAutotune = -1;

// A tunable integer parameter (parallelism, buffer size). Iterators that use it subscribe with
// their own mutex and condition variable; set() stores the value and wakes every subscriber under
// its lock, so a change takes effect at once and no waiter misses it.
class Knob {
 public:
  Knob(std::string name, int64_t min, int64_t max, int64_t initial);
  Knob(const Knob&) = delete;
  Knob& operator=(const Knob&) = delete;

  const std::string& name() const { return name_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  int64_t value() const { return value_.load(std::memory_order_acquire); }
  // Clamps to [min, max]; returns the value stored.
  int64_t set(int64_t value);
  // Number of set() calls that changed the value.
  int64_t changes() const { return changes_.load(std::memory_order_relaxed); }

  // Every value set is also recorded as this trace counter ("<stage>: <knob>") while tracing.
  void set_trace_counter(uint32_t name_id) { trace_counter_ = name_id; }
  void record_value() const;  // records the current value now (when tracing)

  void subscribe(std::mutex* mu, std::condition_variable* cv);
  void unsubscribe(std::mutex* mu, std::condition_variable* cv);

 private:
  std::string name_;
  int64_t min_;
  int64_t max_;
  std::atomic<int64_t> value_;
  std::atomic<int64_t> changes_{0};
  uint32_t trace_counter_ = 0xffffffffu;
  std::mutex subscribers_mu_;
  std::vector<std::pair<std::mutex*, std::condition_variable*>> subscribers_;
};

// Counters of one stage, updated lock-free by the threads that run it. Times in nanoseconds.
// next() is timed on a sample of calls (see iterator.cc): timed_self_ns covers timed_calls of the
// calls; NodeSnapshot scales it to all of them.
struct NodeStats {
  std::atomic<int64_t> elements{0};         // elements produced by next()
  std::atomic<int64_t> calls{0};            // next() calls
  std::atomic<int64_t> timed_calls{0};      // next() calls that were timed
  std::atomic<int64_t> timed_self_ns{0};    // their time inside next() minus inputs and waits
  std::atomic<int64_t> work_wall_ns{0};     // time of work done on worker threads (map calls, ...)
  std::atomic<int64_t> blocked_ns{0};       // time next() or workers spent blocked waiting
  std::atomic<int64_t> sampled_wall_ns{0};  // wall and CPU time of the sampled calls, used to
  std::atomic<int64_t> sampled_cpu_ns{0};   // estimate the CPU share without a syscall per call
  std::atomic<int64_t> buffered{0};         // elements currently buffered
  std::atomic<int64_t> buffer_capacity{0};  // current buffer bound (0 when unbuffered)
  std::atomic<int64_t> buffered_sum{0};     // sum of `buffered` seen at each next(), for the mean
  std::atomic<int64_t> active_workers{0};   // workers currently doing work
  std::atomic<int64_t> bytes_copied{0};     // payload bytes copied by a transport (multiprocess)
  // The longest single pull of the input by the stage's own worker (prefetch's fill), so a tuner
  // sees a bursty producer's gaps before they empty the buffer.
  std::atomic<int64_t> max_fill_ns{0};
  // Storage reads of a file source (tfrecord, fixed_length_records): bytes read from files, read
  // calls, their total time, files opened and the sum of their times to first byte (open to the
  // end of the first read).
  std::atomic<int64_t> bytes_read{0};
  std::atomic<int64_t> read_calls{0};
  std::atomic<int64_t> read_ns{0};
  std::atomic<int64_t> files_opened{0};
  std::atomic<int64_t> first_byte_ns{0};
  // The last "<stage>: bytes/s" counter sample (trace ticks, bytes_read then).
  std::atomic<int64_t> rate_sample_ticks{0};
  std::atomic<int64_t> rate_sample_bytes{0};
};

// A plain copy of a stage's statistics with derived figures.
struct NodeSnapshot {
  std::string key;     // position in the graph, e.g. "3/1" (the stage below stage 3's input)
  std::string op;      // operation name, e.g. "map"
  std::string name;    // display name, e.g. "map 'mapped_function'"
  std::string parent;  // key of the consuming stage ("" for the output stage)
  int64_t elements = 0;
  int64_t self_wall_ns = 0;  // estimated: timed self time scaled to all calls
  int64_t work_wall_ns = 0;
  int64_t blocked_ns = 0;
  double wall_ns_per_element = 0;  // (self + work) per element
  double cpu_ns_per_element = 0;   // estimated from the sampled CPU share
  double cpu_share = 0;            // CPU time / wall time of the work, 0..1 (1 = burns CPU)
  int64_t buffered = 0;
  int64_t buffer_capacity = 0;
  double mean_buffered = 0;
  int64_t bytes_copied = 0;  // payload bytes the stage's transport copied (0 for most stages)
  int64_t max_fill_ns = 0;   // the longest single pull of the input by the stage's worker
  // Storage reads (file sources only; 0 elsewhere).
  int64_t bytes_read = 0;
  int64_t read_calls = 0;
  int64_t files_opened = 0;
  double read_mb_per_s = 0;              // bytes_read / time inside read calls, in MB/s (1e6)
  double mean_first_byte_ns = 0;         // time to first byte per file
  std::vector<std::pair<std::string, int64_t>> knobs;  // name, current value
};

class Model;

// One stage of the model.
class Node {
 public:
  Node(std::string key, std::string op, std::string name, std::string parent)
      : key_(std::move(key)),
        op_(std::move(op)),
        name_(std::move(name)),
        parent_(std::move(parent)) {}
  const std::string& key() const { return key_; }
  const std::string& op() const { return op_; }
  const std::string& name() const { return name_; }
  const std::string& parent() const { return parent_; }
  NodeStats& stats() { return stats_; }
  const NodeStats& stats() const { return stats_; }

  // The knob called `name` of this stage, created on first use (shared by all its iterators).
  Knob& knob(const std::string& name, int64_t min, int64_t max, int64_t initial);
  std::vector<Knob*> knobs() const;
  NodeSnapshot snapshot() const;

 private:
  std::string key_, op_, name_, parent_;
  NodeStats stats_;
  mutable std::mutex knobs_mu_;
  std::vector<std::unique_ptr<Knob>> knobs_;
};

// Cooperative cancellation of one iterator tree: set when the tree is destroyed, so that workers
// blocked in waits or simulated latencies give up at once.
class Cancellation {
 public:
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  void cancel();
  // Waits until `deadline_ns` (trace clock) or cancellation; returns false when cancelled.
  bool wait_until(int64_t deadline_ns);

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

class Model {
 public:
  // Registers (or finds) the stage at `key`.
  Node& node(const std::string& key, const std::string& op, const std::string& name,
             const std::string& parent);
  std::vector<Node*> nodes() const;  // in registration order (output stage first)
  std::vector<Knob*> knobs() const;
  std::vector<NodeSnapshot> snapshot() const;
  // Records every knob's current value as a trace counter (when tracing), e.g. at an epoch's start.
  void record_knobs() const;
  Cancellation& cancellation() { return cancellation_; }

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_;
  Cancellation cancellation_;
};

}  // namespace pipeprof::pipelines
