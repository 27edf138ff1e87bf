// interleave(fn, cycle_length, block_length, parallelism): tf.data's interleave. Each input element
// x opens the pipeline fn(x); up to cycle_length such pipelines are open at once and the output
// takes block_length consecutive elements from each in turn. When a pipeline ends its slot is
// freed and the cycle moves on at once; the freed slot is refilled from the input when the cycle
// comes back to it. cycle_length 1 is a flat map.
//
// parallelism 0 is sequential: a pipeline is opened only when the cycle first reaches its slot.
// parallelism >= 1 (or kAutotune, a knob within [1, cycle_length]) opens all cycle_length
// pipelines at once and lets that many workers pull them ahead into per-slot buffers; with
// deterministic (the default) the output order is exactly the sequential one. Each slot buffers
// buffer_output_elements elements (default: block_length, at least 2), and prefetch_input_elements
// more inputs are opened ahead of the cycle and pulled by the same workers (default 0).
#pragma once

#include <algorithm>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/simulation.h"

namespace pipeprof::pipelines::ops {

inline constexpr int64_t kMaxCycleLength = 4096;  // catches typos before they exhaust threads
inline constexpr int64_t kMaxBufferOutput = 1 << 20;

// The elements each open slot of a parallel interleave buffers (filled or being pulled).
inline int64_t slot_buffer(int64_t buffer_output_elements, int64_t block_length) {
  return buffer_output_elements > 0 ? buffer_output_elements : std::max<int64_t>(2, block_length);
}

class InterleaveNode final : public DatasetNode {
 public:
  InterleaveNode(Dataset input, DatasetFn fn, InterleaveOptions options);
  std::string_view op() const override { return "interleave"; }
  std::string display_name() const override;
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  DatasetFn fn;
  InterleaveOptions options;
  int64_t cycle_length;  // resolved (kAutotune: the number of cores)
};

// One open input pipeline: the Dataset fn(x) made and its iterator, which refers to it. The
// iterator must go first (its workers use the graph): destruction does that by member order, and
// close() does it explicitly, since assigning a new value would release the graph first.
struct OpenInput {
  std::shared_ptr<const DatasetNode> dataset;
  std::unique_ptr<Iterator> iterator;

  void close() {
    iterator.reset();
    dataset.reset();
  }
};

// Opens fn(x) as the input pipeline of `node`'s stage (errors name the stage).
OpenInput open_input(const InterleaveNode& node, const Element& x, const IteratorContext& ctx,
                     const std::string& stage);

class BatchRows;
// `rows`: the batch that consumes this interleave directly, to place elements in their rows
// (batch_rows.h; deterministic only); nullptr for any other consumer.
std::unique_ptr<Iterator> make_parallel_interleave_iterator(const IteratorContext& ctx,
                                                            const InterleaveNode& node,
                                                            std::shared_ptr<BatchRows> rows = nullptr);

// The simulation rule (interleave_sim.cc): the same cycle algorithm on the timeline model.
sim::NodePtr simulate_interleave(const sim::SimStage& stage);

}  // namespace pipeprof::pipelines::ops
