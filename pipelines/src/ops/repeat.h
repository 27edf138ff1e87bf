// repeat(count): the input `count` times (-1: forever), each pass from a fresh input iterator.
// An input that yields nothing ends the repetition instead of looping forever.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class RepeatNode final : public DatasetNode {
 public:
  RepeatNode(Dataset input, int64_t count);
  std::string_view op() const override { return "repeat"; }
  nlohmann::json params() const override { return {{"count", count}}; }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t count;
};

}  // namespace pipeprof::pipelines::ops
