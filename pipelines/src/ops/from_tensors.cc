#include "ops/from_tensors.h"

#include <stdexcept>

namespace pipeprof::pipelines {
namespace ops {
namespace {

class FromTensorsIterator final : public Iterator {
 public:
  FromTensorsIterator(const IteratorContext& ctx, const FromTensorsNode& node)
      : Iterator(ctx, &node), node_(node) {}

 protected:
  std::optional<Element> next_impl() override {
    if (row_ >= node_.rows) return std::nullopt;
    const int64_t row = row_++;
    if (!node_.slices) return node_.element;  // shares the buffers: no copy
    Element out;
    out.reserve(node_.element.size());
    for (const Tensor& t : node_.element)
      out.push_back(t[row]);
    return out;
  }

 private:
  const FromTensorsNode& node_;
  int64_t row_ = 0;
};

}  // namespace

FromTensorsNode::FromTensorsNode(Element element_, bool slices_)
    : element(std::move(element_)), slices(slices_) {
  if (element.empty())
    throw std::invalid_argument(std::string(op()) + ": the element has no components");
  if (slices) {
    for (const Tensor& t : element) {
      if (t.rank() == 0) throw std::invalid_argument("from_tensor_slices: cannot slice a scalar");
      if (t.shape()[0] != element[0].shape()[0]) {
        throw std::invalid_argument(
            "from_tensor_slices: components differ in their first dimension");
      }
    }
    rows = element[0].shape()[0];
  }
}

nlohmann::json FromTensorsNode::to_json() const {
  nlohmann::json out{{"op", op()}};
  if (element.size() == 1) {
    out["value"] = element[0].to_json();
    out["dtype"] = dtype_name(element[0].dtype());
    return out;
  }
  nlohmann::json components = nlohmann::json::array();
  for (const Tensor& t : element) {
    components.push_back({{"value", t.to_json()}, {"dtype", dtype_name(t.dtype())}});
  }
  out["components"] = std::move(components);
  return out;
}

std::unique_ptr<Iterator> FromTensorsNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FromTensorsIterator>(ctx, *this);
}

}  // namespace ops

Dataset from_tensors(Element element) {
  return Dataset(std::make_shared<ops::FromTensorsNode>(std::move(element), false));
}
Dataset from_tensor_slices(Element element) {
  return Dataset(std::make_shared<ops::FromTensorsNode>(std::move(element), true));
}
Dataset from_vector(const std::vector<int64_t>& values) {
  return from_tensor_slices(Element{Tensor::from_vector<int64_t>(values)});
}

}  // namespace pipeprof::pipelines
