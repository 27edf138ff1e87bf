#include "ops/repeat.h"

#include <stdexcept>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

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

const OpRegistration& repeat_registration() {
  static const OpRegistration kOp{
      .name = "repeat",
      .kind = OpKind::kTransform,
      .summary = "the input count times (-1: forever); a pass that yields nothing ends it",
      .fields = {{.name = "count", .type = FieldType::kInteger, .fallback = -1, .min = -1}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->repeat(s.integer("count"));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const int64_t count = s.integer("count");
        if (count < 0) throw sim::Unsupported("an endless repeat has no finite time");
        struct State {
          int64_t pass = 0;
          bool produced = false;
          std::unique_ptr<sim::SimIterator> it;
        };
        const sim::NodePtr input = s.input();
        return std::make_shared<sim::FnNode>([input, count] {
          auto state = std::make_shared<State>();
          return std::make_unique<sim::LambdaIterator>(
              [input, count, state](sim::Time t) -> sim::Pull {
                while (state->pass < count) {
                  if (!state->it) {
                    state->it = input->iterate();
                    state->produced = false;
                  }
                  sim::Pull p = state->it->next(t);
                  t = p.at;
                  if (p.elem) {
                    state->produced = true;
                    return p;
                  }
                  state->it.reset();
                  ++state->pass;
                  if (!state->produced) break;  // as the real repeat
                }
                return {std::nullopt, t};
              });
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::repeat(int64_t count) const {
  return Dataset(std::make_shared<ops::RepeatNode>(*this, count));
}

}  // namespace pipeprof::pipelines
