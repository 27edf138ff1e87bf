// GPU activity in a form that needs no CUDA headers: the CUPTI collector (cupti_tracer_cuda.cc)
// copies each activity record it receives into a GpuActivity, and build_gpu_trace() turns the lot
// into Trace lanes and flows. Kept apart from CUPTI so that the conversion is tested everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace::gpu {

enum class ActivityKind : uint8_t {
  kKernel,      // a kernel execution on (device, stream)
  kMemcpy,      // a copy on (device, stream); name "Memcpy HtoD", "Memcpy DtoH", ...
  kMemset,      // a memset on (device, stream)
  kSync,        // the host waiting in a synchronization call (stream, event, context)
  kRuntimeApi,  // a CUDA runtime API call on a host thread
  kDriverApi,   // a CUDA driver API call on a host thread
};

struct GpuActivity {
  ActivityKind kind = ActivityKind::kKernel;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC (the collector's timestamp callback)
  int64_t end_ns = 0;
  uint32_t name = 0;         // index into GpuRecords::names
  int32_t device = -1;       // kernels, copies, sets
  int64_t stream = -1;       // kernels, copies, sets, syncs (-1: none)
  int64_t thread = 0;        // API calls: the system thread id (gettid)
  uint32_t correlation = 0;  // the launching API call's id (CUPTI's correlationId)
  // Copies: the runtime call's correlation id, when the copy also has a driver call's id.
  uint32_t runtime_correlation = 0;
  int64_t bytes = -1;  // copies and sets
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
};

// Everything one collection gathered.
struct GpuRecords {
  std::vector<std::string> names;
  std::vector<GpuActivity> activities;
  int64_t incomplete = 0;  // records without valid timestamps (skipped by the collector)

  uint32_t intern(std::string_view name);

 private:
  std::unordered_map<std::string, uint32_t> index_;
};

// Counts of what build_gpu_trace() put into the trace.
struct GpuTraceCounts {
  int64_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0, api_calls = 0, flows = 0;
  int64_t unmatched = 0;  // syncs whose API call is missing (placed nowhere)
};

// Builds a trace for process `pid` (unfinalized):
//  - kernels, copies and sets: spans of category "gpu" on Trace::gpu_lane(pid, device, stream),
//    with args {"device", "stream", "correlation", and "bytes" or "grid"/"block"}; kernel names
//    are demangled;
//  - runtime API calls: spans of category "cuda_api" on the calling thread's lane; driver API
//    calls too when they launched device work themselves (not inside a runtime call on the same
//    thread, which is the runtime's own implementation); the others only serve as flow sources;
//  - syncs: spans of category "cuda_sync" on the thread lane of the call they belong to;
//  - a flow (category "ac2g", name "launch") from every API call to the GPU work it launched,
//    matched by correlation id; ids come from `new_flow_id`.
Trace build_gpu_trace(const GpuRecords& records, int64_t pid,
                      const std::function<uint64_t()>& new_flow_id, GpuTraceCounts* counts = nullptr);

// "_Z10sgd_updatePfPKffi" -> "sgd_update(float*, float const*, float, int)"; other names as given.
std::string demangle(const std::string& name);

// Prints "pipeprof: GPU timeline off: <why>; the trace is CPU-only" on stderr, once per process for
// each distinct reason (a suite starts a tracer per experiment).
void notice_cpu_only(const std::string& why);

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (CUPTI's callback names carry a version suffix).
std::string_view strip_api_version(std::string_view name);

}  // namespace pipeprof::trace::gpu
