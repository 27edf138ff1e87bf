// The CUPTI collector behind GpuTracer. CUPTI's activity API is process-wide and calls back into
// plain functions, so the state lives in one process-wide Collector (never destroyed: CUPTI may
// still call back while the process exits). Buffers come from a pool allocated on first use and
// reused by every collection; records are copied into gpu::GpuRecords as buffers complete and
// turned into a Trace when the collection stops.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_records.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/gpu_tracer.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::trace {

const bool GpuTracer::kSupported = true;

namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;
constexpr size_t kPoolBuffers = 8;  // allocated up front
constexpr size_t kMaxBuffers = 32;  // beyond this a request is declined (CUPTI drops records)

// CONCURRENT_KERNEL, never KERNEL (which serializes kernels). Driver calls are collected because
// libraries such as cuBLAS launch their kernels through the driver.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,          CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET,          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};

std::string cupti_error(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr)
    text = "unknown CUPTI error";
  return std::string(call) + " failed: " + text + " (CUPTI error " +
         std::to_string(static_cast<int>(result)) + ")";
}

std::string cuda_error(const char* call, cudaError_t error) {
  return std::string(call) + " failed: " + cudaGetErrorString(error) + " (" +
         cudaGetErrorName(error) + ")";
}

struct Collector {
  // Serializes start/stop and guards the fields below it. Held while calling CUPTI, which may
  // call back synchronously: the callbacks only take `data`.
  std::mutex control;
  bool registered = false;  // thread id type, timestamp and buffer callbacks set (once)
  bool busy = false;        // a GpuTracer is collecting
  std::string failure;      // the first CUPTI error in this process: CPU-only from then on

  std::mutex data;  // guards the fields below; taken by CUPTI's callbacks
  std::vector<std::unique_ptr<uint8_t[]>> buffers;
  std::vector<uint8_t*> free_buffers;
  int64_t declined = 0;     // buffer requests left unanswered
  bool collecting = false;  // records are kept only while true
  gpu::GpuRecords records;
  std::unordered_map<uint64_t, uint32_t> api_names;  // (domain << 32 | cbid) -> name id
  std::string callback_error;
};

Collector& collector() {
  static Collector* c = new Collector();
  return *c;
}

uint64_t CUPTIAPI monotonic_timestamp() {
  return static_cast<uint64_t>(now_ns());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Collector& c = collector();
  std::lock_guard lock(c.data);
  *max_records = 0;  // as many as fit
  // No exception may cross CUPTI's frames: a buffer that cannot be allocated is a declined request.
  if (c.free_buffers.empty() && c.buffers.size() < kMaxBuffers) {
    auto* fresh = new (std::nothrow) uint8_t[kBufferBytes];  // 16-byte aligned
    if (fresh != nullptr) {
      c.buffers.emplace_back(fresh);        // capacity reserved: no allocation
      c.free_buffers.push_back(fresh);
    }
  }
  if (c.free_buffers.empty()) {
    ++c.declined;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = c.free_buffers.back();
  c.free_buffers.pop_back();
  *size = kBufferBytes;
}

// Requires c.data.
uint32_t api_name(Collector& c, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  if (auto it = c.api_names.find(key); it != c.api_names.end()) return it->second;
  const char* name = nullptr;
  std::string text;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr) {
    text = gpu::strip_api_version(name);
  } else {
    text = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda runtime call " : "cuda driver call ") +
           std::to_string(cbid);
  }
  const uint32_t id = c.records.intern(text);
  c.api_names.emplace(key, id);
  return id;
}

const char* memcpy_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "Memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "Memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "Memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "Memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "Memcpy DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "Memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context synchronize";
    default: return "Synchronize";
  }
}

