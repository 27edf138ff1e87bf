#include "pipeprof/trace/trace.h"

#include <algorithm>
#include <tuple>

namespace pipeprof::trace {
namespace {

// Sorts stably a sequence that is sorted or nearly so (a trace's spans: each a few places from
// its own, as when a parent is written after its first child) in linear time: insertion while
// the moves stay within a budget linear in the size, then (any input) std::stable_sort. The
// insertions keep equal elements in their order, so the result is stable_sort's either way.
template <typename Vector, typename Before>
void sort_nearly_sorted(Vector& v, Before before) {
  size_t budget = 8 * v.size() + 64;
  for (size_t i = 1; i < v.size(); ++i) {
    if (!before(v[i], v[i - 1])) continue;
    typename Vector::value_type x = std::move(v[i]);
    size_t j = i;
    while (j > 0 && before(x, v[j - 1]) && budget > 0) {
      v[j] = std::move(v[j - 1]);
      --j;
      --budget;
    }
    v[j] = std::move(x);
    if (budget == 0) {
      std::stable_sort(v.begin(), v.end(), before);
      return;
    }
  }
}

}  // namespace

StrId StringTable::intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  const auto id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(strings_.back(), id);
  return id;
}

StrId StringTable::find(std::string_view s) const {
  const auto it = index_.find(s);
  return it == index_.end() ? kNoStr : it->second;
}

uint32_t Trace::process(int64_t pid) {
  if (auto it = process_index_.find(pid); it != process_index_.end()) return it->second;
  const auto idx = static_cast<uint32_t>(processes.size());
  Process p;
  p.pid = pid;
  processes.push_back(std::move(p));
  process_index_.emplace(pid, idx);
  return idx;
}

uint32_t Trace::thread_lane(int64_t pid, int64_t tid) {
  const auto key = std::make_pair(pid, tid);
  if (auto it = thread_index_.find(key); it != thread_index_.end()) return it->second;
  const uint32_t proc = process(pid);
  const auto idx = static_cast<uint32_t>(lanes.size());
  Lane l;
  l.process = proc;
  l.tid = tid;
  l.kind = LaneKind::kThread;
  lanes.push_back(std::move(l));
  processes[proc].lanes.push_back(idx);
  thread_index_.emplace(key, idx);
  return idx;
}

uint32_t Trace::gpu_lane(int64_t pid, int32_t device, int64_t stream) {
  const auto key = std::make_tuple(pid, device, stream);
  if (auto it = gpu_index_.find(key); it != gpu_index_.end()) return it->second;
  const uint32_t proc = process(pid);
  const auto idx = static_cast<uint32_t>(lanes.size());
  Lane l;
  l.process = proc;
  l.tid = stream;
  l.kind = LaneKind::kGpuStream;
  l.device = device;
  l.stream = stream;
  l.name = "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
  lanes.push_back(std::move(l));
  processes[proc].lanes.push_back(idx);
  gpu_index_.emplace(key, idx);
  return idx;
}

uint32_t Trace::add_args(std::string json_object) {
  args.push_back(std::move(json_object));
  return static_cast<uint32_t>(args.size() - 1);
}

void Trace::finalize(const std::function<void()>& flows_ready) {
  bool any = false;
  int64_t lo = 0, hi = 0;
  auto extend = [&](int64_t a, int64_t b) {
    if (!any) {
      lo = a;
      hi = b;
      any = true;
    } else {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  };
  // A file's spans are often in order, a GPU stream's nearly always.
  const auto span_before = [](const Span& a, const Span& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
  };
  const auto instant_before = [](const Instant& a, const Instant& b) { return a.ts_ns < b.ts_ns; };
  for (Lane& lane : lanes) {
    sort_nearly_sorted(lane.spans, span_before);
    sort_nearly_sorted(lane.instants, instant_before);
    // Depth: the number of enclosing spans still open at a span's start.
    std::vector<int64_t> open_ends;
    lane.max_depth = 0;
    for (Span& s : lane.spans) {
      while (!open_ends.empty() && open_ends.back() <= s.start_ns)
        open_ends.pop_back();
      s.depth = static_cast<uint32_t>(open_ends.size());
      lane.max_depth = std::max(lane.max_depth, s.depth + 1);
      open_ends.push_back(s.end_ns());
      extend(s.start_ns, s.end_ns());
    }
    for (const Instant& i : lane.instants)
      extend(i.ts_ns, i.ts_ns);
  }
  for (Counter& c : counters) {
    sort_nearly_sorted(c.points, [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!c.points.empty()) extend(c.points.front().first, c.points.back().first);
  }
  if (flows_ready) flows_ready();
  for (const Flow& f : flows)
    extend(std::min(f.from_ns, f.to_ns), std::max(f.from_ns, f.to_ns));
  start_ns_ = any ? lo : 0;
  end_ns_ = any ? hi : 0;

  // Processes by (sort index, pid); lanes and counters follow their process's new index.
  std::vector<uint32_t> order(processes.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(processes[a].sort_index, processes[a].pid) <
           std::tie(processes[b].sort_index, processes[b].pid);
  });
  std::vector<uint32_t> new_index(processes.size());
  std::vector<Process> sorted;
  sorted.reserve(processes.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(std::move(processes[order[i]]));
  }
  processes = std::move(sorted);
  for (Lane& lane : lanes)
    lane.process = new_index[lane.process];
  for (Counter& c : counters)
    c.process = new_index[c.process];
  for (auto& [pid, index] : process_index_)
    index = new_index[index];
  std::stable_sort(counters.begin(), counters.end(), [](const Counter& a, const Counter& b) {
    return std::tie(a.process, a.name) < std::tie(b.process, b.name);
  });

  // Display order: processes by (sort index, pid); in each, threads by (sort index, tid), then GPU
  // streams by (device, stream).
  for (Process& p : processes) {
    std::stable_sort(p.lanes.begin(), p.lanes.end(), [&](uint32_t a, uint32_t b) {
      const Lane& x = lanes[a];
      const Lane& y = lanes[b];
      if (x.kind != y.kind) return x.kind == LaneKind::kThread;
      if (x.kind == LaneKind::kGpuStream)
        return std::tie(x.device, x.stream) < std::tie(y.device, y.stream);
      return std::tie(x.sort_index, x.tid) < std::tie(y.sort_index, y.tid);
    });
  }
}

size_t Trace::span_count() const {
  size_t n = 0;
  for (const Lane& l : lanes)
    n += l.spans.size();
  return n;
}

std::string_view Trace::name(const Span& s) const {
  return s.name == kNoStr ? std::string_view() : std::string_view(strings.str(s.name));
}

std::string_view Trace::category(const Span& s) const {
  return s.category == kNoStr ? std::string_view() : std::string_view(strings.str(s.category));
}

}  // namespace pipeprof::trace
