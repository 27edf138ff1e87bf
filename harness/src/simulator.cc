#include "pipeprof/harness/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "sim_timeline.h"

namespace pipeprof::harness {
namespace sim {
namespace {

struct Ctx {
  const SimOptions& options;
  int64_t autotune_parallelism;
};

double value_or_throw(const Elem& e, const char* who) {
  if (!e.value)
    throw Unsupported(
        fmt::format("{} depends on element values the simulator does not track", who));
  return *e.value;
}

// A stage parameter: a number, or "autotune" (-1).
int64_t tunable(const nlohmann::json& stage, const char* key, int64_t fallback) {
  if (!stage.contains(key)) return fallback;
  const auto& v = stage.at(key);
  if (v.is_string()) return pipelines::kAutotune;
  return v.get<int64_t>();
}

NodePtr build_chain(const nlohmann::json& pipeline, const Ctx& ctx);

// Replaces "$element" / "$element[0]" in a nested pipeline by the outer element's value.
nlohmann::json substitute(const nlohmann::json& j, double value) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "$element" || s == "$element[0]") {
      if (value == static_cast<double>(static_cast<int64_t>(value)))
        return static_cast<int64_t>(value);
      return value;
    }
    if (s.rfind("$element[", 0) == 0)
      throw Unsupported("interleave reads a component other than 0");
    return j;
  }
  if (j.is_array() || j.is_object()) {
    nlohmann::json out = j;
    for (auto& [k, v] : out.items())
      v = substitute(v, value);
    return out;
  }
  return j;
}

class InterleaveNode final : public SimNode {
 public:
  InterleaveNode(NodePtr input, const nlohmann::json& stage, const Ctx& ctx)
      : input_(std::move(input)), ctx_(ctx) {
    nested_ = stage.at("pipeline");
    cycle_ = tunable(stage, "cycle_length", pipelines::kAutotune);
    if (cycle_ == pipelines::kAutotune) cycle_ = ctx.autotune_parallelism;
    block_ = stage.value("block_length", int64_t{1});
    const int64_t p = tunable(stage, "parallelism", 0);
    parallel_ = p != 0;
    if (parallel_ && !stage.value("deterministic", true)) {
      throw Unsupported("non-deterministic parallel interleave");
    }
    const double workers = p == pipelines::kAutotune
                               ? (ctx.options.bound ? kUnbounded : static_cast<double>(cycle_))
                               : static_cast<double>(p);
    if (parallel_ && workers < static_cast<double>(cycle_)) {
      throw Unsupported("parallel interleave with fewer workers than cycle_length");
    }
  }
  std::unique_ptr<SimIterator> iterate() override;

 private:
  friend class InterleaveIterator;
  NodePtr input_;
  const Ctx& ctx_;
  nlohmann::json nested_;
  int64_t cycle_ = 1, block_ = 1;
  bool parallel_ = false;
};

// The cycle algorithm of the real interleave. Sequential: a slot's pipeline is pulled by the
// consumer. Parallel: each open slot is pulled ahead by its own producer (buffer max(2, block)),
// from the moment it is opened; all slots are opened at the first request.
class InterleaveIterator final : public SimIterator {
 public:
  explicit InterleaveIterator(InterleaveNode& node)
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
    const double value = value_or_throw(*x.elem, "interleave's \"$element\"");
    auto inner = build_chain(substitute(node_.nested_, value), node_.ctx_)->iterate();
    Slot& s = slots_[i];
    s.open = true;
    if (node_.parallel_) {
      s.ahead = std::make_unique<AheadPuller>(
          std::move(inner), static_cast<double>(std::max<int64_t>(2, node_.block_)), x.at);
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

  InterleaveNode& node_;
  std::unique_ptr<SimIterator> input_;
  std::vector<Slot> slots_;
  size_t cycle_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  bool input_done_ = false;
  bool started_ = false;
};

std::unique_ptr<SimIterator> InterleaveNode::iterate() {
  return std::make_unique<InterleaveIterator>(*this);
}

// --- building ------------------------------------------------------------------------------------

std::vector<Elem> range_values(int64_t start, int64_t stop, int64_t step) {
  std::vector<Elem> out;
  for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step)
    out.push_back({static_cast<double>(v)});
  return out;
}

