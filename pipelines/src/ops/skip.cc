#include "ops/skip.h"

#include <stdexcept>

namespace pipeprof::pipelines {
namespace ops {
namespace {

class SkipIterator final : public Iterator {
 public:
  SkipIterator(const IteratorContext& ctx, const SkipNode& node)
      : Iterator(ctx, &node),
        to_skip_(node.count),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    while (to_skip_ != 0) {
      if (!input_->next()) {
        to_skip_ = 0;
        return std::nullopt;
      }
      if (to_skip_ > 0) --to_skip_;
    }
    return input_->next();
  }

 private:
  int64_t to_skip_;  // -1: everything
  std::unique_ptr<Iterator> input_;
};

}  // namespace

SkipNode::SkipNode(Dataset input, int64_t count_) : DatasetNode(std::move(input)), count(count_) {
  if (count < -1) throw std::invalid_argument("skip: count must be >= -1");
}

std::unique_ptr<Iterator> SkipNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<SkipIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::skip(int64_t count) const {
  return Dataset(std::make_shared<ops::SkipNode>(*this, count));
}

}  // namespace pipeprof::pipelines
