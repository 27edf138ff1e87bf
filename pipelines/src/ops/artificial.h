// artificial(open_ms, read_ms, num_samples): the tf.data guide's ArtificialDataset. When its
// iterator is first pulled it sleeps open_ms ("open a file"); before each of its num_samples
// elements it sleeps read_ms ("read a record"); the element is the sample index as an int64 scalar.
// After the last element it ends without sleeping. Sleeps are precise (sleep.h).
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class ArtificialNode final : public DatasetNode {
 public:
  explicit ArtificialNode(ArtificialOptions options);
  std::string_view op() const override { return "artificial"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  ArtificialOptions options;
};

}  // namespace pipeprof::pipelines::ops
