#include "ops/zip.h"

#include <stdexcept>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

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

nlohmann::json ZipNode::params() const {
  nlohmann::json pipelines = nlohmann::json::array();
  for (const Dataset& d : inputs())
    pipelines.push_back(d.to_json());
  return {{"inputs", std::move(pipelines)}};
}

std::unique_ptr<Iterator> ZipNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ZipIterator>(ctx, *this);
}

const OpRegistration& zip_registration() {
  static const OpRegistration kOp{
      .name = "zip",
      .kind = OpKind::kSource,
      .summary = "tuples of the inputs' components; ends with the shortest input",
      .fields = {{.name = "inputs", .type = FieldType::kPipelines, .required = true}},
      .build = [](const StageReader& s, const Dataset*) { return zip(s.pipelines("inputs")); },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        std::vector<sim::NodePtr> inputs;
        for (const auto& p : s.value("inputs"))
          inputs.push_back(s.chain(p));
        return std::make_shared<sim::FnNode>([inputs] {
          auto its = std::make_shared<std::vector<std::unique_ptr<sim::SimIterator>>>();
          for (const auto& n : inputs)
            its->push_back(n->iterate());
          return std::make_unique<sim::LambdaIterator>([its](sim::Time t) -> sim::Pull {
            std::optional<double> bytes = 0.0;  // the inputs' components side by side
            for (auto& it : *its) {
              sim::Pull p = it->next(t);
              t = p.at;
              if (!p.elem) return {std::nullopt, t};
              bytes = bytes && p.elem->bytes ? std::optional(*bytes + *p.elem->bytes)
                                             : std::nullopt;
            }
            return {sim::Elem{std::nullopt, bytes}, t};
          });
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset zip(std::vector<Dataset> inputs) {
  return Dataset(std::make_shared<ops::ZipNode>(std::move(inputs)));
}

}  // namespace pipeprof::pipelines
