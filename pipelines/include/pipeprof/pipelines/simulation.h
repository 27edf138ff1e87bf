// The timeline model of the ideal-time simulator (autotune/simulator.h): iterators that answer
// "asked for the next element at time t, when is it ready?", and the producers of the asynchronous
// stages, whose pull times are computed lazily and in order. Each operation's simulation rule
// (its registration, registry.h) builds its node from these pieces and a SimStage.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/pipelines/machine_rates.h"
#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines {
struct OpRegistration;
}  // namespace pipeprof::pipelines

namespace pipeprof::pipelines::sim {

using Time = double;  // ms
constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An element as far as timing is concerned: its scalar value when it has one that later stages
// may depend on (interleave's "$element", filter), or nothing; and its payload size in bytes when
// the simulator knows it (what a process source's transport copies).
struct Elem {
  std::optional<double> value;
  std::optional<double> bytes;
};

struct Pull {
  std::optional<Elem> elem;  // nullopt: the end
  Time at;                   // when the element (or the end) is available
};

class SimIterator {
 public:
  virtual ~SimIterator() = default;
  virtual Pull next(Time t) = 0;
};

class SimNode {
 public:
  virtual ~SimNode() = default;
  virtual std::unique_ptr<SimIterator> iterate() = 0;
};
using NodePtr = std::shared_ptr<SimNode>;

// --- generic iterators -------------------------------------------------------------------------

// Yields precomputed values at the request time plus a per-element latency; `first_latency` is
// paid once, on the first pull (artificial's open).
class ListIterator final : public SimIterator {
 public:
  ListIterator(std::vector<Elem> elems, Time first_latency, Time latency)
      : elems_(std::move(elems)), first_(first_latency), latency_(latency) {}
  Pull next(Time t) override {
    if (!opened_) {
      opened_ = true;
      t += first_;
    }
    if (i_ >= elems_.size()) return {std::nullopt, t};
    return {elems_[i_++], t + latency_};
  }

 private:
  std::vector<Elem> elems_;
  Time first_, latency_;
  bool opened_ = false;
  size_t i_ = 0;
};

class ListNode final : public SimNode {
 public:
  ListNode(std::vector<Elem> elems, Time first, Time latency)
      : elems_(std::move(elems)), first_(first), latency_(latency) {}
  std::unique_ptr<SimIterator> iterate() override {
    return std::make_unique<ListIterator>(elems_, first_, latency_);
  }

 private:
  std::vector<Elem> elems_;
  Time first_, latency_;
};

// A producer that pulls `input` ahead of its consumer with at most `capacity` elements pulled and
// not yet taken, starting at `start` (or the first request). Pull k starts at max(end of pull
// k-1, the time the consumer took element k - capacity); element k is ready `work.latency` after
// its pull (and transformed by `work.value`). This is prefetch and parallel interleave's inputs
// (no work), and the deterministic parallel map with capacity = parallelism (work = the function:
// pulls are serialized, calls overlap).
struct PostPull {
  Time latency = 0;
  std::function<Elem(const Elem&)> value;  // empty: unchanged
};

class AheadPuller {
 public:
  AheadPuller(std::unique_ptr<SimIterator> input, double capacity, std::optional<Time> start,
              PostPull work = {})
      : input_(std::move(input)), capacity_(capacity), start_(start), work_(std::move(work)) {}

  Pull take(Time t) {
    if (!start_) start_ = t;
    const size_t k = takes_.size();
    while (!ended_ && done_.size() <= k)
      pull_one();
    if (k < done_.size()) {
      const Time at = std::max(t, done_[k] + work_.latency);
      takes_.push_back(at);
      return {elems_[k], at};
    }
    return {std::nullopt, std::max(t, end_at_)};
  }

 private:
  void pull_one() {
    const size_t j = done_.size();
    Time s = j == 0 ? *start_ : done_[j - 1];
    if (capacity_ != kUnbounded && static_cast<double>(j) >= capacity_) {
      s = std::max(s, takes_[j - static_cast<size_t>(capacity_)]);
    }
    Pull p = input_->next(s);
    if (!p.elem) {
      ended_ = true;
      end_at_ = p.at;
      return;
    }
    done_.push_back(p.at);
    elems_.push_back(work_.value ? work_.value(*p.elem) : *p.elem);
  }

  std::unique_ptr<SimIterator> input_;
  double capacity_;
  std::optional<Time> start_;
  PostPull work_;
  std::vector<Time> done_, takes_;
  std::vector<Elem> elems_;
  bool ended_ = false;
  Time end_at_ = 0;
};

// --- transformations ----------------------------------------------------------------------------

// A map function's timing: its latency per call and what it makes of an element's value.
struct MapFn {
  Time latency = 0;
  std::function<Elem(const Elem&)> value;
};

class SeqMapIterator final : public SimIterator {
 public:
  SeqMapIterator(std::unique_ptr<SimIterator> input, MapFn fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}
  Pull next(Time t) override {
    Pull p = input_->next(t);
    if (!p.elem) return p;
    return {fn_.value(*p.elem), p.at + fn_.latency};
  }

 private:
  std::unique_ptr<SimIterator> input_;
  MapFn fn_;
};

// Deterministic parallel map with P workers: an AheadPuller with capacity P whose elements are
// ready a function latency after their pull.
class ParallelMapIterator final : public SimIterator {
 public:
  ParallelMapIterator(std::unique_ptr<SimIterator> input, MapFn fn, double parallelism)
      : puller_(std::move(input), parallelism, std::nullopt,
                PostPull{fn.latency, std::move(fn.value)}) {}
  Pull next(Time t) override { return puller_.take(t); }

