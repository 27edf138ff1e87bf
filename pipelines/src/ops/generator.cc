#include "ops/generator.h"

#include "ops/common.h"

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

nlohmann::json GeneratorNode::to_json() const {
  nlohmann::json out{{"op", "generator"}};
  add_callable_json(out, "fn", fn, "generator");
  return out;
}

std::unique_ptr<Iterator> GeneratorNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<GeneratorIterator>(ctx, *this);
}

}  // namespace ops

Dataset generator(GeneratorFn fn) {
  if (!fn.fn) throw std::invalid_argument("generator: empty function");
  return Dataset(std::make_shared<ops::GeneratorNode>(std::move(fn)));
}

}  // namespace pipeprof::pipelines
