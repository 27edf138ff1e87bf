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
        // The real generator runs when its timing is known and its values are cheap to make;
        // one whose values are not (random_tensors) states how many it yields and their size.
        const GeneratorFn fn = make_generator(s.string("fn"), s.value("args"));
        const std::string who = fmt::format("generator '{}'", fn.name);
        if (!fn.sim.known) throw sim::Unsupported(fmt::format("{}: {}", who, fn.sim.unknown));
        const double latency = fn.sim.latency_ms + s.context().fill_ms(fn.sim.fill_bytes, who);
        if (!fn.sim.evaluate) {
          if (fn.sim.count < 0)
            throw sim::Unsupported(fmt::format("{}: its values are not cheap to make", who));
          const sim::Elem elem{std::nullopt, fn.sim.fill_bytes};
          return std::make_shared<sim::FnNode>([elem, count = fn.sim.count, latency] {
            return std::make_unique<sim::LambdaIterator>(
                [elem, count, latency, i = int64_t{0}](sim::Time t) mutable -> sim::Pull {
                  if (i >= count) return {std::nullopt, t};
                  ++i;
                  return {elem, t + latency};
                });
          });
        }
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