NodePtr build_source(const nlohmann::json& stage, const Ctx& ctx) {
  const std::string op = stage.at("op").get<std::string>();
  if (op == "range") {
    // Lazy: a range may be far longer than anything a run pulls from it.
    const int64_t start = stage.value("start", int64_t{0});
    const int64_t stop = stage.at("stop").get<int64_t>();
    const int64_t step = stage.value("step", int64_t{1});
    return std::make_shared<FnNode>([start, stop, step] {
      return std::make_unique<LambdaIterator>([next = start, stop, step](Time t) mutable -> Pull {
        if (step > 0 ? next >= stop : next <= stop) return {std::nullopt, t};
        const double v = static_cast<double>(next);
        // Ends instead of overflowing past INT64 limits.
        if (step > 0 ? stop - next <= step : next - stop <= -step) {
          next = stop;
        } else {
          next += step;
        }
        return {Elem{v}, t};
      });
    });
  }
  if (op == "artificial") {
    return std::make_shared<ListNode>(range_values(0, stage.value("num_samples", int64_t{3}), 1),
                                      stage.value("open_ms", 30.0), stage.value("read_ms", 15.0));
  }
  if (op == "from_vector") {
    std::vector<Elem> v;
    for (const auto& x : stage.at("values"))
      v.push_back({x.get<double>()});
    return std::make_shared<ListNode>(std::move(v), 0, 0);
  }
  if (op == "from_tensors") {
    const auto& value = stage.contains("value") ? stage.at("value") : nlohmann::json();
    return std::make_shared<ListNode>(
        std::vector<Elem>{value.is_number() ? Elem{value.get<double>()} : Elem{}}, 0, 0);
  }
  if (op == "generator") {
    const std::string fn = stage.at("fn").get<std::string>();
    const auto args = stage.value("args", nlohmann::json::object());
    const int64_t count = args.value("count", int64_t{0});
    if (fn == "counter") return std::make_shared<ListNode>(range_values(0, count, 1), 0, 0);
    if (fn == "random_tensors") {
      // The fill's CPU time is not a known latency.
      throw Unsupported(
          "generator 'random_tensors' fills tensors with CPU work of unknown duration");
    }
    throw Unsupported(fmt::format("generator '{}'", fn));
  }
  if (op == "zip") {
    std::vector<NodePtr> inputs;
    for (const auto& p : stage.at("inputs"))
      inputs.push_back(build_chain(p, ctx));
    return std::make_shared<FnNode>([inputs] {
      auto its = std::make_shared<std::vector<std::unique_ptr<SimIterator>>>();
      for (const auto& n : inputs)
        its->push_back(n->iterate());
      return std::make_unique<LambdaIterator>([its](Time t) -> Pull {
        for (auto& it : *its) {
          Pull p = it->next(t);
          t = p.at;
          if (!p.elem) return {std::nullopt, t};
        }
        return {Elem{}, t};
      });
    });
  }
  throw Unsupported(fmt::format("source '{}'", op));
}

// A pass-through stage that decides per element: returns the pulls to deliver.
NodePtr counting_stage(NodePtr input,
                       std::function<std::function<Pull(SimIterator&, Time)>()> make) {
  return std::make_shared<FnNode>([input, make] {
    auto it = std::shared_ptr<SimIterator>(input->iterate());
    auto step = make();
    return std::make_unique<LambdaIterator>([it, step](Time t) { return step(*it, t); });
  });
}

