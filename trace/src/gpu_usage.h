// GPU part of the analysis: busy/idle per device and stream, top kernels.
#pragma once

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

GpuUsage analyze_gpu(const Trace& trace);

}  // namespace pipeprof::trace
