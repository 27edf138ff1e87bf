// Uniform random bytes, fast enough to fill files at disk speed: eight xoshiro256+ generators side
// by side (structure of arrays, so the compiler vectorizes them; an AVX2 clone is picked at run
// time where the CPU has it), seeded from one 64-bit seed through splitmix64. Not for
// cryptography; the same seed gives the same bytes on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace pipeprof::pipelines::formats {

class RandomBytes {
 public:
  static constexpr int kLanes = 8;  // generators side by side
  explicit RandomBytes(uint64_t seed);
  // Fills `out`; consecutive calls continue one stream (the bytes do not depend on how the stream
  // is split into calls).
  void fill(std::span<std::byte> out);

 private:
  static constexpr size_t kBlock = kLanes * sizeof(uint64_t);
  void blocks(std::byte* out, size_t count);

  uint64_t s0_[kLanes], s1_[kLanes], s2_[kLanes], s3_[kLanes];
  std::byte pending_[kBlock];  // the rest of a block a previous call did not use
  size_t pending_size_ = 0;
};

}  // namespace pipeprof::pipelines::formats
