#include "ops/filter.h"

#include <stdexcept>

#include "ops/common.h"

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

nlohmann::json FilterNode::to_json() const {
  nlohmann::json out{{"op", "filter"}};
  add_callable_json(out, "predicate", predicate, "filter");
  return out;
}

std::unique_ptr<Iterator> FilterNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FilterIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::filter(Predicate predicate) const {
  return Dataset(std::make_shared<ops::FilterNode>(*this, std::move(predicate)));
}

}  // namespace pipeprof::pipelines
