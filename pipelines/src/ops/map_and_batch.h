// map_and_batch(fn, batch_size, drop_remainder, parallelism): tf.data's fused map and batch. The
// same elements as map(fn) then batch(batch_size, drop_remainder), errors included: an error of fn
// (or of the input) fails the batch being assembled, whose earlier rows are dropped, and the next
// batch starts after the failing element. parallelism 0 calls fn on the consumer's thread;
// >= 1 (or kAutotune, a knob) runs up to that many calls at once on worker threads, which pull the
// input in turn and work up to two batches ahead of the consumer.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class MapAndBatchNode final : public DatasetNode {
 public:
  MapAndBatchNode(Dataset input, Function fn, MapAndBatchOptions options);
  std::string_view op() const override { return "map_and_batch"; }
  std::string display_name() const override;
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  Function fn;
  MapAndBatchOptions options;
};

}  // namespace pipeprof::pipelines::ops
