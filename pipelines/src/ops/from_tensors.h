// from_tensors(element): yields `element` once.
// from_tensor_slices(element): yields row i of every component, for each row of dimension 0.
// from_vector(values): from_tensor_slices of an int64 vector, i.e. the values as scalars.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class FromTensorsNode final : public DatasetNode {
 public:
  FromTensorsNode(Element element, bool slices);
  std::string_view op() const override { return slices ? "from_tensor_slices" : "from_tensors"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  Element element;
  bool slices;
  int64_t rows = 1;
};

}  // namespace pipeprof::pipelines::ops
