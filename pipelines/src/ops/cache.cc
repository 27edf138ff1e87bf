#include "ops/cache.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class CacheIterator final : public Iterator {
 public:
  CacheIterator(const IteratorContext& ctx, const CacheNode& node)
      : Iterator(ctx, &node), node_(node), cached_(node.complete()) {
    if (!cached_) input_ = node.inputs()[0].node().make_iterator(input_context());
  }

 protected:
  std::optional<Element> next_impl() override {
    if (cached_) {
      if (position_ >= cached_->size()) return std::nullopt;
      return (*cached_)[position_++];  // shares the tensors' buffers
    }
    if (done_) return std::nullopt;
    std::optional<Element> e;
    try {
      e = input_->next();
    } catch (...) {
      failed_ = true;  // this pass misses an element: it will not be stored
      throw;
    }
    if (!e) {
      done_ = true;
      // A pass that lost an element to an error, or an input cut short by cancellation (the tree
      // is being destroyed mid-pass), is not a complete pass.
      if (!failed_ && !cancellation().cancelled()) node_.commit(std::move(pending_));
      return std::nullopt;
    }
    pending_.push_back(*e);
    set_buffered(static_cast<int64_t>(pending_.size()));
    return e;
  }

 private:
  const CacheNode& node_;
  std::shared_ptr<const std::vector<Element>> cached_;
  std::unique_ptr<Iterator> input_;
  std::vector<Element> pending_;
  size_t position_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<const std::vector<Element>> CacheNode::complete() const {
  std::lock_guard<std::mutex> lock(store_->mu);
  return store_->elements;
}

void CacheNode::commit(std::vector<Element> elements) const {
  std::lock_guard<std::mutex> lock(store_->mu);
  if (!store_->elements)
    store_->elements = std::make_shared<const std::vector<Element>>(std::move(elements));
}

std::unique_ptr<Iterator> CacheNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<CacheIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::cache() const {
  return Dataset(std::make_shared<ops::CacheNode>(*this));
}

}  // namespace pipeprof::pipelines
