// A watched PyTorch DataLoader, read back from its trace (rules in analysis.h, LoaderAnalysis).
#pragma once

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

// Leaves the result absent when the trace's metadata has no "loader".
LoaderAnalysis analyze_dataloader(const Trace& trace, const StepBreakdown& steps,
                                  int64_t window_start_ns, int64_t window_end_ns);

}  // namespace pipeprof::trace
