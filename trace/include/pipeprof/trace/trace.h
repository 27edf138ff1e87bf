// The Trace model: an in-memory timeline that every part of pipeprof reads. The recorder builds one
// from its buffers, the Chrome-JSON reader builds one from a file (ours or another tool's), and the
// analysis, the report's Gantt charts and the viewer consume it.
//
// Times are integer nanoseconds. For pipeprof traces they are CLOCK_MONOTONIC (trace/clock.h); for
// imported traces they are the file's timestamps converted from microseconds.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "pipeprof/trace/huge_pages.h"

namespace pipeprof::trace {

using StrId = uint32_t;
inline constexpr StrId kNoStr = std::numeric_limits<StrId>::max();
inline constexpr uint32_t kNoArgs = std::numeric_limits<uint32_t>::max();

// Interned strings: names, categories, lane names. Ids are dense indexes.
class StringTable {
 public:
  StrId intern(std::string_view s);
  const std::string& str(StrId id) const { return strings_[id]; }
  // kNoStr when absent.
  StrId find(std::string_view s) const;
  size_t size() const { return strings_.size(); }

 private:
  // Looked up by string_view without building a std::string (readers intern every event's name).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::vector<std::string> strings_;
  std::unordered_map<std::string, StrId, Hash, std::equal_to<>> index_;
};

// A complete ("X") event on one lane. `depth` is the nesting level on its lane (0 = outermost),
// computed by Trace::finalize().
struct Span {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  StrId name = kNoStr;
  StrId category = kNoStr;
  uint32_t args = kNoArgs;  // index into Trace::args (a JSON object's text), or kNoArgs
  uint32_t depth = 0;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

struct Instant {
  int64_t ts_ns = 0;
  StrId name = kNoStr;
  StrId category = kNoStr;
  uint32_t args = kNoArgs;
};

enum class LaneKind : uint8_t {
  kThread,     // a CPU thread
  kGpuStream,  // a GPU device's stream (kernels, copies, sets)
};

// One horizontal row of the timeline: a thread of a process, or a GPU stream.
struct Lane {
  uint32_t process = 0;  // index into Trace::processes
  int64_t tid = 0;       // thread id as the file gives it (for GPU lanes: the stream id)
  std::string name;      // thread name, or "GPU 0 stream 7"
  int64_t sort_index = 0;
  LaneKind kind = LaneKind::kThread;
  int32_t device = -1;            // GPU lanes: the device index
  int64_t stream = -1;            // GPU lanes: the stream id
  HugePageVector<Span> spans;        // sorted by (start, longer first) after finalize()
  HugePageVector<Instant> instants;  // sorted by time after finalize()
  uint32_t max_depth = 0;         // deepest nesting level + 1 (0 when empty)
};

struct Process {
  int64_t pid = 0;
  std::string name;
  int64_t sort_index = 0;
  std::vector<uint32_t> lanes;  // indexes into Trace::lanes, in display order after finalize()
};

// A counter track ("C" events): one series per (process, name, series key).
struct Counter {
  uint32_t process = 0;
  std::string name;  // "buffer map 'f'" or, for multi-series counters, "name.key"
  std::vector<std::pair<int64_t, double>> points;  // (ts_ns, value), sorted by time
};

// An arrow from one point of the timeline to another ("s"/"f" events, Kineto's "ac2g").
struct Flow {
  uint64_t id = 0;
  StrId name = kNoStr;
  StrId category = kNoStr;
  uint32_t from_lane = 0;
  int64_t from_ns = 0;
  uint32_t to_lane = 0;
  int64_t to_ns = 0;
};

class Trace {
 public:
  StringTable strings;
  std::vector<Process> processes;
  std::vector<Lane> lanes;
  std::vector<Counter> counters;
  HugePageVector<Flow> flows;
  std::vector<std::string> args;  // JSON objects' text, referenced by Span::args / Instant::args
  // Free-form metadata: "format" ("pipeprof", "kineto", "chrome"), "experiment", "step", ...
  std::map<std::string, std::string> metadata;

  // Finds or adds a process / a thread lane / a GPU-stream lane.
  uint32_t process(int64_t pid);
  uint32_t thread_lane(int64_t pid, int64_t tid);
  uint32_t gpu_lane(int64_t pid, int32_t device, int64_t stream);
  uint32_t add_args(std::string json_object);

  // Sorts spans, instants, counters and lanes, and computes depths, max_depth and the time range.
  // Orders processes by (sort_index, pid), which renumbers process indexes (Lane::process and
  // Counter::process are updated). Call after adding events and before reading.
  // `flows_ready`, when given, is called once the lanes are sorted and before `flows` is read:
  // whatever fills the flows on another thread meanwhile is waited for there.
  void finalize(const std::function<void()>& flows_ready = {});

  // [start_ns, end_ns] of all events (0, 0 when empty). Valid after finalize().
  int64_t start_ns() const { return start_ns_; }
  int64_t end_ns() const { return end_ns_; }
  size_t span_count() const;

  // Name of a span, or "" for kNoStr.
  std::string_view name(const Span& s) const;
  // Category of a span, or "" for kNoStr.
  std::string_view category(const Span& s) const;

 private:
  std::unordered_map<int64_t, uint32_t> process_index_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> thread_index_;
  std::map<std::tuple<int64_t, int32_t, int64_t>, uint32_t> gpu_index_;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
};

}  // namespace pipeprof::trace
