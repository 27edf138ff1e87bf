#include "ops/take.h"

#include <stdexcept>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class TakeIterator final : public Iterator {
 public:
  TakeIterator(const IteratorContext& ctx, const TakeNode& node)
      : Iterator(ctx, &node),
        remaining_(node.count),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    if (remaining_ == 0) return std::nullopt;
    auto e = input_->next();
    if (e && remaining_ > 0) --remaining_;
    return e;
  }

 private:
  int64_t remaining_;  // -1: unlimited
  std::unique_ptr<Iterator> input_;
};

}  // namespace

TakeNode::TakeNode(Dataset input, int64_t count_) : DatasetNode(std::move(input)), count(count_) {
  if (count < -1) throw std::invalid_argument("take: count must be >= -1");
}

std::unique_ptr<Iterator> TakeNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TakeIterator>(ctx, *this);
}

const OpRegistration& take_registration() {
  static const OpRegistration kOp{
      .name = "take",
      .kind = OpKind::kTransform,
      .summary = "the first count elements (-1: all)",
      .fields = {{.name = "count", .type = FieldType::kInteger, .required = true, .min = -1}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->take(s.integer("count"));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const int64_t count = s.integer("count");
        return sim::counting_stage(s.input(), [count] {
          return [count, pos = int64_t{0}](sim::SimIterator& in, sim::Time t) mutable -> sim::Pull {
            if (count >= 0 && pos >= count) return {std::nullopt, t};
            ++pos;
            return in.next(t);
          };
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::take(int64_t count) const {
  return Dataset(std::make_shared<ops::TakeNode>(*this, count));
}

}  // namespace pipeprof::pipelines
