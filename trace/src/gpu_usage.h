// GPU part of the analysis: busy/idle per device and stream, top kernels.
#pragma once

#include <string_view>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

GpuUsage analyze_gpu(const Trace& trace);

enum class GpuActivity { kKernel, kMemcpy, kMemset, kNone };

// What a span on a GPU lane is. Annotations (ranges drawn over kernels) and synchronization
// records are not device activity.
GpuActivity gpu_activity_of(std::string_view name, std::string_view category);

}  // namespace pipeprof::trace
