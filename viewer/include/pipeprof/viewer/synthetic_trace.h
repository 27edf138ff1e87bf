// Synthetic traces for benchmarks and tests: a training process (main thread with nested epoch /
// step / get_next spans, input workers), a GPU with two streams, a buffer counter and launch
// flows; and a writer of PyTorch-profiler (Kineto) style JSON of a given size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>

#include "pipeprof/trace/trace.h"

namespace pipeprof::viewer {

// A finalized trace with about `spans` spans (never fewer), deterministic for a seed.
trace::Trace make_synthetic_trace(size_t spans, uint64_t seed = 1);

// Writes a Kineto-style trace of about `target_bytes` (operators, Python functions, kernel launches
// on a CPU thread; kernels and copies on four GPU streams; ac2g flows); returns the span count.
size_t write_kineto_style_trace(std::ostream& out, size_t target_bytes, uint64_t seed = 1);
// The same into a file; throws std::runtime_error naming the path when it cannot be written.
size_t write_kineto_style_trace(const std::filesystem::path& path, size_t target_bytes,
                                uint64_t seed = 1);

}  // namespace pipeprof::viewer
