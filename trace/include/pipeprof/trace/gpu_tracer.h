// The GPU timeline: CUPTI activity (kernels, copies, sets, synchronizations, CUDA API calls)
// collected while a recording runs and merged into it on the same CLOCK_MONOTONIC axis.
//
//   trace::Recorder::global().start();
//   trace::GpuTracer gpu;
//   gpu.start();             // CPU-only (with one notice on stderr) when CUPTI cannot be used
//   ... CUDA work ...
//   gpu.stop();              // device synchronize, flush, merge into the recording
//   trace::Trace t = trace::Recorder::global().stop();
//
// What lands in the trace: kernels, copies ("Memcpy HtoD", ...) and sets ("Memset") as spans of
// category "gpu" on GPU lanes (Trace::gpu_lane(pid, device, stream)); CUDA runtime calls (and
// driver calls that a library makes directly) as "cuda_api" spans on the calling thread's lane;
// synchronization waits as "cuda_sync" spans inside the call that waited; a flow (category
// "ac2g") from each launching call to the work it launched. CUPTI stamps records with the
// recorder's clock (a timestamp callback registered before any activity kind is enabled).
//
// One GpuTracer collects at a time in a process (CUPTI's activity API is process-wide). Without
// CUDA at build time, available() is false and start()/stop() do nothing.
#pragma once

#include <cstdint>
#include <string>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

class GpuTracer {
 public:
  // Whether this build has the CUPTI collector.
  static const bool kSupported;

  GpuTracer() = default;
  ~GpuTracer();  // stops (and merges) when still collecting; never throws
  GpuTracer(const GpuTracer&) = delete;
  GpuTracer& operator=(const GpuTracer&) = delete;

  // Whether GPU activity can be collected here: built with CUDA, a driver and a device present,
  // CUPTI loadable and no earlier CUPTI error in this process. Otherwise false with the reason.
  static bool available(std::string* why_not = nullptr);

  // Starts collecting. When that is impossible (see available(), or another tracer is collecting)
  // prints one notice on stderr and leaves the trace CPU-only; never throws.
  void start();
  // Waits for the device, flushes CUPTI's buffers, stops collecting and merges the records into
  // trace::Recorder::global()'s recording (call it before the recorder's stop()). Never throws.
  void stop();

  // Whether start() succeeded and stop() has not run yet.
  bool collecting() const { return collecting_; }
  // Activity records CUPTI dropped during the last collection (buffers full or declined).
  int64_t dropped_records() const { return dropped_; }
  // The GPU part of the last collection (finalized), as merged into the recording.
  const Trace& gpu_trace() const { return gpu_trace_; }
  // Why the last start() left the trace CPU-only, or a problem stop() met (empty when none).
  const std::string& notice() const { return notice_; }

 private:
  bool collecting_ = false;
  int64_t dropped_ = 0;
  Trace gpu_trace_;
  std::string notice_;
};

}  // namespace pipeprof::trace
