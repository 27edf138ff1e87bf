// batch(batch_size, drop_remainder): stacks batch_size consecutive elements component by
// component along a new first dimension. The last, smaller batch is yielded unless drop_remainder.
// Elements must agree in arity, dtype and shape. A batch directly over a range is fused into one
// stage that fills the batch arithmetically (same values, dtype and shapes).
#pragma once

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/simulation.h"

namespace pipeprof::pipelines::ops {

class BatchNode final : public DatasetNode {
 public:
  BatchNode(Dataset input, int64_t batch_size, bool drop_remainder);
  std::string_view op() const override { return "batch"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t batch_size;
  bool drop_remainder;
};

// The simulation rule of batching `input` (batch's own, and map_and_batch's after its map): a batch
// is ready when its last element is; a short last batch is dropped with drop_remainder.
sim::NodePtr simulate_batch(sim::NodePtr input, int64_t batch_size, bool drop_remainder);

}  // namespace pipeprof::pipelines::ops
