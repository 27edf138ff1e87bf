#include "ops/take.h"

#include <stdexcept>

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

}  // namespace ops

Dataset Dataset::take(int64_t count) const {
  return Dataset(std::make_shared<ops::TakeNode>(*this, count));
}

}  // namespace pipeprof::pipelines
