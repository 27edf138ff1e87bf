// filter(predicate): the elements for which the predicate holds.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class FilterNode final : public DatasetNode {
 public:
  FilterNode(Dataset input, Predicate predicate);
  std::string_view op() const override { return "filter"; }
  std::string display_name() const override;
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  Predicate predicate;
};

}  // namespace pipeprof::pipelines::ops
