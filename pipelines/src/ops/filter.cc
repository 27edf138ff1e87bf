#include "ops/filter.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ops/common.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/functions.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class FilterIterator final : public Iterator {
 public:
  FilterIterator(const IteratorContext& ctx, const FilterNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    while (true) {
      auto e = input_->next();
      if (!e) return std::nullopt;
      if (with_stage(stage_name(), [&] { return node_.predicate.fn(*e); })) return e;
    }
  }

 private:
  const FilterNode& node_;
  std::unique_ptr<Iterator> input_;
};

}  // namespace

FilterNode::FilterNode(Dataset input, Predicate predicate_)
    : DatasetNode(std::move(input)), predicate(std::move(predicate_)) {
  if (!predicate.fn) throw std::invalid_argument("filter: empty predicate");
}

std::string FilterNode::display_name() const {
  return named_stage("filter", predicate.name);
}

nlohmann::json FilterNode::params() const {
  nlohmann::json out = nlohmann::json::object();
  add_callable_json(out, "predicate", predicate, "filter");
  return out;
}

std::unique_ptr<Iterator> FilterNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FilterIterator>(ctx, *this);
}

const OpRegistration& filter_registration() {
  static const OpRegistration kOp{
      .name = "filter",
      .kind = OpKind::kTransform,
      .summary = "the elements a registered predicate keeps",
      .fields = {{.name = "predicate", .type = FieldType::kString, .required = true,
                  .doc = "a predicate of functions.h"},
                 {.name = "args", .type = FieldType::kObject,
                  .fallback = nlohmann::json::object(), .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->filter(make_predicate(s.string("predicate"), s.object("args"), s.where()));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        // The real predicate decides, on the element's tracked value.
        const Predicate predicate = make_predicate(s.string("predicate"), s.value("args"));
        if (!predicate.sim.known || !predicate.sim.evaluate) {
          throw sim::Unsupported(
              fmt::format("predicate '{}': {}", predicate.name, predicate.sim.unknown));
        }
        const double latency = predicate.sim.latency_ms;
        return sim::counting_stage(s.input(), [predicate, latency] {
          return [predicate, latency](sim::SimIterator& in, sim::Time t) -> sim::Pull {
            while (true) {
              sim::Pull p = in.next(t);
              t = p.at;
              if (!p.elem) return p;
              t += latency;
              p.at = t;
              if (predicate.fn(sim::to_element(sim::value_or_throw(*p.elem, "filter")))) return p;
            }
          };
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::filter(Predicate predicate) const {
  return Dataset(std::make_shared<ops::FilterNode>(*this, std::move(predicate)));
}

}  // namespace pipeprof::pipelines
