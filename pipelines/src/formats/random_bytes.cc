#include "formats/random_bytes.h"

#include <algorithm>
#include <cstring>

namespace pipeprof::pipelines::formats {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr int kLanes = RandomBytes::kLanes;

// xoshiro256+ (Blackman and Vigna) in kLanes lanes: the output is s0 + s3; the state moves by
// shifts and xors only, which vectorize.
// Two clones, picked by an ifunc resolver when the program is loaded. Not under a sanitizer: the
// resolver runs during relocation, before the sanitizer's runtime is set up, and its instrumented
// code would crash there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void xoshiro_blocks(uint64_t* state0, uint64_t* state1, uint64_t* state2, uint64_t* state3,
                    std::byte* out, size_t count) {
  // The state in locals: the compiler then knows nothing else aliases it, and vectorizes.
  uint64_t s0[kLanes], s1[kLanes], s2[kLanes], s3[kLanes];
  std::memcpy(s0, state0, sizeof s0);
  std::memcpy(s1, state1, sizeof s1);
  std::memcpy(s2, state2, sizeof s2);
  std::memcpy(s3, state3, sizeof s3);
  for (size_t b = 0; b < count; ++b) {
    uint64_t r[kLanes];
    for (int i = 0; i < kLanes; ++i) {
      r[i] = s0[i] + s3[i];
      const uint64_t t = s1[i] << 17;
      s2[i] ^= s0[i];
      s3[i] ^= s1[i];
      s1[i] ^= s2[i];
      s0[i] ^= s3[i];
      s2[i] ^= t;
      s3[i] = (s3[i] << 45) | (s3[i] >> 19);
    }
    std::memcpy(out + b * sizeof r, r, sizeof r);
  }
  std::memcpy(state0, s0, sizeof s0);
  std::memcpy(state1, s1, sizeof s1);
  std::memcpy(state2, s2, sizeof s2);
  std::memcpy(state3, s3, sizeof s3);
}

}  // namespace

RandomBytes::RandomBytes(uint64_t seed) {
  for (int i = 0; i < kLanes; ++i) {
    s0_[i] = splitmix64(seed);
    s1_[i] = splitmix64(seed);
    s2_[i] = splitmix64(seed);
    s3_[i] = splitmix64(seed);
  }
}

void RandomBytes::blocks(std::byte* out, size_t count) {
  xoshiro_blocks(s0_, s1_, s2_, s3_, out, count);
}

void RandomBytes::fill(std::span<std::byte> out) {
  size_t done = std::min(pending_size_, out.size());
  std::memcpy(out.data(), pending_ + (kBlock - pending_size_), done);
  pending_size_ -= done;
  const size_t whole = (out.size() - done) / kBlock;
  blocks(out.data() + done, whole);
  done += whole * kBlock;
  if (done < out.size()) {
    blocks(pending_, 1);
    const size_t n = out.size() - done;
    std::memcpy(out.data() + done, pending_, n);
    pending_size_ = kBlock - n;
  }
}

}  // namespace pipeprof::pipelines::formats
