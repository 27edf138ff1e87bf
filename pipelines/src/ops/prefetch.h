// prefetch(buffer_size): a background thread pulls the input ahead of the consumer into a buffer
// of at most buffer_size elements (kAutotune: a knob). Order and values are unchanged; errors are
// delivered in their place. The thread starts on the first pull and is joined on destruction.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

inline constexpr int64_t kMaxPrefetchBuffer = int64_t{1} << 24;  // catches typos

class PrefetchNode final : public DatasetNode {
 public:
  PrefetchNode(Dataset input, int64_t buffer_size);
  std::string_view op() const override { return "prefetch"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t buffer_size;
};

}  // namespace pipeprof::pipelines::ops
