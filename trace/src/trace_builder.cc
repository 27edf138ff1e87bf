#include "trace_builder.h"

#include <algorithm>
#include <future>
#include <system_error>
#include <tuple>
#include <utility>

#include "json_text.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

// Synthetic ids for string pids/tids: negative and far from any real process or thread id.
constexpr int64_t kSyntheticIdBase = -(int64_t{1} << 40);

// From this many flow points on, finish() resolves the flows on a thread of their own.
constexpr size_t kFlowPointsForAThread = 64 * 1024;

}  // namespace

TraceBuilder::TraceBuilder(std::string source) : source_(std::move(source)) {}

int64_t TraceBuilder::synthetic_id(std::string_view s) {
  if (const auto n = json_text::parse_integer(s)) return *n;
  const std::string key(s);
  if (const auto it = synthetic_ids_.find(key); it != synthetic_ids_.end()) return it->second;
  const int64_t id = kSyntheticIdBase - static_cast<int64_t>(synthetic_ids_.size());
  synthetic_ids_.emplace(key, id);
  synthetic_names_.emplace(id, key);
  return id;
}

int64_t TraceBuilder::pid_from_string(std::string_view s) {
  return synthetic_id(s);
}

int64_t TraceBuilder::tid_from_string(int64_t /*pid*/, std::string_view s) {
  return synthetic_id(s);
}

uint32_t TraceBuilder::lane(int64_t pid, int64_t tid) {
  const std::pair key(pid, tid);
  if (last_lane_ != UINT32_MAX && key == last_key_) return last_lane_;
  auto [it, inserted] = raw_index_.try_emplace(key, static_cast<uint32_t>(raw_.size()));
  if (inserted) {
    RawLane l;
    l.pid = pid;
    l.tid = tid;
    raw_.push_back(std::move(l));
    trace_.process(pid);
  }
  last_key_ = key;
  last_lane_ = it->second;
  return it->second;
}

void TraceBuilder::extend(int64_t ts_ns) {
  if (!any_ts_ || ts_ns > max_ts_) max_ts_ = ts_ns;
  any_ts_ = true;
}

void TraceBuilder::add_span(uint32_t lane, const Span& s) {
  HugePageVector<Span>& spans = raw_[lane].spans;
  room_for_one_more(spans);
  spans.push_back(s);
  extend(s.end_ns());
}

void TraceBuilder::add_instant(uint32_t lane, const Instant& i) {
  HugePageVector<Instant>& instants = raw_[lane].instants;
  room_for_one_more(instants);
  instants.push_back(i);
  extend(i.ts_ns);
}

void TraceBuilder::begin(uint32_t lane, int64_t ts_ns, StrId name, StrId category, uint32_t args) {
  Span s;
  s.start_ns = ts_ns;
  s.name = name;
  s.category = category;
  s.args = args;
  raw_[lane].open.push_back(s);
  extend(ts_ns);
}

void TraceBuilder::end(uint32_t lane, int64_t ts_ns, uint32_t args, uint64_t offset) {
  RawLane& l = raw_[lane];
  if (l.open.empty())
    throw TraceFormatError(source_, offset,
                           "end event (ph \"E\") without an open begin event (ph \"B\") on pid " +
                               std::to_string(l.pid) + " tid " + std::to_string(l.tid));
  Span s = l.open.back();
  if (ts_ns < s.start_ns)
    throw TraceFormatError(source_, offset,
                           "end event (ph \"E\") is earlier than its begin event on pid " +
                               std::to_string(l.pid) + " tid " + std::to_string(l.tid));
  l.open.pop_back();
  s.dur_ns = ts_ns - s.start_ns;
  if (s.args == kNoArgs) s.args = args;
  room_for_one_more(l.spans);
  l.spans.push_back(s);
  extend(ts_ns);
}

void TraceBuilder::mark_gpu(uint32_t lane, int32_t device, int64_t stream, GpuMark mark) {
  RawLane& l = raw_[lane];
  if (l.gpu && static_cast<uint8_t>(mark) >= static_cast<uint8_t>(l.gpu_mark)) return;
  l.gpu = true;
  l.gpu_mark = mark;
  l.gpu_from_metadata = mark == GpuMark::kMetadata;
  l.device = device;
  l.stream = stream;
}

void TraceBuilder::counter(int64_t pid, std::string_view name, int64_t ts_ns, double value) {
  const StrId id = trace_.strings.intern(name);
  auto [it, inserted] =
      counter_index_.try_emplace(std::pair(pid, int64_t{id}), static_cast<uint32_t>(0));
  if (inserted) {
    it->second = static_cast<uint32_t>(trace_.counters.size());
    Counter c;
    c.process = trace_.process(pid);
    c.name = std::string(name);
    trace_.counters.push_back(std::move(c));
  }
  trace_.counters[it->second].points.emplace_back(ts_ns, value);
  extend(ts_ns);
}

void TraceBuilder::flow(FlowPhase phase, uint64_t id, StrId category, StrId name, uint32_t lane,
                        int64_t ts_ns) {
  room_for_one_more(flow_points_);
  flow_points_.push_back({id, category, name, phase, lane, ts_ns});
  extend(ts_ns);
}

void TraceBuilder::process_name(int64_t pid, std::string_view name) {
  trace_.process(pid);
  process_meta_[pid].name = std::string(name);
}

void TraceBuilder::process_sort_index(int64_t pid, int64_t index) {
  trace_.process(pid);
  process_meta_[pid].sort_index = index;
}

