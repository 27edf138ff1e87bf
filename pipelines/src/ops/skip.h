// skip(count): all elements after the first `count` (-1: skips everything).
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class SkipNode final : public DatasetNode {
 public:
  SkipNode(Dataset input, int64_t count);
  std::string_view op() const override { return "skip"; }
  nlohmann::json params() const override { return {{"count", count}}; }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t count;
};

}  // namespace pipeprof::pipelines::ops
