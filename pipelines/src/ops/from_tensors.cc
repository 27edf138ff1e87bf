#include "ops/from_tensors.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/spec.h"

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

nlohmann::json FromTensorsNode::params() const {
  nlohmann::json out = nlohmann::json::object();
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

namespace {

// Sources whose elements are in the spec itself: the simulator replays the real elements, at no
// cost.
sim::NodePtr simulate_in_memory(const sim::SimStage& s) {
  std::vector<sim::Elem> elems;
  for (const Element& e : parse_pipeline({{"stages", {s.json()}}}, "<simulation>").collect())
    elems.push_back(sim::to_elem(e));
  return std::make_shared<sim::ListNode>(std::move(elems), 0, 0);
}

OpRegistration tensors_registration(bool slices) {
  return OpRegistration{
      .name = slices ? "from_tensor_slices" : "from_tensors",
      .kind = OpKind::kSource,
      .summary = slices ? "the rows of each component of a value" : "one element, once",
      .fields = {{.name = "value", .type = FieldType::kValue,
                  .doc = "a number or nested list, or \"$element\" inside an interleave"},
                 {.name = "dtype", .type = FieldType::kString,
                  .doc = "bool, uint8, int32, int64, float32 or float64"},
                 {.name = "components", .type = FieldType::kValue,
                  .doc = "a list of {value, dtype}, instead of value"}},
      .build = [slices](const StageReader& s, const Dataset*) {
        Element element;
        if (s.has("components")) {
          const auto& list = s.raw("components");
          if (!list.is_array() || list.empty()) s.fail("components", "a non-empty list", list);
          for (size_t i = 0; i < list.size(); ++i) {
            const spec_detail::Fields c(list[i], s.fields().path(fmt::format("components[{}]", i)),
                                        s.fields().scope());
            c.only({"value", "dtype"});
            for (Tensor& t : c.element("value", "dtype"))
              element.push_back(std::move(t));
          }
        } else {
          element = s.element("value", "dtype");
        }
        return slices ? from_tensor_slices(std::move(element)) : from_tensors(std::move(element));
      },
      .simulate = simulate_in_memory};
}

}  // namespace

const OpRegistration& from_tensors_registration() {
  static const OpRegistration kOp = tensors_registration(false);
  return kOp;
}

const OpRegistration& from_tensor_slices_registration() {
  static const OpRegistration kOp = tensors_registration(true);
  return kOp;
}

const OpRegistration& from_vector_registration() {
  static const OpRegistration kOp{
      .name = "from_vector",
      .kind = OpKind::kSource,
      .summary = "int64 scalars from a list (written back as from_tensor_slices)",
      .fields = {{.name = "values", .type = FieldType::kValue, .required = true,
                  .doc = "a list of integers"}},
      .build = [](const StageReader& s, const Dataset*) {
        const auto& values = s.raw("values");
        std::vector<int64_t> v;
        if (!values.is_array()) s.fail("values", "a list of integers", values);
        for (const auto& x : values) {
          if (!x.is_number_integer()) s.fail("values", "a list of integers", values);
          v.push_back(x.get<int64_t>());
        }
        return from_vector(v);
      },
      .simulate = simulate_in_memory};
  return kOp;
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
