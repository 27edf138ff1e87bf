// range(start, stop, step): int64 scalars start, start + step, ... up to (excluding) stop.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class RangeNode final : public DatasetNode {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step);
  std::string_view op() const override { return "range"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t start, stop, step;
};

}  // namespace pipeprof::pipelines::ops
