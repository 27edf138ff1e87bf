// generator(fn): elements from a C++ callable. fn.fn() is called once per iteration and returns
// the pull function of that iteration; each pull yields an element or std::nullopt (the end).
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class GeneratorNode final : public DatasetNode {
 public:
  explicit GeneratorNode(GeneratorFn generator_fn) : fn(std::move(generator_fn)) {}
  std::string_view op() const override { return "generator"; }
  std::string display_name() const override;
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  GeneratorFn fn;
};

}  // namespace pipeprof::pipelines::ops
