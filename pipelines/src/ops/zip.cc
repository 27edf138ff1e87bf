#include "ops/zip.h"

#include <stdexcept>

namespace pipeprof::pipelines {
namespace ops {
namespace {

class ZipIterator final : public Iterator {
 public:
  ZipIterator(const IteratorContext& ctx, const ZipNode& node) : Iterator(ctx, &node) {
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      inputs_.push_back(node.inputs()[i].node().make_iterator(
          input_context("inputs[" + std::to_string(i) + "].")));
    }
  }

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;
    Element out;
    for (auto& input : inputs_) {
      auto e = input->next();
      if (!e) {
        ended_ = true;
        return std::nullopt;
      }
      for (Tensor& t : *e)
        out.push_back(std::move(t));
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<Iterator>> inputs_;
  bool ended_ = false;
};

}  // namespace

ZipNode::ZipNode(std::vector<Dataset> zipped) : DatasetNode(std::move(zipped)) {
  if (inputs().empty()) throw std::invalid_argument("zip: needs at least one input");
}

nlohmann::json ZipNode::to_json() const {
  nlohmann::json pipelines = nlohmann::json::array();
  for (const Dataset& d : inputs())
    pipelines.push_back(d.to_json());
  return {{"op", "zip"}, {"inputs", std::move(pipelines)}};
}

std::unique_ptr<Iterator> ZipNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ZipIterator>(ctx, *this);
}

}  // namespace ops

Dataset zip(std::vector<Dataset> inputs) {
  return Dataset(std::make_shared<ops::ZipNode>(std::move(inputs)));
}

}  // namespace pipeprof::pipelines
