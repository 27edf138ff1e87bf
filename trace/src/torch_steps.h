// Per-step analysis of PyTorch profiler traces and of pipeprof's train loop (rules in analysis.h).
#pragma once

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

// Fills a.torch from the trace's ProfilerStep#N spans; leaves it absent when there are none.
TorchAnalysis analyze_torch(const Trace& trace);

// The train loop's steps of a pipeprof trace: each "step" span with the "get_next" waits since the
// previous step (DataLoader), the step itself (CPU Exec) and the rest of the interval (Other).
std::vector<StepTime> train_loop_steps(const Trace& trace);

}  // namespace pipeprof::trace
