#include "ops/map.h"

#include <stdexcept>

#include "ops/common.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class MapIterator final : public Iterator {
 public:
  MapIterator(const IteratorContext& ctx, const MapNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    auto e = input_->next();
    if (!e) return std::nullopt;
    return with_stage(stage_name(), [&] {
      trace::ScopedSpan span(trace_work_name(), trace::category::pipeline());
      return node_.fn.fn(std::move(*e));
    });
  }

 private:
  const MapNode& node_;
  std::unique_ptr<Iterator> input_;
};

}  // namespace

MapNode::MapNode(Dataset input, Function fn_, MapOptions options_)
    : DatasetNode(std::move(input)), fn(std::move(fn_)), options(std::move(options_)) {
  if (!fn.fn) throw std::invalid_argument("map: empty function");
  if ((options.parallelism < 0 && options.parallelism != kAutotune) ||
      options.parallelism > kMaxParallelism) {
    throw std::invalid_argument("map: parallelism must be in [0, " +
                                std::to_string(kMaxParallelism) + "] or kAutotune");
  }
}

std::string MapNode::display_name() const {
  return named_stage("map", options.name.empty() ? fn.name : options.name);
}

nlohmann::json MapNode::to_json() const {
  nlohmann::json out{{"op", "map"}};
  add_callable_json(out, "fn", fn, "map");
  if (options.parallelism != 0) out["parallelism"] = tunable_json(options.parallelism);
  if (!options.deterministic) out["deterministic"] = false;
  if (!options.name.empty()) out["name"] = options.name;
  return out;
}

std::unique_ptr<Iterator> MapNode::make_iterator(const IteratorContext& ctx) const {
  if (options.parallelism == 0) return std::make_unique<MapIterator>(ctx, *this);
  return make_parallel_map_iterator(ctx, *this);
}

}  // namespace ops

Dataset Dataset::map(Function fn, MapOptions options) const {
  return Dataset(std::make_shared<ops::MapNode>(*this, std::move(fn), std::move(options)));
}

}  // namespace pipeprof::pipelines
