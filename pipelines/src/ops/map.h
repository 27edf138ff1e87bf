// map(fn, parallelism, deterministic): fn applied to every element.
// parallelism 0 runs fn on the caller's thread. parallelism >= 1 (or kAutotune, a knob) runs up to
// that many calls at once on worker threads; at most `parallelism` results are in flight or
// buffered. deterministic (the default) yields results in input order; otherwise as they finish.
// An exception from fn is delivered in the failing element's place as a PipelineError naming the
// stage; the elements before it have been delivered and the iteration may continue after it.
#pragma once

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/simulation.h"

namespace pipeprof::pipelines::ops {

class MapNode final : public DatasetNode {
 public:
  MapNode(Dataset input, Function fn, MapOptions options);
  std::string_view op() const override { return "map"; }
  std::string display_name() const override;
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  Function fn;
  MapOptions options;
};

// The parallel implementation (parallel_map.cc).
std::unique_ptr<Iterator> make_parallel_map_iterator(const IteratorContext& ctx,
                                                     const MapNode& node);

// A map function's timing for the simulator (map and map_and_batch): its stated latency plus its
// fill at the measured fill rate; values evaluated when cheap, a fill's new element of
// `fill_bytes`, else passed through. Unsupported naming `stage` when the timing is not known.
sim::MapFn map_timing(const Function& fn, const sim::SimStage& s, const char* stage);

}  // namespace pipeprof::pipelines::ops
