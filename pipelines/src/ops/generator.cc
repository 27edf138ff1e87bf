#include "ops/generator.h"

#include <fmt/format.h>

#include "ops/common.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/functions.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class GeneratorIterator final : public Iterator {
 public:
  GeneratorIterator(const IteratorContext& ctx, const GeneratorNode& node)
      : Iterator(ctx, &node), node_(node) {}

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;  // the end is sticky, whatever the pull function does next
    auto e = with_stage(stage_name(), [&]() -> std::optional<Element> {
      if (!pull_) {
        pull_ = node_.fn.fn();
        if (!pull_) throw std::runtime_error("the generator factory returned an empty function");
      }
      trace::ScopedSpan span(trace_work_name(), trace::category::pipeline());
      return pull_();
    });
    ended_ = !e.has_value();
    return e;
  }

 private:
  const GeneratorNode& node_;
  std::function<std::optional<Element>()> pull_;
  bool ended_ = false;
};

}  // namespace

std::string GeneratorNode::display_name() const {
  return named_stage("generator", fn.name);
}

nlohmann::json GeneratorNode::params() const {
  nlohmann::json out = nlohmann::json::object();
  add_callable_json(out, "fn", fn, "generator");
  return out;
}

std::unique_ptr<Iterator> GeneratorNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<GeneratorIterator>(ctx, *this);
}

const OpRegistration& generator_registration() {
  static const OpRegistration kOp{
      .name = "generator",
      .kind = OpKind::kSource,
      .summary = "elements from a registered generator function",
      .fields = {{.name = "fn", .type = FieldType::kString, .required = true,
                  .doc = "a generator of functions.h"},
                 {.name = "args", .type = FieldType::kObject,
                  .fallback = nlohmann::json::object(), .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset*) {
        return generator(make_generator(s.string("fn"), s.object("args"), s.where()));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        // The real generator runs when its timing is known and its values are cheap to make.
        const GeneratorFn fn = make_generator(s.string("fn"), s.value("args"));
        if (!fn.sim.known) throw sim::Unsupported(fmt::format("generator '{}': {}", fn.name, fn.sim.unknown));
        if (!fn.sim.evaluate) throw sim::Unsupported(fmt::format("generator '{}': its values are not cheap to make", fn.name));
        const double latency = fn.sim.latency_ms;
        return std::make_shared<sim::FnNode>([fn, latency] {
          return std::make_unique<sim::LambdaIterator>(
              [pull = fn.fn(), latency](sim::Time t) mutable -> sim::Pull {
                auto e = pull();
                if (!e) return {std::nullopt, t};
                return {sim::to_elem(*e), t + latency};
              });
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset generator(GeneratorFn fn) {
  if (!fn.fn) throw std::invalid_argument("generator: empty function");
  return Dataset(std::make_shared<ops::GeneratorNode>(std::move(fn)));
}

}  // namespace pipeprof::pipelines
