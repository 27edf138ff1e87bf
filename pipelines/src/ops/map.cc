#include "ops/map.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ops/common.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/functions.h"

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

nlohmann::json MapNode::params() const {
  nlohmann::json out{{"parallelism", tunable_json(options.parallelism)},
                     {"deterministic", options.deterministic},
                     {"name", options.name}};
  add_callable_json(out, "fn", fn, "map");
  return out;
}

std::unique_ptr<Iterator> MapNode::make_iterator(const IteratorContext& ctx) const {
  if (options.parallelism == 0) return std::make_unique<MapIterator>(ctx, *this);
  return make_parallel_map_iterator(ctx, *this);
}

sim::MapFn map_timing(const Function& fn, const sim::SimStage& s, const char* stage) {
  const std::string who = fmt::format("{} function '{}'", stage, fn.name);
  if (!fn.sim.known) throw sim::Unsupported(fmt::format("{}: {}", who, fn.sim.unknown));
  const double fill = fn.sim.fill_bytes;
  return {fn.sim.latency_ms + s.context().fill_ms(fill, who), [fn, fill](const sim::Elem& e) {
            if (fn.sim.evaluate) return sim::evaluate(fn, e);
            if (fill > 0) return sim::Elem{std::nullopt, fill};
            return e;
          }};
}

const OpRegistration& map_registration() {
  static const OpRegistration kOp{
      .name = "map",
      .kind = OpKind::kTransform,
      .summary = "a registered function applied to every element, sequential or parallel",
      .fields = {{.name = "fn", .type = FieldType::kString, .required = true,
                  .doc = "a function of functions.h"},
                 {.name = "args", .type = FieldType::kObject,
                  .fallback = nlohmann::json::object(), .spelled_out = false},
                 {.name = "parallelism", .type = FieldType::kTunable, .fallback = 0, .min = 1,
                  .max = kMaxParallelism, .knob = KnobRule{.kind = KnobKind::kParallelism},
                  .doc = "absent: sequential on the consumer's thread", .spelled_out = false},
                 {.name = "deterministic", .type = FieldType::kBoolean, .fallback = true,
                  .spelled_out = false},
                 {.name = "name", .type = FieldType::kString, .fallback = "", .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->map(make_function(s.string("fn"), s.object("args"), s.where()),
                          {.parallelism = s.tunable("parallelism"),
                           .deterministic = s.boolean("deterministic"),
                           .name = s.string("name")});
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const sim::MapFn timing =
            map_timing(make_function(s.string("fn"), s.value("args")), s, "map");
        const sim::NodePtr input = s.input();
        if (s.tunable("parallelism") == 0) {
          return std::make_shared<sim::FnNode>([input, timing] {
            return std::make_unique<sim::SeqMapIterator>(input->iterate(), timing);
          });
        }
        if (!s.boolean("deterministic"))
          throw sim::Unsupported("non-deterministic parallel map");
        const double workers = s.capacity("parallelism");
        return std::make_shared<sim::FnNode>([input, timing, workers] {
          return std::make_unique<sim::ParallelMapIterator>(input->iterate(), timing, workers);
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::map(Function fn, MapOptions options) const {
  return Dataset(std::make_shared<ops::MapNode>(*this, std::move(fn), std::move(options)));
}

}  // namespace pipeprof::pipelines
