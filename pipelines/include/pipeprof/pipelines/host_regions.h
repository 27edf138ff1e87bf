// Host memory that pipelines map for the life of an iterator (a shared-memory store's arena), made
// known to whoever wants to prepare it once instead of per element: a CUDA step registers such a
// region with cudaHostRegister so its copies to the device read straight from the mapping, without
// staging through pinned memory.
//
// One observer at a time (the process's training step). Regions mapped before an observer is set
// are reported to it when it is set; on unmap the observer is told before the memory goes away.
#pragma once

#include <cstddef>
#include <functional>

namespace pipeprof::pipelines {

struct HostRegionObserver {
  std::function<void(void* base, size_t bytes)> mapped;
  std::function<void(void* base, size_t bytes)> unmapped;
};

// Sets (or, with an empty observer, clears) the observer. A cleared observer is first told that
// every live region is unmapped, so it can undo what it did. Thread-safe.
void set_host_region_observer(HostRegionObserver observer);

// Called by the owners of mappings. Thread-safe; the observer is called without locks held by the
// caller's data structures, never concurrently with itself.
void host_region_mapped(void* base, size_t bytes);
void host_region_unmapped(void* base, size_t bytes);

}  // namespace pipeprof::pipelines
