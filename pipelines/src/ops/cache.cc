#include "ops/cache.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

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

namespace {

// The cache keeps its elements across epochs: after a complete pass, later passes replay them at
// no cost and never touch the input.
class SimCacheNode final : public sim::SimNode {
 public:
  explicit SimCacheNode(sim::NodePtr input) : input_(std::move(input)) {}
  std::unique_ptr<sim::SimIterator> iterate() override {
    if (complete_) return std::make_unique<sim::ListIterator>(*complete_, 0, 0);
    auto input = std::shared_ptr<sim::SimIterator>(input_->iterate());
    auto pending = std::make_shared<std::vector<sim::Elem>>();
    return std::make_unique<sim::LambdaIterator>([this, input, pending](sim::Time t) {
      sim::Pull p = input->next(t);
      if (p.elem) {
        pending->push_back(*p.elem);
      } else if (!complete_) {
        complete_ = *pending;
      }
      return p;
    });
  }

 private:
  sim::NodePtr input_;
  std::optional<std::vector<sim::Elem>> complete_;
};

}  // namespace

const OpRegistration& cache_registration() {
  static const OpRegistration kOp{
      .name = "cache",
      .kind = OpKind::kTransform,
      .summary = "keeps the elements of the first complete pass in memory and replays them",
      .fields = {},
      .build = [](const StageReader&, const Dataset* input) { return input->cache(); },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        return std::make_shared<SimCacheNode>(s.input());
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::cache() const {
  return Dataset(std::make_shared<ops::CacheNode>(*this));
}

}  // namespace pipeprof::pipelines
