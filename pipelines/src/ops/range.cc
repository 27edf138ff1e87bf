#include "ops/range.h"

#include <stdexcept>

#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class RangeIterator final : public Iterator {
 public:
  RangeIterator(const IteratorContext& ctx, const RangeNode& node)
      : Iterator(ctx, &node), next_(node.start), stop_(node.stop), step_(node.step) {}

 protected:
  std::optional<Element> next_impl() override {
    if (step_ > 0 ? next_ >= stop_ : next_ <= stop_) return std::nullopt;
    const int64_t value = next_;
    // The last element when one more step would reach or pass stop (never overflows int64).
    if (step_ > 0 ? stop_ - next_ <= step_ : next_ - stop_ <= -step_) {
      next_ = stop_;
    } else {
      next_ += step_;
    }
    return scalar_element(value);
  }

 private:
  int64_t next_, stop_, step_;
};

}  // namespace

RangeNode::RangeNode(int64_t start_, int64_t stop_, int64_t step_)
    : start(start_), stop(stop_), step(step_) {
  if (step == 0) throw std::invalid_argument("range: step must not be 0");
}

nlohmann::json RangeNode::params() const {
  return {{"start", start}, {"stop", stop}, {"step", step}};
}

std::unique_ptr<Iterator> RangeNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RangeIterator>(ctx, *this);
}

const OpRegistration& range_registration() {
  static const OpRegistration kOp{
      .name = "range",
      .kind = OpKind::kSource,
      .summary = "int64 scalars start, start + step, ... up to (excluding) stop",
      .fields = {{.name = "start", .type = FieldType::kInteger, .fallback = 0},
                 {.name = "stop", .type = FieldType::kInteger, .required = true},
                 {.name = "step", .type = FieldType::kInteger, .fallback = 1,
                  .doc = "not 0"}},
      .build = [](const StageReader& s, const Dataset*) {
        const int64_t step = s.integer("step");
        if (step == 0) s.fail("step", "a non-zero integer", step);
        return range(s.integer("start"), s.integer("stop"), step);
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        using namespace sim;  // NOLINT(google-build-using-namespace): the simulation model
        // Lazy: a range may be far longer than anything a run pulls from it.
        const int64_t start = s.integer("start"), stop = s.integer("stop"), step = s.integer("step");
        return std::make_shared<FnNode>([start, stop, step] {
          return std::make_unique<LambdaIterator>(
              [next = start, stop, step](Time t) mutable -> Pull {
                if (step > 0 ? next >= stop : next <= stop) return {std::nullopt, t};
                const double v = static_cast<double>(next);
                // Ends instead of overflowing past INT64 limits.
                if (step > 0 ? stop - next <= step : next - stop <= -step) {
                  next = stop;
                } else {
                  next += step;
                }
                return {Elem{v, sizeof(int64_t)}, t};  // an int64 scalar
              });
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset range(int64_t stop) {
  return range(0, stop, 1);
}
Dataset range(int64_t start, int64_t stop, int64_t step) {
  return Dataset(std::make_shared<ops::RangeNode>(start, stop, step));
}

}  // namespace pipeprof::pipelines
