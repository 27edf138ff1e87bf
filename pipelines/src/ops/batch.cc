#include "ops/batch.h"

#include <stdexcept>

#include "ops/common.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class BatchIterator final : public Iterator {
 public:
  BatchIterator(const IteratorContext& ctx, const BatchNode& node)
      : Iterator(ctx, &node), node_(node), input_(node.inputs()[0].node().make_iterator(input_context())) {
    pending_.reserve(static_cast<size_t>(node.batch_size));
  }

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;
    pending_.clear();
    while (static_cast<int64_t>(pending_.size()) < node_.batch_size) {
      auto e = input_->next();
      if (!e) {
        ended_ = true;
        break;
      }
      pending_.push_back(std::move(*e));
    }
    if (pending_.empty() || (ended_ && node_.drop_remainder &&
                             static_cast<int64_t>(pending_.size()) < node_.batch_size)) {
      return std::nullopt;
    }
    return with_stage(stage_name(), [&] { return stack(); });
  }

 private:
  Element stack() {
    const size_t arity = pending_[0].size();
    Element out;
    out.reserve(arity);
    std::vector<Tensor> parts(pending_.size());
    for (size_t c = 0; c < arity; ++c) {
      for (size_t i = 0; i < pending_.size(); ++i) {
        if (pending_[i].size() != arity) {
          throw std::invalid_argument("element " + std::to_string(i) + " of the batch has " +
                                      std::to_string(pending_[i].size()) +
                                      " components, element 0 has " + std::to_string(arity));
        }
        parts[i] = std::move(pending_[i][c]);
      }
      out.push_back(Tensor::stack(parts));
    }
    return out;
  }

  const BatchNode& node_;
  std::unique_ptr<Iterator> input_;
  std::vector<Element> pending_;
  bool ended_ = false;
};

}  // namespace

BatchNode::BatchNode(Dataset input, int64_t batch_size_, bool drop_remainder_)
    : DatasetNode(std::move(input)), batch_size(batch_size_), drop_remainder(drop_remainder_) {
  if (batch_size < 1) throw std::invalid_argument("batch: batch_size must be positive");
}

nlohmann::json BatchNode::to_json() const {
  return {{"op", "batch"}, {"batch_size", batch_size}, {"drop_remainder", drop_remainder}};
}

std::unique_ptr<Iterator> BatchNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<BatchIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  return Dataset(std::make_shared<ops::BatchNode>(*this, batch_size, drop_remainder));
}

}  // namespace pipeprof::pipelines
