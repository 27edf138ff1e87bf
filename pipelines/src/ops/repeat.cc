#include "ops/repeat.h"

#include <stdexcept>

namespace pipeprof::pipelines {
namespace ops {
namespace {

class RepeatIterator final : public Iterator {
 public:
  RepeatIterator(const IteratorContext& ctx, const RepeatNode& node)
      : Iterator(ctx, &node), node_(node) {}

 protected:
  std::optional<Element> next_impl() override {
    while (node_.count < 0 || pass_ < node_.count) {
      if (!input_) {
        input_ = node_.inputs()[0].node().make_iterator(input_context());
        produced_this_pass_ = false;
      }
      if (auto e = input_->next()) {
        produced_this_pass_ = true;
        return e;
      }
      input_.reset();
      ++pass_;
      if (!produced_this_pass_) break;  // an empty input would repeat forever
    }
    return std::nullopt;
  }

 private:
  const RepeatNode& node_;
  std::unique_ptr<Iterator> input_;
  int64_t pass_ = 0;
  bool produced_this_pass_ = false;
};

}  // namespace

RepeatNode::RepeatNode(Dataset input, int64_t count_)
    : DatasetNode(std::move(input)), count(count_) {
  if (count < -1) throw std::invalid_argument("repeat: count must be >= -1");
}

std::unique_ptr<Iterator> RepeatNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RepeatIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::repeat(int64_t count) const {
  return Dataset(std::make_shared<ops::RepeatNode>(*this, count));
}

}  // namespace pipeprof::pipelines
