#include "gpu_records.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_set>
#include <utility>

namespace pipeprof::trace::gpu {
namespace {

// Where an API call sits on the timeline, for flows and syncs.
struct CallSite {
  uint32_t lane = 0;
  int64_t start_ns = 0;
};

std::string args_json(const GpuActivity& a) {
  std::string s = "{\"device\":" + std::to_string(a.device) +
                  ",\"stream\":" + std::to_string(a.stream);
  if (a.correlation != 0) s += ",\"correlation\":" + std::to_string(a.correlation);
  if (a.bytes >= 0) s += ",\"bytes\":" + std::to_string(a.bytes);
  if (a.kind == ActivityKind::kKernel) {
    s += ",\"grid\":[" + std::to_string(a.grid[0]) + "," + std::to_string(a.grid[1]) + "," +
         std::to_string(a.grid[2]) + "],\"block\":[" + std::to_string(a.block[0]) + "," +
         std::to_string(a.block[1]) + "," + std::to_string(a.block[2]) + "]";
  }
  return s + "}";
}

bool is_api(ActivityKind k) {
  return k == ActivityKind::kRuntimeApi || k == ActivityKind::kDriverApi;
}

bool is_device_work(ActivityKind k) {
  return k == ActivityKind::kKernel || k == ActivityKind::kMemcpy || k == ActivityKind::kMemset;
}

}  // namespace

uint32_t GpuRecords::intern(std::string_view name) {
  std::string key(name);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names.size());
  names.push_back(key);
  index_.emplace(std::move(key), id);
  return id;
}

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

void notice_cpu_only(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> told;
  std::lock_guard lock(mu);
  if (!told.insert(why).second) return;
  std::fprintf(stderr, "pipeprof: GPU timeline off: %s; the trace is CPU-only\n", why.c_str());
}

std::string_view strip_api_version(std::string_view name) {
  const auto pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 == name.size()) return name;
  const std::string_view digits = name.substr(pos + 2);
  const bool all_digits =
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  return all_digits ? name.substr(0, pos) : name;
}

Trace build_gpu_trace(const GpuRecords& records, int64_t pid,
                      const std::function<uint64_t()>& new_flow_id, GpuTraceCounts* counts) {
  Trace t;
  GpuTraceCounts c;
  const StrId cat_gpu = t.strings.intern("gpu");
  const StrId cat_api = t.strings.intern("cuda_api");
  const StrId cat_sync = t.strings.intern("cuda_sync");
  const StrId cat_flow = t.strings.intern("ac2g");
  const StrId flow_name = t.strings.intern("launch");
  std::vector<StrId> names(records.names.size(), kNoStr);
  auto name_of = [&](const GpuActivity& a) {
    if (a.name >= names.size()) return t.strings.intern("?");
    StrId& id = names[a.name];
    if (id == kNoStr) {
      const std::string& n = records.names[a.name];
      id = t.strings.intern(a.kind == ActivityKind::kKernel ? demangle(n) : n);
    }
    return id;
  };
  t.process(pid);
  auto thread_lane = [&](int64_t tid) {
    const uint32_t lane = t.thread_lane(pid, tid);
    if (t.lanes[lane].name.empty()) t.lanes[lane].name = "thread " + std::to_string(tid);
    return lane;
  };

  // Runtime calls per thread, sorted, to tell a driver call made by the runtime from one made by
  // a library directly (cuBLAS launches its kernels through the driver).
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> runtime_calls;
  for (const GpuActivity& a : records.activities) {
    if (a.kind == ActivityKind::kRuntimeApi)
      runtime_calls[a.thread].emplace_back(a.start_ns, a.end_ns);
  }
  for (auto& [tid, calls] : runtime_calls)
    std::sort(calls.begin(), calls.end());
  auto inside_runtime_call = [&](const GpuActivity& a) {
    const auto it = runtime_calls.find(a.thread);
    if (it == runtime_calls.end()) return false;
    const auto& calls = it->second;
    auto after = std::upper_bound(calls.begin(), calls.end(),
                                  std::make_pair(a.start_ns, std::numeric_limits<int64_t>::max()));
    if (after == calls.begin()) return false;
    const auto& [start, end] = *std::prev(after);
    return start <= a.start_ns && a.end_ns <= end;
  };

  // Driver calls shown on their own are those that launched device work (a library's kernel
  // launches); the rest (context queries and the like) would only clutter the thread's lane.
  std::unordered_set<uint32_t> launched;
  for (const GpuActivity& a : records.activities) {
    if (is_device_work(a.kind)) launched.insert(a.correlation);
  }

  // API calls first: they are the sources of flows and the places of syncs.
  std::unordered_map<uint32_t, CallSite> runtime_sites, driver_sites;
  for (const GpuActivity& a : records.activities) {
    if (!is_api(a.kind)) continue;
    const uint32_t lane = thread_lane(a.thread);
    const bool runtime = a.kind == ActivityKind::kRuntimeApi;
    (runtime ? runtime_sites : driver_sites)[a.correlation] = {lane, a.start_ns};
    if (!runtime && (!launched.contains(a.correlation) || inside_runtime_call(a))) continue;
    Span s;
    s.start_ns = a.start_ns;
    s.dur_ns = std::max<int64_t>(0, a.end_ns - a.start_ns);
    s.name = name_of(a);
    s.category = cat_api;
    s.args = t.add_args("{\"correlation\":" + std::to_string(a.correlation) + "}");
    t.lanes[lane].spans.push_back(s);
    ++c.api_calls;
  }
  auto site_of = [&](uint32_t runtime_id, uint32_t id) -> const CallSite* {
    for (const auto& [map, key] : {std::pair{&runtime_sites, runtime_id},
                                   std::pair{&runtime_sites, id}, std::pair{&driver_sites, id}}) {
      if (key == 0) continue;
      if (auto it = map->find(key); it != map->end()) return &it->second;
    }
    return nullptr;
  };

  for (const GpuActivity& a : records.activities) {
    if (is_api(a.kind)) continue;
    Span s;
    s.start_ns = a.start_ns;
    s.dur_ns = std::max<int64_t>(0, a.end_ns - a.start_ns);
    s.name = name_of(a);
    const CallSite* site = site_of(a.runtime_correlation, a.correlation);
    if (a.kind == ActivityKind::kSync) {
      if (site == nullptr) {
        ++c.unmatched;
        continue;
      }
      s.category = cat_sync;
      s.args = t.add_args("{\"stream\":" + std::to_string(a.stream) +
                          ",\"correlation\":" + std::to_string(a.correlation) + "}");
      t.lanes[site->lane].spans.push_back(s);
      ++c.syncs;
      continue;
    }
    if (!is_device_work(a.kind)) continue;
    const uint32_t lane = t.gpu_lane(pid, a.device, a.stream);
    s.category = cat_gpu;
    s.args = t.add_args(args_json(a));
    t.lanes[lane].spans.push_back(s);
    ++(a.kind == ActivityKind::kKernel   ? c.kernels
       : a.kind == ActivityKind::kMemcpy ? c.memcpys
                                         : c.memsets);
    if (site != nullptr) {
      t.flows.push_back(
          {new_flow_id(), flow_name, cat_flow, site->lane, site->start_ns, lane, a.start_ns});
      ++c.flows;
    }
  }
  if (counts != nullptr) *counts = c;
  return t;
}

}  // namespace pipeprof::trace::gpu
