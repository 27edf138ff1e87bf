// What this machine can hold, for sizes that come from input (shapes, batch and buffer sizes,
// record lengths, queue capacities): a size beyond it is bad input, reported with the stage, the
// size asked and the limit, never an allocation that fails (or succeeds and exhausts memory).
#pragma once

#include <cstdint>
#include <string>

namespace pipeprof::pipelines {

struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // what sets it, e.g. "physical memory", "ulimit -v", "cgroup memory.max"
};

// The least of physical memory, the address-space and data-segment limits (ulimit -v, -d) and the
// cgroup's memory.max. Read once.
const MemoryLimit& memory_limit();

// Throws SpecError "<where>: <what> needs <size>, more than this machine can hold (<limit>,
// <source>)" when count x bytes_each overflows or exceeds the limit. `count` and `bytes_each`
// must be non-negative.
void check_fits_in_memory(const std::string& where, const std::string& what, int64_t count,
                          int64_t bytes_each);

// "1.5 GiB", "640 B", ...
std::string format_bytes(double bytes);

}  // namespace pipeprof::pipelines
