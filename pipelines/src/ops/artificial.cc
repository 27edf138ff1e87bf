#include "ops/artificial.h"

#include <stdexcept>

#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

int64_t ms_to_ns(double ms) {
  return static_cast<int64_t>(ms * static_cast<double>(trace::kNsPerMs));
}

class ArtificialIterator final : public Iterator {
 public:
  ArtificialIterator(const IteratorContext& ctx, const ArtificialNode& node)
      : Iterator(ctx, &node),
        options_(node.options),
        open_name_(trace_phase("open")),
        read_name_(trace_phase("read")) {}

 protected:
  std::optional<Element> next_impl() override {
    if (!opened_) {
      opened_ = true;
      trace::ScopedSpan span(open_name_, trace::category::pipeline());
      if (!precise_sleep_for(ms_to_ns(options_.open_ms))) return std::nullopt;  // cancelled
    }
    if (index_ >= options_.num_samples) return std::nullopt;
    trace::ScopedSpan span(read_name_, trace::category::pipeline());
    if (!precise_sleep_for(ms_to_ns(options_.read_ms))) return std::nullopt;
    return scalar_element(index_++);
  }

 private:
  ArtificialOptions options_;
  trace::NameId open_name_, read_name_;
  bool opened_ = false;
  int64_t index_ = 0;
};

}  // namespace

ArtificialNode::ArtificialNode(ArtificialOptions options_) : options(options_) {
  if (options.open_ms < 0 || options.read_ms < 0 || options.num_samples < 0) {
    throw std::invalid_argument(
        "artificial: open_ms, read_ms and num_samples must not be negative");
  }
}

nlohmann::json ArtificialNode::to_json() const {
  return {{"op", "artificial"},
          {"open_ms", options.open_ms},
          {"read_ms", options.read_ms},
          {"num_samples", options.num_samples}};
}

std::unique_ptr<Iterator> ArtificialNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ArtificialIterator>(ctx, *this);
}

}  // namespace ops

Dataset artificial(ArtificialOptions options) {
  return Dataset(std::make_shared<ops::ArtificialNode>(options));
}

}  // namespace pipeprof::pipelines
