#include "ops/skip.h"

#include <stdexcept>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

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

const OpRegistration& skip_registration() {
  static const OpRegistration kOp{
      .name = "skip",
      .kind = OpKind::kTransform,
      .summary = "all but the first count elements (-1: all skipped)",
      .fields = {{.name = "count", .type = FieldType::kInteger, .required = true, .min = -1}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->skip(s.integer("count"));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const int64_t count = s.integer("count");
        return sim::counting_stage(s.input(), [count] {
          return [count, pos = int64_t{0}](sim::SimIterator& in, sim::Time t) mutable -> sim::Pull {
            while (true) {
              sim::Pull p = in.next(t);
              t = p.at;
              if (!p.elem || (count >= 0 && pos++ >= count)) return p;
            }
          };
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::skip(int64_t count) const {
  return Dataset(std::make_shared<ops::SkipNode>(*this, count));
}

}  // namespace pipeprof::pipelines
