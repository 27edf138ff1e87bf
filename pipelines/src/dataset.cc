#include "pipeprof/pipelines/dataset.h"

#include <algorithm>
#include <thread>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines {
namespace {

// The handle Dataset::iterate() returns: it owns the model and the tree, and on destruction
// cancels the tree before tearing it down, so workers blocked anywhere wake at once.
class RootIterator final : public Iterator {
 public:
  RootIterator(const IteratorContext& ctx, std::shared_ptr<const DatasetNode> root)
      : Iterator(ctx, nullptr), root_(std::move(root)), child_(root_->make_iterator(ctx)) {}
  ~RootIterator() override {
    model().cancellation().cancel();
    child_.reset();
  }

 protected:
  // The caller's thread waits inside the tree too (a source's sleep, on the consumer's thread):
  // cancelling the model (Model::cancellation, e.g. on Ctrl-C) wakes it as it wakes the workers.
  std::optional<Element> next_impl() override {
    const CancellationScope scope(&model().cancellation());
    return child_->next();
  }

 private:
  std::shared_ptr<const DatasetNode> root_;  // the graph outlives every iterator in the tree
  std::unique_ptr<Iterator> child_;
};

}  // namespace

int64_t default_autotune_parallelism() {
  return std::clamp<int64_t>(std::thread::hardware_concurrency(), 2, kMaxParallelism);
}

DatasetNode::DatasetNode(Dataset input)
    : inputs_{std::move(input)},
      source_(false),
      chain_index_(inputs_[0].node().chain_index() + 1) {}

DatasetNode::DatasetNode(std::vector<Dataset> inputs) : inputs_(std::move(inputs)) {}

std::unique_ptr<Iterator> Dataset::iterate(IterateOptions options) const {
  IteratorContext ctx{std::make_shared<Model>(), "", "", std::move(options.storage)};
  return std::make_unique<RootIterator>(ctx, node_);
}

nlohmann::json DatasetNode::to_json() const {
  const OpRegistration* registration = find_op(op());
  if (registration == nullptr)
    throw std::logic_error("operation '" + std::string(op()) + "' is not registered");
  return write_stage(*registration, params());
}

nlohmann::json Dataset::to_json() const {
  std::vector<const DatasetNode*> chain;
  for (const DatasetNode* n = node_.get();; n = &n->inputs()[0].node()) {
    chain.push_back(n);
    if (n->is_source()) break;
  }
  nlohmann::json stages = nlohmann::json::array();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    stages.push_back((*it)->to_json());
  return {{"stages", std::move(stages)}};
}

std::vector<Element> Dataset::collect(int64_t limit) const {
  std::vector<Element> out;
  auto it = iterate();
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it->next();
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace pipeprof::pipelines
