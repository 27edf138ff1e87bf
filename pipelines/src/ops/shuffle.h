// shuffle(buffer_size, seed, reshuffle_each_iteration): fills a buffer of buffer_size elements,
// then yields a uniformly chosen buffered element and replaces it with the next input element.
// The output is a permutation of the input; buffer_size 1 keeps the order. With a seed the order
// is the same on every run; each iteration draws its order from (seed, iteration number) unless
// reshuffle_each_iteration is false, in which case every iteration has the same order.
#pragma once

#include <atomic>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

inline constexpr int64_t kMaxShuffleBuffer = int64_t{1} << 24;  // catches typos

class ShuffleNode final : public DatasetNode {
 public:
  ShuffleNode(Dataset input, int64_t buffer_size, ShuffleOptions options);
  std::string_view op() const override { return "shuffle"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t buffer_size;
  ShuffleOptions options;
  uint64_t base_seed;
  mutable std::atomic<uint64_t> iterations{0};  // iterators created so far
};

}  // namespace pipeprof::pipelines::ops
