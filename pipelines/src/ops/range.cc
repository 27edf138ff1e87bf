#include "ops/range.h"

#include <stdexcept>

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

nlohmann::json RangeNode::to_json() const {
  return {{"op", "range"}, {"start", start}, {"stop", stop}, {"step", step}};
}

std::unique_ptr<Iterator> RangeNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RangeIterator>(ctx, *this);
}

}  // namespace ops

Dataset range(int64_t stop) {
  return range(0, stop, 1);
}
Dataset range(int64_t start, int64_t stop, int64_t step) {
  return Dataset(std::make_shared<ops::RangeNode>(start, stop, step));
}

}  // namespace pipeprof::pipelines