// Copies one record into c.records. Requires c.data.
void convert(Collector& c, const CUpti_Activity* record) {
  gpu::GpuActivity a;
  auto times = [&](uint64_t start, uint64_t end) {
    a.start_ns = static_cast<int64_t>(start);
    a.end_ns = static_cast<int64_t>(end);
    return start != 0 && end >= start;
  };
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (!times(k->start, k->end)) break;
      a.kind = gpu::ActivityKind::kKernel;
      a.name = c.records.intern(k->name != nullptr ? k->name : "kernel");
      a.device = static_cast<int32_t>(k->deviceId);
      a.stream = k->streamId;
      a.correlation = k->correlationId;
      a.grid[0] = k->gridX;
      a.grid[1] = k->gridY;
      a.grid[2] = k->gridZ;
      a.block[0] = k->blockX;
      a.block[1] = k->blockY;
      a.block[2] = k->blockZ;
      c.records.activities.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (!times(m->start, m->end)) break;
      a.kind = gpu::ActivityKind::kMemcpy;
      a.name = c.records.intern(memcpy_name(m->copyKind));
      a.device = static_cast<int32_t>(m->deviceId);
      a.stream = m->streamId;
      a.correlation = m->correlationId;
      a.runtime_correlation = m->runtimeCorrelationId;
      a.bytes = static_cast<int64_t>(m->bytes);
      c.records.activities.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (!times(m->start, m->end)) break;
      a.kind = gpu::ActivityKind::kMemset;
      a.name = c.records.intern("Memset");
      a.device = static_cast<int32_t>(m->deviceId);
      a.stream = m->streamId;
      a.correlation = m->correlationId;
      a.bytes = static_cast<int64_t>(m->bytes);
      c.records.activities.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      if (!times(s->start, s->end)) break;
      a.kind = gpu::ActivityKind::kSync;
      a.name = c.records.intern(sync_name(s->type));
      a.stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE
                     ? int64_t{-1}
                     : static_cast<int64_t>(s->streamId);
      a.correlation = s->correlationId;
      c.records.activities.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      if (!times(api->start, api->end)) break;
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      a.kind = runtime ? gpu::ActivityKind::kRuntimeApi : gpu::ActivityKind::kDriverApi;
      a.name = api_name(c, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                        api->cbid);
      a.thread = api->threadId;  // gettid(): cuptiSetThreadIdType(SYSTEM)
      a.correlation = api->correlationId;
      c.records.activities.push_back(a);
      return;
    }
    default:
      return;  // a kind we did not ask for
  }
  ++c.records.incomplete;
}

void CUPTIAPI buffer_completed(CUcontext /*context*/, uint32_t /*stream*/, uint8_t* buffer,
                              size_t /*size*/, size_t valid_size) {
  Collector& c = collector();
  std::lock_guard lock(c.data);
  if (c.collecting && valid_size > 0) {
    CUpti_Activity* record = nullptr;
    while (true) {
      const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_size, &record);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != CUPTI_SUCCESS) {
        // An incomplete record (forced flush) or a damaged buffer: the rest is unreadable.
        ++c.records.incomplete;
        if (r != CUPTI_ERROR_INVALID_KIND && c.callback_error.empty())
          c.callback_error = cupti_error("cuptiActivityGetNextRecord", r);
        break;
      }
      try {
        convert(c, record);
      } catch (...) {  // out of memory: no exception may cross CUPTI's frames
        ++c.records.incomplete;
        if (c.callback_error.empty()) c.callback_error = "out of memory reading activity records";
        break;
      }
    }
  }
  if (buffer != nullptr) c.free_buffers.push_back(buffer);
}

// Requires c.control. The reason GPU activity cannot be collected, or "" when it can.
std::string unavailable_reason(const Collector& c) {
  if (!c.failure.empty()) return "CUPTI failed earlier in this process: " + c.failure;
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess) {
    if (e == cudaErrorNoDevice) return "no CUDA device";
    return "no usable CUDA driver: " + cuda_error("cudaGetDeviceCount", e);
  }
  if (devices < 1) return "no CUDA device";
  uint32_t version = 0;
  if (const CUptiResult r = cuptiGetVersion(&version); r != CUPTI_SUCCESS)
    return "CUPTI unavailable: " + cupti_error("cuptiGetVersion", r);
  return "";
}

// Requires c.control. Sets the thread id type, the clock and the buffer callbacks, once per
// process, before any activity kind is enabled. Returns an error message or "".
std::string register_once(Collector& c) {
  if (c.registered) return "";
  // API records carry gettid() thread ids, as the recorder's lanes do.
  if (const CUptiResult r = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
      r != CUPTI_SUCCESS)
    return cupti_error("cuptiSetThreadIdType(SYSTEM)", r);
  // GPU and CPU records on the recorder's CLOCK_MONOTONIC axis.
  if (const CUptiResult r = cuptiActivityRegisterTimestampCallback(&monotonic_timestamp);
      r != CUPTI_SUCCESS)
    return cupti_error("cuptiActivityRegisterTimestampCallback", r);
  {
    std::lock_guard lock(c.data);
    // Reserved once, so the buffer callbacks never allocate for these lists.
    c.buffers.reserve(kMaxBuffers);
    c.free_buffers.reserve(kMaxBuffers);
    while (c.buffers.size() < kPoolBuffers) {
      c.buffers.push_back(std::make_unique<uint8_t[]>(kBufferBytes));
      c.free_buffers.push_back(c.buffers.back().get());
    }
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
      r != CUPTI_SUCCESS)
    return cupti_error("cuptiActivityRegisterCallbacks", r);
  c.registered = true;
  return "";
}

