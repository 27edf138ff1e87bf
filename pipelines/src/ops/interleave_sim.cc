// interleave's simulation rule: the cycle algorithm of the real operation on the timeline model.
// Sequential: a slot's pipeline is pulled by the consumer. Parallel: each open slot is pulled ahead
// by its own producer (buffer_output_elements deep; by default block_length, at least 2) from the
// moment it is opened; all slots are opened at the first request.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "ops/interleave.h"

namespace pipeprof::pipelines::ops {
namespace {

using sim::AheadPuller;
using sim::Elem;
using sim::NodePtr;
using sim::Pull;
using sim::SimIterator;
using sim::Time;
using sim::Unsupported;

class SimInterleaveNode final : public sim::SimNode {
 public:
  explicit SimInterleaveNode(const sim::SimStage& s)
      : input_(s.input()), nested_(s.value("pipeline")), chain_(s.chain_builder()) {
    cycle_ = s.tunable("cycle_length");
    if (cycle_ == kAutotune) cycle_ = s.context().autotune_parallelism;
    block_ = s.integer("block_length");
    buffer_ = slot_buffer(s.integer("buffer_output_elements"), block_);
    const int64_t p = s.tunable("parallelism");
    parallel_ = p != 0;
    if (parallel_ && !s.boolean("deterministic")) {
      throw Unsupported("non-deterministic parallel interleave");
    }
    const double workers = p == kAutotune ? (s.context().bound ? sim::kUnbounded
                                                               : static_cast<double>(cycle_))
                                          : static_cast<double>(p);
    if (parallel_ && workers < static_cast<double>(cycle_)) {
      throw Unsupported("parallel interleave with fewer workers than cycle_length");
    }
    // Inputs opened ahead share the cycle's workers: more inputs pulled than workers, which the
    // model of one producer per slot does not describe.
    if (parallel_ && s.integer("prefetch_input_elements") > 0) {
      throw Unsupported("parallel interleave with prefetch_input_elements");
    }
  }
  std::unique_ptr<SimIterator> iterate() override;

 private:
  friend class SimInterleaveIterator;
  NodePtr input_;
  nlohmann::json nested_;
  sim::SimStage::ChainBuilder chain_;
  int64_t cycle_ = 1, block_ = 1, buffer_ = 2;
  bool parallel_ = false;
};

class SimInterleaveIterator final : public SimIterator {
 public:
  explicit SimInterleaveIterator(SimInterleaveNode& node)
      : node_(node), input_(node.input_->iterate()), slots_(static_cast<size_t>(node.cycle_)) {}

  Pull next(Time t) override {
    if (node_.parallel_ && !started_) {
      started_ = true;
      for (size_t i = 0; i < slots_.size() && !input_done_; ++i)
        t = open(i, t);
    }
    while (!input_done_ || open_ > 0) {
      Slot& slot = slots_[cycle_];
      if (slot.open) {
        Pull p = slot.ahead ? slot.ahead->take(t) : slot.it->next(t);
        t = p.at;
        if (p.elem) {
          if (++block_ == node_.block_) advance();
          return p;
        }
        slot = Slot{};
        --open_;
        // As the parallel iterator: the drained slot takes the next input at once.
        if (node_.parallel_ && !input_done_) t = open(cycle_, t);
        advance();
      } else if (!input_done_) {
        t = open(cycle_, t);
      } else {
        advance();
      }
    }
    return {std::nullopt, t};
  }

 private:
  struct Slot {
    bool open = false;
    std::unique_ptr<SimIterator> it;
    std::unique_ptr<AheadPuller> ahead;
  };

  Time open(size_t i, Time t) {
    Pull x = input_->next(t);
    if (!x.elem) {
      input_done_ = true;
      return x.at;
    }
    const double value = sim::value_or_throw(*x.elem, "interleave's \"$element\"");
    auto inner = node_.chain_(sim::substitute_element(node_.nested_, value, "interleave"))->iterate();
    Slot& s = slots_[i];
    s.open = true;
    if (node_.parallel_) {
      s.ahead =
          std::make_unique<AheadPuller>(std::move(inner), static_cast<double>(node_.buffer_), x.at);
    } else {
      s.it = std::move(inner);
    }
    ++open_;
    return x.at;
  }

  void advance() {
    block_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  SimInterleaveNode& node_;
  std::unique_ptr<SimIterator> input_;
  std::vector<Slot> slots_;
  size_t cycle_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  bool input_done_ = false;
  bool started_ = false;
};

std::unique_ptr<SimIterator> SimInterleaveNode::iterate() {
  return std::make_unique<SimInterleaveIterator>(*this);
}

}  // namespace

sim::NodePtr simulate_interleave(const sim::SimStage& stage) {
  return std::make_shared<SimInterleaveNode>(stage);
}

}  // namespace pipeprof::pipelines::ops
