// zip(inputs): tuples of the inputs' components (all components of input 0, then of input 1, ...);
// ends when the shortest input ends.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class ZipNode final : public DatasetNode {
 public:
  explicit ZipNode(std::vector<Dataset> inputs);
  std::string_view op() const override { return "zip"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;
};

}  // namespace pipeprof::pipelines::ops
