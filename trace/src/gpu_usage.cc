#include "gpu_usage.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "intervals.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

using Activity = GpuActivity;

}  // namespace

GpuActivity gpu_activity_of(std::string_view name, std::string_view category) {
  if (category == "gpu_user_annotation" || category == "cuda_sync" || category == "user_annotation")
    return GpuActivity::kNone;
  if (category == "gpu_memcpy" || name.starts_with("Memcpy")) return GpuActivity::kMemcpy;
  if (category == "gpu_memset" || name.starts_with("Memset")) return GpuActivity::kMemset;
  return GpuActivity::kKernel;
}

GpuUsage analyze_gpu(const Trace& trace) {
  GpuUsage g;
  const int64_t lo = trace.start_ns();
  const int64_t hi = trace.end_ns();
  g.window_ns = hi - lo;
  struct KernelSum {
    int64_t count = 0;
    int64_t total = 0;
  };
  std::unordered_map<StrId, KernelSum> kernels;
  std::map<int32_t, Intervals> device_intervals;
  std::map<int32_t, DeviceUsage> devices;
  for (const Lane& lane : trace.lanes) {
    if (lane.kind != LaneKind::kGpuStream) continue;
    g.present = true;
    StreamUsage s;
    s.pid = lane.process < trace.processes.size() ? trace.processes[lane.process].pid : 0;
    s.device = lane.device;
    s.stream = lane.stream;
    s.lane = lane.name;
    DeviceUsage& d = devices[lane.device];
    d.device = lane.device;
    ++d.streams;
    Intervals busy;
    busy.reserve(lane.spans.size());
    for (const Span& span : lane.spans) {
      const std::string_view cat =
          span.category == kNoStr ? std::string_view() : trace.strings.str(span.category);
      const Activity a = gpu_activity_of(trace.name(span), cat);
      if (a == Activity::kNone) continue;
      ++s.spans;
      busy.emplace_back(std::max(span.start_ns, lo), std::min(span.end_ns(), hi));
      switch (a) {
        case Activity::kKernel: {
          d.kernel_ns += span.dur_ns;
          KernelSum& k = kernels[span.name];
          ++k.count;
          k.total += span.dur_ns;
          break;
        }
        case Activity::kMemcpy:
          d.memcpy_ns += span.dur_ns;
          break;
        case Activity::kMemset:
          d.memset_ns += span.dur_ns;
          break;
        case Activity::kNone:
          break;
      }
    }
    const Intervals merged = merge_intervals(std::move(busy));
    s.busy_ns = total_length(merged);
    s.busy_pct = percent_of(s.busy_ns, g.window_ns);
    s.idle_pct = g.window_ns > 0 ? 100.0 - s.busy_pct : 0.0;
    auto& all = device_intervals[lane.device];
    all.insert(all.end(), merged.begin(), merged.end());
    g.streams.push_back(std::move(s));
  }
  for (auto& [device, d] : devices) {
    d.busy_ns = total_length(merge_intervals(std::move(device_intervals[device])));
    d.busy_pct = percent_of(d.busy_ns, g.window_ns);
    d.idle_pct = g.window_ns > 0 ? 100.0 - d.busy_pct : 0.0;
    g.devices.push_back(d);
  }
  std::sort(g.streams.begin(), g.streams.end(), [](const StreamUsage& a, const StreamUsage& b) {
    return std::tie(a.device, a.stream, a.pid) < std::tie(b.device, b.stream, b.pid);
  });
  int64_t kernel_total = 0;
  for (const auto& [name, k] : kernels)
    kernel_total += k.total;
  for (const auto& [name, k] : kernels) {
    KernelStat st;
    st.name = name == kNoStr ? std::string() : trace.strings.str(name);
    st.count = k.count;
    st.total_ns = k.total;
    st.mean_ns = k.count > 0 ? static_cast<double>(k.total) / static_cast<double>(k.count) : 0;
    st.share_pct = percent_of(k.total, kernel_total);
    g.top_kernels.push_back(std::move(st));
  }
  std::sort(g.top_kernels.begin(), g.top_kernels.end(),
            [](const KernelStat& a, const KernelStat& b) {
              return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
            });
  if (g.top_kernels.size() > Analysis::kTopKernels) g.top_kernels.resize(Analysis::kTopKernels);
  return g;
}

}  // namespace pipeprof::trace