// Requires c.control. Disables every kind; returns the first error or "".
std::string disable_all() {
  std::string error;
  for (const CUpti_ActivityKind kind : kKinds) {
    const CUptiResult r = cuptiActivityDisable(kind);
    if (r != CUPTI_SUCCESS && error.empty()) error = cupti_error("cuptiActivityDisable", r);
  }
  return error;
}

}  // namespace

bool GpuTracer::available(std::string* why_not) {
  Collector& c = collector();
  std::lock_guard lock(c.control);
  std::string why = unavailable_reason(c);
  if (why_not != nullptr) *why_not = why;
  return why.empty();
}

GpuTracer::~GpuTracer() {
  if (collecting_) stop();
}

void GpuTracer::start() {
  if (collecting_) return;
  notice_.clear();
  dropped_ = 0;
  Collector& c = collector();
  {
    std::lock_guard lock(c.control);
    std::string why = unavailable_reason(c);
    if (why.empty() && c.busy) why = "another GPU tracer is collecting in this process";
    if (why.empty()) {
      if (std::string error = register_once(c); !error.empty()) {
        c.failure = error;
        why = "CUPTI error: " + error;
      }
    }
    if (why.empty()) {
      size_t dropped = 0;  // reads and resets CUPTI's count
      if (const CUptiResult r = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
          r != CUPTI_SUCCESS) {
        c.failure = cupti_error("cuptiActivityGetNumDroppedRecords", r);
        why = "CUPTI error: " + c.failure;
      }
    }
    if (why.empty()) {
      {
        std::lock_guard data(c.data);
        c.records = gpu::GpuRecords();
        c.api_names.clear();
        c.declined = 0;
        c.callback_error.clear();
        c.collecting = true;
      }
      for (const CUpti_ActivityKind kind : kKinds) {
        if (const CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
          c.failure = cupti_error("cuptiActivityEnable", r) + " (kind " +
                      std::to_string(static_cast<int>(kind)) + ")";
          why = "CUPTI error: " + c.failure;
          (void)disable_all();
          std::lock_guard data(c.data);
          c.collecting = false;
          break;
        }
      }
    }
    if (why.empty()) {
      c.busy = true;
      collecting_ = true;
      return;
    }
    notice_ = why;
  }
  gpu::notice_cpu_only(notice_);
}

void GpuTracer::stop() {
  if (!collecting_) return;
  collecting_ = false;
  Collector& c = collector();
  std::string problem;       // reported on stderr
  std::string cupti_problem;  // also turns CUPTI off for the rest of the process
  gpu::GpuRecords records;
  int64_t declined = 0;
  {
    std::lock_guard lock(c.control);
    // Work still queued on the device would come back without an end time.
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      problem = cuda_error("cudaDeviceSynchronize", e);
    auto note = [&](std::string error) {
      if (!error.empty() && cupti_problem.empty()) cupti_problem = std::move(error);
    };
    if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS)
      note(cupti_error("cuptiActivityFlushAll", r));
    note(disable_all());
    // Records of calls that were still returning when the kinds were disabled.
    if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS)
      note(cupti_error("cuptiActivityFlushAll", r));
    size_t dropped = 0;
    if (const CUptiResult r = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
        r != CUPTI_SUCCESS)
      note(cupti_error("cuptiActivityGetNumDroppedRecords", r));
    {
      std::lock_guard data(c.data);
      c.collecting = false;
      records = std::move(c.records);
      c.records = gpu::GpuRecords();
      declined = c.declined;
      note(c.callback_error);
    }
    dropped_ = static_cast<int64_t>(dropped);
    if (!cupti_problem.empty()) {
      if (c.failure.empty()) c.failure = cupti_problem;
      if (problem.empty()) problem = "CUPTI error: " + cupti_problem;
    }
    c.busy = false;
  }
  try {
    gpu_trace_ = gpu::build_gpu_trace(records, ::getpid(),
                                      [] { return Recorder::global().new_flow_id(); });
    gpu_trace_.metadata["gpu_records_dropped"] = std::to_string(dropped_);
    gpu_trace_.finalize();
    Recorder::global().merge_process_trace(gpu_trace_);
  } catch (const std::exception& e) {  // out of memory: keep the CPU-only trace
    if (problem.empty()) problem = std::string("building the GPU timeline failed: ") + e.what();
  }
  if (dropped_ > 0 || declined > 0) {
    std::fprintf(stderr,
                 "pipeprof: GPU timeline: CUPTI dropped %lld activity records (%lld buffer requests "
                 "declined); the GPU lanes are incomplete\n",
                 static_cast<long long>(dropped_), static_cast<long long>(declined));
  }
  if (!problem.empty()) {
    notice_ = problem;
    std::fprintf(stderr, "pipeprof: GPU timeline: %s\n", problem.c_str());
  }
}

}  // namespace pipeprof::trace
