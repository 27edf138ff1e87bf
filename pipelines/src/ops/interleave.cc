#include "ops/interleave.h"

#include <stdexcept>

#include "ops/common.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// The sequential algorithm, as tf.data's: loop until the input is exhausted and no slot is open.
class InterleaveIterator final : public Iterator {
 public:
  InterleaveIterator(const IteratorContext& ctx, const InterleaveNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())),
        slots_(static_cast<size_t>(node.cycle_length)) {}

 protected:
  std::optional<Element> next_impl() override {
    while (!input_done_ || open_ > 0) {
      OpenInput& slot = slots_[cycle_];
      if (slot.iterator) {
        if (auto e = slot.iterator->next()) {
          if (++block_ == node_.options.block_length) advance();
          return e;
        }
        slot.close();
        --open_;
        advance();
      } else if (!input_done_) {
        auto x = input_->next();
        if (!x) {
          input_done_ = true;
          continue;
        }
        slot = open_input(node_, *x, input_context("pipeline."), stage_name());
        ++open_;
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

 private:
  void advance() {
    block_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  const InterleaveNode& node_;
  std::unique_ptr<Iterator> input_;
  std::vector<OpenInput> slots_;
  size_t cycle_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  bool input_done_ = false;
};

}  // namespace

OpenInput open_input(const InterleaveNode& node, const Element& x, const IteratorContext& ctx,
                     const std::string& stage) {
  return with_stage(stage, [&] {
    Dataset d = node.fn.fn(x);
    auto it = d.node().make_iterator(ctx);
    return OpenInput{d.shared_node(), std::move(it)};
  });
}

InterleaveNode::InterleaveNode(Dataset input, DatasetFn fn_, InterleaveOptions options_)
    : DatasetNode(std::move(input)),
      fn(std::move(fn_)),
      options(std::move(options_)),
      cycle_length(options.cycle_length == kAutotune ? default_autotune_parallelism()
                                                     : options.cycle_length) {
  if (!fn.fn) throw std::invalid_argument("interleave: empty function");
  if (cycle_length < 1)
    throw std::invalid_argument("interleave: cycle_length must be positive or kAutotune");
  if (options.block_length < 1)
    throw std::invalid_argument("interleave: block_length must be positive");
  if (options.buffer_output_elements < 0 || options.buffer_output_elements > kMaxBufferOutput) {
    throw std::invalid_argument("interleave: buffer_output_elements must be in [0, " +
                                std::to_string(kMaxBufferOutput) + "]");
  }
  if (options.prefetch_input_elements < 0 || options.prefetch_input_elements > kMaxCycleLength) {
    throw std::invalid_argument("interleave: prefetch_input_elements must be in [0, " +
                                std::to_string(kMaxCycleLength) + "]");
  }
  if ((options.parallelism < 0 && options.parallelism != kAutotune) ||
      options.parallelism > kMaxParallelism) {
    throw std::invalid_argument("interleave: parallelism must be in [0, " +
                                std::to_string(kMaxParallelism) + "] or kAutotune");
  }
}

std::string InterleaveNode::display_name() const {
  return options.name.empty() ? std::string("interleave") : named_stage("interleave", options.name);
}

nlohmann::json InterleaveNode::params() const {
  if (!fn.serializable) {
    throw SpecError("interleave: its function '" + fn.name +
                    "' is a C++ callable and cannot be written to a spec");
  }
  return {{"pipeline", fn.args},
          {"cycle_length", tunable_json(options.cycle_length)},
          {"block_length", options.block_length},
          {"parallelism", tunable_json(options.parallelism)},
          {"deterministic", options.deterministic},
          {"buffer_output_elements", options.buffer_output_elements},
          {"prefetch_input_elements", options.prefetch_input_elements},
          {"name", options.name}};
}

std::unique_ptr<Iterator> InterleaveNode::make_iterator(const IteratorContext& ctx) const {
  if (options.parallelism == 0) return std::make_unique<InterleaveIterator>(ctx, *this);
  return make_parallel_interleave_iterator(ctx, *this);
}

const OpRegistration& interleave_registration() {
  static const OpRegistration kOp{
      .name = "interleave",
      .kind = OpKind::kTransform,
      .summary = "tf.data's interleave: a nested pipeline per input element, cycled through",
      .fields = {{.name = "pipeline", .type = FieldType::kPipeline, .required = true,
                  .doc = "opened per input element; \"$element\" is the element"},
                 {.name = "cycle_length", .type = FieldType::kTunable, .fallback = "autotune",
                  .min = 1, .max = kMaxCycleLength,
                  .knob = KnobRule{.kind = KnobKind::kParallelism, .online = false,
                                   .follows = "parallelism"},
                  .doc = "\"autotune\": the number of cores"},
                 {.name = "block_length", .type = FieldType::kInteger, .fallback = 1, .min = 1},
                 {.name = "parallelism", .type = FieldType::kTunable, .fallback = 0, .min = 1,
                  .max = kMaxParallelism,
                  .knob = KnobRule{.kind = KnobKind::kParallelism, .bounded_by = "cycle_length"},
                  .doc = "absent: sequential", .spelled_out = false},
                 {.name = "deterministic", .type = FieldType::kBoolean, .fallback = true,
                  .spelled_out = false},
                 {.name = "buffer_output_elements", .type = FieldType::kInteger, .fallback = 0,
                  .min = 0, .max = kMaxBufferOutput,
                  .doc = "parallel: elements each open pipeline buffers ahead; "
                         "0: block_length, at least 2",
                  .spelled_out = false},
                 {.name = "prefetch_input_elements", .type = FieldType::kInteger, .fallback = 0,
                  .min = 0, .max = kMaxCycleLength,
                  .doc = "parallel: input pipelines opened, and pulled, before the cycle needs "
                         "them; 0: a slot's next input opens when the cycle finds it drained",
                  .spelled_out = false},
                 {.name = "name", .type = FieldType::kString, .fallback = "", .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->interleave(s.pipeline("pipeline"),
                                 {.cycle_length = s.tunable("cycle_length"),
                                  .block_length = s.integer("block_length"),
                                  .parallelism = s.tunable("parallelism"),
                                  .deterministic = s.boolean("deterministic"),
                                  .buffer_output_elements = s.integer("buffer_output_elements"),
                                  .prefetch_input_elements = s.integer("prefetch_input_elements"),
                                  .name = s.string("name")});
      },
      .simulate = simulate_interleave};
  return kOp;
}

}  // namespace ops

Dataset Dataset::interleave(DatasetFn fn, InterleaveOptions options) const {
  return Dataset(std::make_shared<ops::InterleaveNode>(*this, std::move(fn), std::move(options)));
}

}  // namespace pipeprof::pipelines
