#include "ops/artificial.h"

#include <stdexcept>

#include <fmt/format.h>

#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/waits.h"

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
      auto what = [&] { return fmt::format("{}: its open ({} ms)", stage_name(), options_.open_ms); };
      WaitScope waiting(what);
      if (!precise_sleep_for(ms_to_ns(options_.open_ms))) return std::nullopt;  // cancelled
      note_progress();
    }
    if (index_ >= options_.num_samples) return std::nullopt;
    trace::ScopedSpan span(read_name_, trace::category::pipeline());
    {
      auto what = [&] { return fmt::format("{}: a read ({} ms)", stage_name(), options_.read_ms); };
      WaitScope waiting(what);
      if (!precise_sleep_for(ms_to_ns(options_.read_ms))) return std::nullopt;
    }
    note_progress();
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
  // A day at most: nothing real waits longer, and the nanosecond clock overflows far beyond it.
  constexpr double kMaxMs = 8.64e7;
  if (!(options.open_ms <= kMaxMs) || !(options.read_ms <= kMaxMs)) {
    throw std::invalid_argument("artificial: open_ms and read_ms must be at most 86400000 (a day)");
  }
  if (options.open_ms < 0 || options.read_ms < 0 || options.num_samples < 0) {
    throw std::invalid_argument(
        "artificial: open_ms, read_ms and num_samples must not be negative");
  }
}

nlohmann::json ArtificialNode::params() const {
  return {{"open_ms", options.open_ms},
          {"read_ms", options.read_ms},
          {"num_samples", options.num_samples}};
}

std::unique_ptr<Iterator> ArtificialNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ArtificialIterator>(ctx, *this);
}

const OpRegistration& artificial_registration() {
  static const OpRegistration kOp{
      .name = "artificial",
      .kind = OpKind::kSource,
      .summary = "the tf.data guide's ArtificialDataset: sleeps open_ms once, read_ms per sample",
      .fields = {{.name = "open_ms", .type = FieldType::kNumber, .fallback = 30.0, .min = 0},
                 {.name = "read_ms", .type = FieldType::kNumber, .fallback = 15.0, .min = 0},
                 {.name = "num_samples", .type = FieldType::kInteger, .fallback = 3, .min = 0}},
      .build = [](const StageReader& s, const Dataset*) {
        return artificial({.open_ms = s.number("open_ms"),
                           .read_ms = s.number("read_ms"),
                           .num_samples = s.integer("num_samples")});
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        std::vector<sim::Elem> samples;
        for (int64_t i = 0; i < s.integer("num_samples"); ++i)
          samples.push_back({static_cast<double>(i), sizeof(int64_t)});  // an int64 scalar
        return std::make_shared<sim::ListNode>(std::move(samples), s.number("open_ms"),
                                               s.number("read_ms"));
      }};
  return kOp;
}

}  // namespace ops

Dataset artificial(ArtificialOptions options) {
  return Dataset(std::make_shared<ops::ArtificialNode>(options));
}

}  // namespace pipeprof::pipelines
