// The process's allocator, set for pipelines. A loader allocates a buffer per file and per batch
// (hundreds of KiB to MiB) and frees it a step later, thousands of times a second. glibc's malloc
// maps and unmaps such a buffer afresh each time while it lies above its mmap threshold (128 KiB
// at start, raised only as such buffers are freed), and gives an arena's free top back to the
// system (and faults it in again) beyond its trim threshold. Every map, unmap and fault takes the
// process's mmap lock, so a hundred reader threads queue on it in the kernel: on 2 cores, 64
// simulated accelerators of npz_256k reached AU 40% in a fresh process and 96% with these set.
// A run then measures the same whether it is the process's first or its tenth.
#pragma once

namespace pipeprof::pipelines {

// Keeps buffers up to 32 MiB in malloc's arenas and returns an arena's free top to the system
// only beyond 64 MiB (glibc; a no-op elsewhere). Call once at the start of a program that runs
// pipelines (pipeprof's executables do), before its threads start. Returns false when the
// allocator refused (or is not glibc's).
bool keep_buffers_in_arenas();

}  // namespace pipeprof::pipelines