NodePtr apply_stage(NodePtr input, const nlohmann::json& stage, const Ctx& ctx) {
  const std::string op = stage.at("op").get<std::string>();
  const bool bound = ctx.options.bound;
  if (op == "map") {
    MapFn fn = map_fn(stage);
    const int64_t p = tunable(stage, "parallelism", 0);
    if (p == 0) {
      return std::make_shared<FnNode>(
          [input, fn] { return std::make_unique<SeqMapIterator>(input->iterate(), fn); });
    }
    if (!stage.value("deterministic", true)) throw Unsupported("non-deterministic parallel map");
    const double workers =
        p == pipelines::kAutotune
            ? (bound ? kUnbounded : static_cast<double>(ctx.autotune_parallelism))
            : static_cast<double>(p);
    return std::make_shared<FnNode>([input, fn, workers] {
      return std::make_unique<ParallelMapIterator>(input->iterate(), fn, workers);
    });
  }
  if (op == "prefetch") {
    const int64_t b = tunable(stage, "buffer_size", pipelines::kAutotune);
    const double capacity =
        b == pipelines::kAutotune
            ? (bound ? kUnbounded : static_cast<double>(pipelines::kDefaultAutotuneBuffer))
            : static_cast<double>(b);
    return std::make_shared<FnNode>([input, capacity] {
      return std::make_unique<PrefetchIterator>(input->iterate(), capacity);
    });
  }
  if (op == "interleave") return std::make_shared<InterleaveNode>(input, stage, ctx);
  if (op == "cache") return std::make_shared<CacheNode>(input);
  if (op == "batch") {
    const int64_t size = stage.at("batch_size").get<int64_t>();
    const bool drop = stage.value("drop_remainder", false);
    return counting_stage(input, [size, drop] {
      return [size, drop, ended = false](SimIterator& in, Time t) mutable -> Pull {
        int64_t n = 0;
        while (!ended && n < size) {
          Pull p = in.next(t);
          t = p.at;
          if (!p.elem)
            ended = true;
          else
            ++n;
        }
        if (n == 0 || (ended && drop && n < size)) return {std::nullopt, t};
        return {Elem{}, t};
      };
    });
  }
  if (op == "take" || op == "skip" || op == "shard") {
    const bool take = op == "take";
    const int64_t count = stage.value("count", int64_t{-1});
    const int64_t shards = stage.value("num_shards", int64_t{1});
    const int64_t index = stage.value("index", int64_t{0});
    return counting_stage(input, [=] {
      return [=, pos = int64_t{0}](SimIterator& in, Time t) mutable -> Pull {
        while (true) {
          if (take && count >= 0 && pos >= count) return {std::nullopt, t};
          Pull p = in.next(t);
          t = p.at;
          if (!p.elem) return p;
          const int64_t i = pos++;
          if (take) return p;
          if (op == "skip" ? (count < 0 ? false : i >= count) : (i % shards == index)) return p;
        }
      };
    });
  }
  if (op == "filter") {
    const std::string pred = stage.at("predicate").get<std::string>();
    const auto args = stage.value("args", nlohmann::json::object());
    std::function<bool(double)> keep;
    if (pred == "less_than")
      keep = [v = args.at("value").get<double>()](double x) { return x < v; };
    else if (pred == "greater_than")
      keep = [v = args.at("value").get<double>()](double x) { return x > v; };
    else if (pred == "equal")
      keep = [v = args.at("value").get<double>()](double x) { return x == v; };
    else if (pred == "not_equal")
      keep = [v = args.at("value").get<double>()](double x) { return x != v; };
    else
      throw Unsupported(fmt::format("predicate '{}'", pred));
    return counting_stage(input, [keep] {
      return [keep](SimIterator& in, Time t) -> Pull {
        while (true) {
          Pull p = in.next(t);
          t = p.at;
          if (!p.elem || keep(value_or_throw(*p.elem, "filter"))) return p;
        }
      };
    });
  }
  if (op == "repeat") {
    const int64_t count = stage.value("count", int64_t{-1});
    if (count < 0) throw Unsupported("an endless repeat has no finite time");
    // As the real repeat: a pass that yields nothing ends the repetition.
    struct State {
      int64_t pass = 0;
      bool produced = false;
      std::unique_ptr<SimIterator> it;
    };
    return std::make_shared<FnNode>([input, count] {
      auto state = std::make_shared<State>();
      return std::make_unique<LambdaIterator>([input, count, state](Time t) -> Pull {
        while (state->pass < count) {
          if (!state->it) {
            state->it = input->iterate();
            state->produced = false;
          }
          Pull p = state->it->next(t);
          t = p.at;
          if (p.elem) {
            state->produced = true;
            return p;
          }
          state->it.reset();
          ++state->pass;
          if (!state->produced) break;
        }
        return {std::nullopt, t};
      });
    });
  }
  if (op == "shuffle") {
    // The order changes but not the timing: the first pull fills the buffer, every later pull
    // takes one more element. Values are no longer tracked (they are permuted).
    const int64_t buffer = stage.at("buffer_size").get<int64_t>();
    return counting_stage(input, [buffer] {
      return [buffer, held = int64_t{0}, filled = false, ended = false](SimIterator& in,
                                                                        Time t) mutable -> Pull {
        auto pull = [&] {
          Pull p = in.next(t);
          t = p.at;
          if (p.elem) {
            ++held;
          } else {
            ended = true;
          }
        };
        if (!filled) {
          filled = true;
          while (!ended && held < buffer)
            pull();
        }
        if (held == 0) return {std::nullopt, t};
        --held;
        if (!ended) pull();
        return {Elem{}, t};
      };
    });
  }
  throw Unsupported(fmt::format("operation '{}'", op));
}

NodePtr build_chain(const nlohmann::json& pipeline, const Ctx& ctx) {
  const auto& stages = pipeline.at("stages");
  NodePtr node = build_source(stages.at(0), ctx);
  for (size_t i = 1; i < stages.size(); ++i)
    node = apply_stage(node, stages[i], ctx);
  return node;
}

}  // namespace
}  // namespace sim

SimResult simulate(const nlohmann::json& pipeline, const SimOptions& options) {
  using namespace sim;  // NOLINT(google-build-using-namespace): the simulator's own model
  SimResult result;
  const Ctx ctx{options, options.autotune_parallelism > 0
                             ? options.autotune_parallelism
                             : pipelines::default_autotune_parallelism()};
  try {
    NodePtr root = build_chain(pipeline, ctx);
    Time t = 0;
    for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
      auto it = root->iterate();
      while (true) {
        Pull p = it->next(t);
        t = p.at;
        if (!p.elem) break;
        ++result.elements;
        t += options.step_ms;
      }
    }
    result.supported = true;
    result.total_ms = t;
  } catch (const Unsupported& e) {
    result.reason = e.what();
  } catch (const nlohmann::json::exception& e) {
    result.reason = fmt::format("unexpected spec shape: {}", e.what());
  } catch (const std::exception& e) {
    result.reason = fmt::format("simulation failed: {}", e.what());
  }
  return result;
}

}  // namespace pipeprof::harness