void TraceBuilder::thread_name(int64_t pid, int64_t tid, std::string_view name) {
  raw_[lane(pid, tid)].name = std::string(name);
}

void TraceBuilder::thread_sort_index(int64_t pid, int64_t tid, int64_t index) {
  raw_[lane(pid, tid)].sort_index = index;
}

void TraceBuilder::metadata(std::string key, std::string value) {
  trace_.metadata[std::move(key)] = std::move(value);
}

std::vector<uint32_t> TraceBuilder::resolve_lanes() {
  std::vector<uint32_t> lane_of_raw(raw_.size());
  for (size_t r = 0; r < raw_.size(); ++r) {
    RawLane& raw = raw_[r];
    // Syncs alone on a thread that also made API calls or ran steps: the thread that waited.
    if (raw.gpu && raw.gpu_mark == GpuMark::kSync && raw.host_span) raw.gpu = false;
    const uint32_t index = raw.gpu ? trace_.gpu_lane(raw.pid, raw.device, raw.stream)
                                   : trace_.thread_lane(raw.pid, raw.tid);
    lane_of_raw[r] = index;
    Lane& l = trace_.lanes[index];
    if (!raw.gpu || raw.gpu_from_metadata) {
      if (raw.name) {
        l.name = *raw.name;
      } else if (const auto it = synthetic_names_.find(raw.tid); it != synthetic_names_.end()) {
        if (l.name.empty()) l.name = it->second;
      }
    }
    if (raw.sort_index) l.sort_index = *raw.sort_index;
    if (l.spans.empty()) {
      l.spans = std::move(raw.spans);
    } else {
      l.spans.insert(l.spans.end(), raw.spans.begin(), raw.spans.end());
    }
    if (l.instants.empty()) {
      l.instants = std::move(raw.instants);
    } else {
      l.instants.insert(l.instants.end(), raw.instants.begin(), raw.instants.end());
    }
  }
  return lane_of_raw;
}

// Flow points are chained per (category, id) in time order: a start opens an arrow, a step ends
// the open arrow and starts the next, a finish ends it. Points without a partner are dropped.
void TraceBuilder::resolve_flows(const std::vector<uint32_t>& lane_of_raw) {
  const auto before = [](const FlowPoint& a, const FlowPoint& b) {
    return std::tie(a.category, a.id, a.ts_ns, a.phase) < std::tie(b.category, b.id, b.ts_ns, b.phase);
  };
  if (!std::is_sorted(flow_points_.begin(), flow_points_.end(), before))  // a file's are, often
    std::stable_sort(flow_points_.begin(), flow_points_.end(), before);
  // At most one arrow per point that is not a start: reserved at once, the arrows' pages are
  // touched once and never copied (a large trace has millions).
  trace_.flows.reserve(static_cast<size_t>(
      std::count_if(flow_points_.begin(), flow_points_.end(),
                    [](const FlowPoint& p) { return p.phase != FlowPhase::kStart; })));
  const FlowPoint* open = nullptr;
  for (const FlowPoint& p : flow_points_) {
    if (open != nullptr && (open->category != p.category || open->id != p.id)) open = nullptr;
    if (p.phase != FlowPhase::kStart && open != nullptr) {
      Flow f;
      f.id = p.id;
      f.name = open->name != kNoStr ? open->name : p.name;
      f.category = p.category;
      f.from_lane = lane_of_raw[open->lane];
      f.from_ns = open->ts_ns;
      f.to_lane = lane_of_raw[p.lane];
      f.to_ns = p.ts_ns;
      trace_.flows.push_back(f);
    }
    open = p.phase == FlowPhase::kFinish ? nullptr : &p;
  }
}

Trace TraceBuilder::finish() && {
  size_t unclosed = 0;
  for (RawLane& l : raw_) {
    while (!l.open.empty()) {
      Span s = l.open.back();
      l.open.pop_back();
      s.dur_ns = std::max<int64_t>(0, max_ts_ - s.start_ns);
      l.spans.push_back(s);
      ++unclosed;
    }
  }
  if (unclosed > 0) trace_.metadata["unclosed_spans"] = std::to_string(unclosed);
  const std::vector<uint32_t> lane_of_raw = resolve_lanes();
  // The flows are resolved on another thread while finalize() sorts the lanes: a large trace's
  // arrows fill tens of MB of memory never touched before, which this thread alone paid for
  // (a twentieth of a 500 MB trace's analyze). Both only read the lanes' new indexes.
  std::future<void> flows;
  const auto resolve = [this, &lane_of_raw] {
    resolve_flows(lane_of_raw);
    HugePageVector<FlowPoint>().swap(flow_points_);
  };
  if (flow_points_.size() >= kFlowPointsForAThread) {
    try {
      flows = std::async(std::launch::async, resolve);
    } catch (const std::system_error&) {  // no thread to be had: on this one
      resolve();
    }
  } else {
    resolve();
  }
  for (const auto& [pid, meta] : process_meta_) {
    Process& p = trace_.processes[trace_.process(pid)];
    if (meta.name) p.name = *meta.name;
    if (meta.sort_index) p.sort_index = *meta.sort_index;
  }
  for (Process& p : trace_.processes) {
    if (!p.name.empty()) continue;
    if (const auto it = synthetic_names_.find(p.pid); it != synthetic_names_.end())
      p.name = it->second;
  }
  trace_.finalize([&flows] {
    if (flows.valid()) flows.get();
  });
  return std::move(trace_);
}

}  // namespace pipeprof::trace
