// Builds a Trace from Chrome-JSON events in file order, independent of the JSON parser: lanes are
// keyed by (pid, tid) while reading and resolved at the end (a thread becomes a GPU lane when its
// thread_name metadata carries device/stream, or when it holds GPU events with a "stream" arg, as
// Kineto writes them), B/E pairs are matched per thread, flow points are chained per (category,
// id) in time order, and process/thread metadata is applied whatever its position in the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

enum class FlowPhase : uint8_t { kStart, kStep, kFinish };

class TraceBuilder {
 public:
  // `source` names the input in errors (TraceFormatError).
  explicit TraceBuilder(std::string source);

  StringTable& strings() { return trace_.strings; }
  uint32_t add_args(std::string_view json_object) {
    return trace_.add_args(std::string(json_object));
  }

  // An id for a pid/tid given as a string: its number when it is one, else a stable synthetic id
  // (negative, far from real ids) whose process/thread is named after the string.
  int64_t pid_from_string(std::string_view s);
  int64_t tid_from_string(int64_t pid, std::string_view s);

  // The raw lane of (pid, tid), created on first use.
  uint32_t lane(int64_t pid, int64_t tid);
  void note_process(int64_t pid) { trace_.process(pid); }

  void add_span(uint32_t lane, const Span& s);
  void add_instant(uint32_t lane, const Instant& i);
  // B/E pairs. `offset` locates the event in errors: an E without an open B on its thread, or an
  // E before its B, throws TraceFormatError.
  void begin(uint32_t lane, int64_t ts_ns, StrId name, StrId category, uint32_t args);
  void end(uint32_t lane, int64_t ts_ns, uint32_t args, uint64_t offset);
  // What marks a lane as a GPU stream, strongest first: thread_name metadata with a device and a
  // stream (pipeprof's writer), device work on it (kernels, copies, sets), a sync event naming a
  // stream (Kineto puts those on the stream's lane, pipeprof's writer on the calling thread's).
  enum class GpuMark : uint8_t { kMetadata, kDeviceWork, kSync };
  // Marks a lane as a GPU stream. A stronger mark replaces a weaker one (a mark from metadata also
  // keeps the thread's name); between equal marks the first wins. A lane marked only by syncs stays
  // a CPU thread if it also holds host spans (note_host_span).
  void mark_gpu(uint32_t lane, int32_t device, int64_t stream, GpuMark mark);
  // A span of the lane that only a CPU thread records (any category but the GPU's: an API call, a
  // step, a pipeline stage).
  void note_host_span(uint32_t lane) { raw_[lane].host_span = true; }

  void counter(int64_t pid, std::string_view name, int64_t ts_ns, double value);
  void flow(FlowPhase phase, uint64_t id, StrId category, StrId name, uint32_t lane, int64_t ts_ns);

  void process_name(int64_t pid, std::string_view name);
  void process_sort_index(int64_t pid, int64_t index);
  void thread_name(int64_t pid, int64_t tid, std::string_view name);
  void thread_sort_index(int64_t pid, int64_t tid, int64_t index);
  void metadata(std::string key, std::string value);

  // Resolves lanes and flows, closes B events left open at the end of the trace (their count is
  // recorded as metadata "unclosed_spans"), and returns the finalized Trace.
  Trace finish() &&;

 private:
  struct RawLane {
    int64_t pid = 0;
    int64_t tid = 0;
    HugePageVector<Span> spans;
    HugePageVector<Instant> instants;
    std::vector<Span> open;  // B events waiting for their E (dur unset)
    std::optional<std::string> name;
    std::optional<int64_t> sort_index;
    bool gpu = false;
    bool gpu_from_metadata = false;
    bool host_span = false;
    GpuMark gpu_mark = GpuMark::kSync;
    int32_t device = -1;
    int64_t stream = -1;
  };
  struct FlowPoint {
    uint64_t id;
    StrId category;
    StrId name;
    FlowPhase phase;
    uint32_t lane;
    int64_t ts_ns;
  };
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& k) const noexcept {
      return std::hash<int64_t>{}(k.first) * 31 + std::hash<int64_t>{}(k.second);
    }
  };
  struct ProcessMeta {
    std::optional<std::string> name;
    std::optional<int64_t> sort_index;
  };

  void extend(int64_t ts_ns);
  int64_t synthetic_id(std::string_view s);
  std::vector<uint32_t> resolve_lanes();
  void resolve_flows(const std::vector<uint32_t>& lane_of_raw);

  std::string source_;
  Trace trace_;
  std::vector<RawLane> raw_;
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> raw_index_;
  std::pair<int64_t, int64_t> last_key_{0, 0};
  uint32_t last_lane_ = UINT32_MAX;
  std::unordered_map<int64_t, ProcessMeta> process_meta_;
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash>
      counter_index_;  // (pid, name)
  HugePageVector<FlowPoint> flow_points_;
  std::unordered_map<std::string, int64_t> synthetic_ids_;
  std::unordered_map<int64_t, std::string> synthetic_names_;
  bool any_ts_ = false;
  int64_t max_ts_ = 0;
};

}  // namespace pipeprof::trace
