// The GPU tracer of a build without CUDA: never available, start() leaves the trace CPU-only.
#include "gpu_records.h"
#include "pipeprof/trace/gpu_tracer.h"

namespace pipeprof::trace {

const bool GpuTracer::kSupported = false;

GpuTracer::~GpuTracer() = default;

bool GpuTracer::available(std::string* why_not) {
  if (why_not != nullptr) *why_not = "pipeprof was built without CUDA (no CUPTI collector)";
  return false;
}

void GpuTracer::start() {
  available(&notice_);
  gpu::notice_cpu_only(notice_);
}

void GpuTracer::stop() {}

}  // namespace pipeprof::trace
