#include "pipeprof/trace/gpu_tracer.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "gpu_records.h"
#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::trace {
namespace {

using gpu::ActivityKind;
using gpu::GpuActivity;
using gpu::GpuRecords;

GpuActivity api(GpuRecords& r, ActivityKind kind, const char* name, int64_t thread, int64_t start,
                int64_t end, uint32_t correlation) {
  GpuActivity a;
  a.kind = kind;
  a.name = r.intern(name);
  a.thread = thread;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation = correlation;
  return a;
}

GpuActivity work(GpuRecords& r, ActivityKind kind, const char* name, int32_t device,
                 int64_t stream, int64_t start, int64_t end, uint32_t correlation) {
  GpuActivity a;
  a.kind = kind;
  a.name = r.intern(name);
  a.device = device;
  a.stream = stream;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation = correlation;
  return a;
}

const Span* find_span(const Trace& t, const Lane& lane, std::string_view name) {
  for (const Span& s : lane.spans) {
    if (t.name(s) == name) return &s;
  }
  return nullptr;
}

std::string_view category(const Trace& t, const Span& s) {
  return t.strings.str(s.category);
}

// A step's worth of records: a runtime launch, a copy (driver id + runtime id, with the driver
// call nested in the runtime call), a kernel launched by a library through the driver, a driver
// query that launched nothing, a stream synchronize and a sync whose call is missing.
GpuRecords step_records(int64_t tid) {
  GpuRecords r;
  auto& a = r.activities;
  a.push_back(api(r, ActivityKind::kRuntimeApi, "cudaMemcpyAsync", tid, 1000, 1100, 2));
  a.push_back(api(r, ActivityKind::kDriverApi, "cuMemcpyHtoDAsync", tid, 1010, 1090, 5));
  GpuActivity copy = work(r, ActivityKind::kMemcpy, "Memcpy HtoD", 0, 13, 1200, 1500, 5);
  copy.runtime_correlation = 2;
  copy.bytes = 4096;
  a.push_back(copy);
  a.push_back(api(r, ActivityKind::kRuntimeApi, "cudaLaunchKernel", tid, 1600, 1700, 1));
  GpuActivity kernel =
      work(r, ActivityKind::kKernel, "_Z10sgd_updatePfPKffi", 0, 7, 1800, 2500, 1);
  kernel.grid[0] = 64;
  kernel.block[0] = 256;
  a.push_back(kernel);
  a.push_back(api(r, ActivityKind::kDriverApi, "cuLaunchKernel", tid, 2600, 2650, 3));
  a.push_back(work(r, ActivityKind::kKernel, "ampere_sgemm_64x64_nn", 0, 7, 2700, 3500, 3));
  a.push_back(api(r, ActivityKind::kDriverApi, "cuCtxGetCurrent", tid, 2660, 2661, 4));
  a.push_back(api(r, ActivityKind::kRuntimeApi, "cudaStreamSynchronize", tid, 2700, 3600, 6));
  a.push_back(work(r, ActivityKind::kSync, "Stream synchronize", -1, 7, 2710, 3590, 6));
  a.push_back(work(r, ActivityKind::kSync, "Event synchronize", -1, -1, 4000, 4100, 99));
  a.push_back(work(r, ActivityKind::kMemset, "Memset", 1, 3, 5000, 5100, 0));
  return r;
}

TEST(GpuRecords, ApiNamesLoseTheirVersionAndKernelsAreDemangled) {
  EXPECT_EQ(gpu::strip_api_version("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(gpu::strip_api_version("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(gpu::strip_api_version("cudaMalloc"), "cudaMalloc");
  EXPECT_EQ(gpu::strip_api_version("my_vector_v"), "my_vector_v");
  EXPECT_EQ(gpu::strip_api_version("name_vx2"), "name_vx2");
  EXPECT_EQ(gpu::demangle("_Z10sgd_updatePfPKffi"), "sgd_update(float*, float const*, float, int)");
  EXPECT_EQ(gpu::demangle("ampere_sgemm_64x64_nn"), "ampere_sgemm_64x64_nn");
  EXPECT_EQ(gpu::demangle("_Znot a symbol"), "_Znot a symbol");
}

TEST(GpuRecords, BuildsGpuLanesApiSpansSyncsAndFlows) {
  const int64_t pid = 4242, tid = 77;
  uint64_t next_id = 500;
  gpu::GpuTraceCounts counts;
  Trace t = gpu::build_gpu_trace(step_records(tid), pid, [&] { return next_id++; }, &counts);
  t.finalize();
  EXPECT_EQ(counts.kernels, 2);
  EXPECT_EQ(counts.memcpys, 1);
  EXPECT_EQ(counts.memsets, 1);
  EXPECT_EQ(counts.syncs, 1);
  EXPECT_EQ(counts.unmatched, 1);
  EXPECT_EQ(counts.api_calls, 4);  // 3 runtime calls + the library's own cuLaunchKernel
  EXPECT_EQ(counts.flows, 3);      // the memset has no call

  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, pid);
  const Lane& cpu = t.lanes[t.thread_lane(pid, tid)];
  EXPECT_EQ(cpu.kind, LaneKind::kThread);
  const Lane& s7 = t.lanes[t.gpu_lane(pid, 0, 7)];
  const Lane& s13 = t.lanes[t.gpu_lane(pid, 0, 13)];
  const Lane& d1 = t.lanes[t.gpu_lane(pid, 1, 3)];
  EXPECT_EQ(s7.kind, LaneKind::kGpuStream);
  EXPECT_EQ(s7.device, 0);
  EXPECT_EQ(s7.stream, 7);
  ASSERT_EQ(s7.spans.size(), 2u);
  ASSERT_EQ(s13.spans.size(), 1u);
  ASSERT_EQ(d1.spans.size(), 1u);

  const Span* kernel = find_span(t, s7, "sgd_update(float*, float const*, float, int)");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(category(t, *kernel), "gpu");
  EXPECT_EQ(kernel->start_ns, 1800);
  EXPECT_EQ(kernel->dur_ns, 700);
  ASSERT_NE(kernel->args, kNoArgs);
  EXPECT_NE(t.args[kernel->args].find("\"grid\":[64,0,0]"), std::string::npos)
      << t.args[kernel->args];
  EXPECT_NE(t.args[kernel->args].find("\"stream\":7"), std::string::npos);
  const Span* copy = find_span(t, s13, "Memcpy HtoD");
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(t.args[copy->args].find("\"bytes\":4096"), std::string::npos);
  EXPECT_EQ(category(t, *find_span(t, d1, "Memset")), "gpu");

  // The thread lane: runtime calls, the library's direct driver launch, the sync inside its call;
  // not the driver call nested in cudaMemcpyAsync nor the query that launched nothing.
  for (const char* name : {"cudaMemcpyAsync", "cudaLaunchKernel", "cuLaunchKernel",
                           "cudaStreamSynchronize"}) {
    const Span* s = find_span(t, cpu, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(category(t, *s), "cuda_api") << name;
  }
  EXPECT_EQ(find_span(t, cpu, "cuMemcpyHtoDAsync"), nullptr);
  EXPECT_EQ(find_span(t, cpu, "cuCtxGetCurrent"), nullptr);
  const Span* sync = find_span(t, cpu, "Stream synchronize");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(category(t, *sync), "cuda_sync");
  EXPECT_EQ(sync->depth, 1u);  // inside cudaStreamSynchronize
  EXPECT_EQ(find_span(t, cpu, "Event synchronize"), nullptr);

  // Flows from the launching call to the work, by correlation id; the copy's comes from the
  // runtime call (its runtime id) rather than the nested driver call.
  ASSERT_EQ(t.flows.size(), 3u);
  const uint32_t cpu_index = t.thread_lane(pid, tid);
  for (const Flow& f : t.flows) {
    EXPECT_GE(f.id, 500u);
    EXPECT_EQ(t.strings.str(f.category), "ac2g");
    EXPECT_EQ(f.from_lane, cpu_index);
    EXPECT_LT(f.from_ns, f.to_ns);
  }
  auto flow_to = [&](int64_t to_ns) {
    return std::find_if(t.flows.begin(), t.flows.end(),
                        [&](const Flow& f) { return f.to_ns == to_ns; });
  };
  ASSERT_NE(flow_to(1200), t.flows.end());
  EXPECT_EQ(flow_to(1200)->from_ns, 1000);  // cudaMemcpyAsync
  ASSERT_NE(flow_to(1800), t.flows.end());
  EXPECT_EQ(flow_to(1800)->from_ns, 1600);  // cudaLaunchKernel
  ASSERT_NE(flow_to(2700), t.flows.end());
  EXPECT_EQ(flow_to(2700)->from_ns, 2600);  // cuLaunchKernel
}

TEST(GpuRecords, MergedIntoARecordingKeepTheThreadsNameAndPlace) {
  Recorder& rec = Recorder::global();
  rec.start();
  rec.set_thread_name("train loop");
  rec.set_thread_sort_index(-1);
  const int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  {
    ScopedSpan s(rec.intern("step"), category::step());
  }
  Trace gpu_part =
      gpu::build_gpu_trace(step_records(tid), ::getpid(), [&] { return rec.new_flow_id(); });
  gpu_part.finalize();
  rec.merge_process_trace(gpu_part);
  Trace t = rec.stop();
  const Lane& cpu = t.lanes[t.thread_lane(::getpid(), tid)];
  EXPECT_EQ(cpu.name, "train loop");
  EXPECT_EQ(cpu.sort_index, -1);
  EXPECT_NE(find_span(t, cpu, "step"), nullptr);
  EXPECT_NE(find_span(t, cpu, "cudaLaunchKernel"), nullptr);
  size_t gpu_lanes = 0;
  for (const Lane& l : t.lanes)
    gpu_lanes += l.kind == LaneKind::kGpuStream ? 1 : 0;
  EXPECT_EQ(gpu_lanes, 3u);
  EXPECT_EQ(t.flows.size(), 3u);
}

TEST(GpuTracer, WithoutAUsableGpuTheTraceStaysCpuOnly) {
  std::string why;
  if (GpuTracer::available(&why)) GTEST_SKIP() << "a GPU is usable here (the gpu tests cover it)";
  EXPECT_FALSE(why.empty());
  if (!GpuTracer::kSupported) {
    EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
  }
  Recorder& rec = Recorder::global();
  rec.start();
  GpuTracer tracer;
  testing::internal::CaptureStderr();
  tracer.start();
  tracer.start();  // a second start: still nothing, and no second notice
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(tracer.collecting());
  EXPECT_EQ(tracer.notice(), why);
  tracer.stop();
  EXPECT_EQ(tracer.dropped_records(), 0);
  EXPECT_EQ(tracer.gpu_trace().lanes.size(), 0u);
  Trace t = rec.stop();
  for (const Lane& l : t.lanes)
    EXPECT_EQ(l.kind, LaneKind::kThread);
  // The notice is printed once per process and reason (another test may have printed it).
  EXPECT_LE(std::count(err.begin(), err.end(), '\n'), 1) << err;
  if (!err.empty()) {
    EXPECT_NE(err.find("the trace is CPU-only"), std::string::npos) << err;
  }
}

// A sync event sits on the thread that waited, with the stream it waited for: read back, that
// thread stays a CPU thread (its steps and API calls with it) and the streams stay GPU lanes.
TEST(GpuRecords, ASyncOnTheCallingThreadKeepsItACpuThreadWhenReadBack) {
  const int64_t pid = 4242, tid = 77;
  uint64_t next_id = 1;
  Trace t = gpu::build_gpu_trace(step_records(tid), pid, [&] { return next_id++; });
  const uint32_t cpu_index = t.thread_lane(pid, tid);
  t.lanes[cpu_index].name = "train loop";
  Span step;
  step.start_ns = 900;
  step.dur_ns = 3000;
  step.name = t.strings.intern("step");
  step.category = t.strings.intern("step");
  t.lanes[cpu_index].spans.push_back(step);
  t.finalize();

  std::ostringstream json;
  write_chrome_json(t, json);
  const Trace back = parse_chrome_json(json.str());
  size_t gpu_lanes = 0;
  for (const Lane& l : back.lanes)
    gpu_lanes += l.kind == LaneKind::kGpuStream ? 1 : 0;
  EXPECT_EQ(gpu_lanes, 3u);
  const auto cpu = std::find_if(back.lanes.begin(), back.lanes.end(),
                                [](const Lane& l) { return l.name == "train loop"; });
  ASSERT_NE(cpu, back.lanes.end());
  EXPECT_EQ(cpu->kind, LaneKind::kThread);
  EXPECT_NE(find_span(back, *cpu, "Stream synchronize"), nullptr);
  EXPECT_NE(find_span(back, *cpu, "step"), nullptr);
}

// A stream lane holding only syncs (as Kineto writes them: pid = device, tid = stream) is still a
// GPU lane; a thread with a begin/end span around its sync is not.
TEST(GpuRecords, AStreamLaneOfSyncsAloneStaysAGpuLane) {
  const Trace t = parse_chrome_json(R"({"traceEvents":[
    {"ph":"X","pid":0,"tid":7,"ts":10,"dur":5,"name":"Stream Sync","cat":"cuda_sync",
     "args":{"device":0,"stream":7}},
    {"ph":"X","pid":100,"tid":100,"ts":9,"dur":7,"name":"cudaStreamSynchronize",
     "cat":"cuda_runtime","args":{"correlation":3}},
    {"ph":"B","pid":100,"tid":101,"ts":20,"name":"train step"},
    {"ph":"X","pid":100,"tid":101,"ts":21,"dur":2,"name":"Stream synchronize","cat":"cuda_sync",
     "args":{"stream":7}},
    {"ph":"E","pid":100,"tid":101,"ts":30}]})");
  size_t gpu_lanes = 0, threads = 0;
  for (const Lane& l : t.lanes) {
    gpu_lanes += l.kind == LaneKind::kGpuStream ? 1 : 0;
    threads += l.kind == LaneKind::kThread ? 1 : 0;
  }
  EXPECT_EQ(gpu_lanes, 1u);
  EXPECT_EQ(threads, 2u);  // the thread whose B/E step holds a sync stays a thread
}

// A trace recorded on an NVIDIA H100 (`pipeprof run map_parallel --step cuda:10 --trace`): the
// train loop's steps and waits, the GPU's two streams, and kernels that are all device work.
TEST(GpuRecords, ARecordedH100TraceAnalysesItsStepsAndKernels) {
  const Trace t = load_chrome_json(PIPEPROF_GPU_FIXTURES "/map_parallel_cuda_h100.trace.json");
  const Analysis a = analyze(t);
  ASSERT_TRUE(a.steps.present) << (a.notes.empty() ? "" : a.notes.front());
  EXPECT_EQ(a.steps.steps, 6);
  EXPECT_GT(a.steps.input_bound_pct, 50);  // a 30 ms map for a 10 ms step
  ASSERT_TRUE(a.gpu.present);
  ASSERT_EQ(a.gpu.devices.size(), 1u);
  EXPECT_EQ(a.gpu.devices[0].streams, 2);
  // Six 10 ms steps in a 232 ms trace.
  EXPECT_GT(a.gpu.devices[0].busy_pct, 15);
  EXPECT_LT(a.gpu.devices[0].busy_pct, 40);
  EXPECT_LT(a.gpu.devices[0].kernel_ns, a.gpu.window_ns);
  ASSERT_FALSE(a.gpu.top_kernels.empty());
  for (const KernelStat& k : a.gpu.top_kernels) {
    for (const char* host : {"epoch", "step", "get_next", "cudaStreamSynchronize", "wait"})
      EXPECT_EQ(k.name.find(host), std::string::npos) << k.name;
  }
}

}  // namespace
}  // namespace pipeprof::trace
