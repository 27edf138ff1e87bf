// take(count): the first `count` elements (-1: all).
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class TakeNode final : public DatasetNode {
 public:
  TakeNode(Dataset input, int64_t count);
  std::string_view op() const override { return "take"; }
  nlohmann::json params() const override { return {{"count", count}}; }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t count;
};

}  // namespace pipeprof::pipelines::ops