 private:
  AheadPuller puller_;
};

class PrefetchIterator final : public SimIterator {
 public:
  PrefetchIterator(std::unique_ptr<SimIterator> input, double capacity)
      : puller_(std::move(input), capacity, std::nullopt) {}
  Pull next(Time t) override { return puller_.take(t); }

 private:
  AheadPuller puller_;
};

// Wraps a per-epoch iterator factory as a node.
class FnNode final : public SimNode {
 public:
  explicit FnNode(std::function<std::unique_ptr<SimIterator>()> make) : make_(std::move(make)) {}
  std::unique_ptr<SimIterator> iterate() override { return make_(); }

 private:
  std::function<std::unique_ptr<SimIterator>()> make_;
};

class LambdaIterator final : public SimIterator {
 public:
  explicit LambdaIterator(std::function<Pull(Time)> fn) : fn_(std::move(fn)) {}
  Pull next(Time t) override { return fn_(t); }

 private:
  std::function<Pull(Time)> fn_;
};



// --- helpers for simulation rules ---------------------------------------------------------------

// An element as the simulator tracks it: component 0's value when it holds a single number.
Elem to_elem(const Element& element);
// A scalar element holding `value` (int64 when it is integral), to call a registered callable on.
Element to_element(double value);
// The value a cheap, deterministic callable (SimTiming::evaluate) makes of `e`: the real callable
// called on it. An element without a tracked value stays without one.
template <typename Callable>
Elem evaluate(const Callable& fn, const Elem& e) {
  if (!e.value) return Elem{};
  return to_elem(fn.fn(to_element(*e.value)));
}

// The value of `e`, or Unsupported naming `who` when the simulator does not track it.
inline double value_or_throw(const Elem& e, const char* who) {
  if (!e.value)
    throw Unsupported(std::string(who) + " depends on element values the simulator does not track");
  return *e.value;
}

// A pass-through stage that decides per element: `make` returns, per epoch, the function that
// answers one request from the input iterator.
inline NodePtr counting_stage(NodePtr input,
                              std::function<std::function<Pull(SimIterator&, Time)>()> make) {
  return std::make_shared<FnNode>([input, make] {
    auto it = std::shared_ptr<SimIterator>(input->iterate());
    auto step = make();
    return std::make_unique<LambdaIterator>([it, step](Time t) { return step(*it, t); });
  });
}

// Unsupported only because a measured rate is missing: the caller may measure it and simulate
// again (autotune::SimResult::needs_rates). `rate` names it as MeasuredRates' member does
// ("memcpy_gb_per_s", "fill_gb_per_s", "socket_gb_per_s", "store_first_write_gb_per_s").
struct NeedsMeasurement : Unsupported {
  NeedsMeasurement(const std::string& what, std::string missing)
      : Unsupported(what), rate(std::move(missing)) {}
  std::string rate;
};

// What the simulator is asked for: the ideal (knobs at their starting values) or the bound (knobs
// at their best: unbounded parallelism and buffers), and the machine's measured rates.
struct SimContext {
  bool bound = false;
  int64_t autotune_parallelism = 2;  // what a parallelism knob starts at
  MeasuredRates rates;

  // The time to copy (memcpy) or fill `bytes` at the measured rate; NeedsMeasurement naming `who`
  // when the rate was not measured.
  Time copy_ms(double bytes, std::string_view who) const;
  Time fill_ms(double bytes, std::string_view who) const;
  // The time to receive `bytes` through a socket at the measured rate (NeedsMeasurement likewise).
  Time receive_ms(double bytes, std::string_view who) const;
  // The time to write `bytes` into object-store pages no process has written before (likewise).
  Time first_write_ms(double bytes, std::string_view who) const;
};

// A nested pipeline with "$element" / "$element[0]" replaced by `value` (interleave's inputs, a
// process source's producers); Unsupported naming `who` for another component.
nlohmann::json substitute_element(const nlohmann::json& pipeline, double value,
                                  std::string_view who);

// One stage of a spec as a simulation rule sees it: its fields with the registration's defaults,
// its input node (transformations), and nested pipelines built on request. The spec has been
// validated by the spec reader before it is simulated.
class SimStage {
 public:
  using ChainBuilder = std::function<NodePtr(const nlohmann::json& pipeline)>;
  SimStage(const OpRegistration& op, const nlohmann::json& stage, NodePtr input,
           const SimContext& context, ChainBuilder chain)
      : op_(op), stage_(stage), input_(std::move(input)), context_(context),
        chain_(std::move(chain)) {}

  const nlohmann::json& json() const { return stage_; }
  const NodePtr& input() const { return input_; }
  const SimContext& context() const { return context_; }

  // The field's value as written, else its registered default (null when it has none).
  const nlohmann::json& value(std::string_view key) const;
  bool has(std::string_view key) const { return stage_.contains(std::string(key)); }
  int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  bool boolean(std::string_view key) const;
  std::string string(std::string_view key) const;
  bool is_autotune(std::string_view key) const;
  // A tunable field as a count of workers or buffer slots: its value; "autotune" is its knob's
  // starting value, or kUnbounded for the bound.
  double capacity(std::string_view key) const;
  // A tunable field's value, or kAutotune (-1).
  int64_t tunable(std::string_view key) const;
  // A nested pipeline ({"stages": [...]}) as a node. The builder stays valid for the whole
  // simulation (nested pipelines of an interleave are built as its inputs open).
  NodePtr chain(const nlohmann::json& pipeline) const { return chain_(pipeline); }
  const ChainBuilder& chain_builder() const { return chain_; }

 private:
  const OpRegistration& op_;
  const nlohmann::json& stage_;
  NodePtr input_;
  const SimContext& context_;
  ChainBuilder chain_;
};

}  // namespace pipeprof::pipelines::sim
