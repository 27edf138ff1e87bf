// The simulation rule of the process sources (multiprocess, shared_store): `producers` timelines,
// each running the nested pipeline with "$element" = its index (so a generator's fetch latency and
// CPU fill are the nested stages' rules), a queue of `queue_capacity` slots, and the transport's
// cost of each element at a rate measured in the same run: shared_store's copy into the store at
// the memcpy bandwidth (copy = bytes / memcpy), except for a producer's first element, which may
// have to write pages no process has written before (below), and multiprocess's receive out of
// the socket at the rate a large element is received through a socket pair with the transport's
// buffers (receive = bytes / socket rate: the kernel's copies, which run at about half a memcpy's
// rate).
//
// Producer p, its element j (started at the first request, like the real producers, which are
// forked when the iterator is created):
//
//   r = the nested pipeline's next(s)        its pull, started at s
//   a = max(r, the earliest free slot)       a slot of the queue: queue_capacity slots shared by
//                                            all producers (deterministic: ceil(capacity /
//                                            producers) each), taken in the order of r
//   shared_store: the producer writes the element into the store (its one copy, w) and pulls the
//                 next at a + w; the consumer asked at t has it at max(t, a + w) (zero copy),
//                 which frees the slot. w = copy, but for a producer's first element
//                 w = min(first, max(0, L - a) + copy), where first = bytes / the rate of first
//                 writes into a fresh store (the kernel's first touch of each page) and L, the
//                 earliest any space can be freed for reuse, is the earliest a producer's first
//                 element can be written at that rate: a fresh store hands out no space twice
//                 before a release, no object is released before it is taken, and the first one
//                 taken went into pages never written. So a first element written before L pays
//                 the first touches, one after L may go into reused pages, and w is never more
//                 than a run pays either way.
//   multiprocess: the producer's pipeline pulls the next at a while its sender thread writes the
//                 element into the socket; the consumer reads it out as it arrives (the two copies
//                 overlap through the socket's buffer), so it has it at
//                 max(t, a, the end of its read of p's previous element) + receive, which frees
//                 the slot.
//
// The consumer takes the element it can have first (the default, non-deterministic order) or the
// producers' elements in turn (deterministic). The end comes when every producer has ended. Slots
// freed by the consumer are free no earlier than every slot freed before, so handing the free
// slots to the waiting producers in the order of their r, as far as the consumer's next element
// needs, is the exact order of events. Zero framework overhead: no fork, no poll, no allocation
// round trip, no contention for cores (each producer and the consumer run as if on their own
// core); the store's byte capacity (store_mb) is not a bound. The bound (knobs at their best)
// unbounds the queue; `producers` keeps its value, or its knob's starting value: each producer
// runs the whole nested pipeline, so their number sets how many elements there are.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "ops/multiprocess.h"

namespace pipeprof::pipelines::ops {
namespace {

using sim::Elem;
using sim::kUnbounded;
using sim::NodePtr;
using sim::Pull;
using sim::SimIterator;
using sim::Time;
using sim::Unsupported;

enum class Transport {
  kSocket,  // multiprocess
  kStore,   // shared_store
};

// Slots of the queue: `initial` free from the start (kUnbounded for the bound), then the times at
// which the consumer freed the others.
class SlotPool {
 public:
  explicit SlotPool(double initial) : initial_(initial) {}
  bool available() const { return initial_ >= 1 || !freed_.empty(); }
  // The time a producer ready at r holds a slot (available() must be true).
  Time acquire(Time r) {
    if (initial_ >= 1) {
      if (initial_ != kUnbounded) initial_ -= 1;
      return r;
    }
    const Time f = freed_.top();
    freed_.pop();
    return std::max(r, f);
  }
  void release(Time at) {
    if (initial_ != kUnbounded) freed_.push(at);
  }

 private:
  double initial_;
  std::priority_queue<Time, std::vector<Time>, std::greater<>> freed_;
};

struct Held {  // an element holding a slot, not taken yet
  Elem elem;
  Time ready;  // store: written and sealed; socket: its sender may start writing
};

struct Producer {
  std::unique_ptr<SimIterator> it;
  std::optional<Elem> pulled;  // its pipeline's element waiting for a slot
  Time pulled_at = 0;
  bool ended = false;
  Time ended_at = 0;
  std::deque<Held> held;
  Time read_end = 0;  // socket: when the consumer finished reading its previous element
  bool wrote = false;  // store: it wrote an object before (its process touched store pages)
};

struct Settings {
  Transport transport = Transport::kSocket;
  std::string op;
  int64_t producers = 1;
  double capacity = 1;  // queue_capacity, kUnbounded for the bound
  bool deterministic = false;
  nlohmann::json pipeline;
  sim::SimStage::ChainBuilder chain;
  sim::SimContext context;
};

class ProcessSourceIterator final : public SimIterator {
 public:
  explicit ProcessSourceIterator(std::shared_ptr<const Settings> settings)
      : settings_(std::move(settings)), s_(*settings_) {
    const Settings& s = s_;
    const double per_pool =
        s.capacity == kUnbounded
            ? kUnbounded
            : (s.deterministic
                   ? std::max(1.0, std::ceil(s.capacity / static_cast<double>(s.producers)))
                   : s.capacity);
    for (int64_t i = 0; i < (s.deterministic ? s.producers : 1); ++i)
      pools_.emplace_back(per_pool);
  }

  Pull next(Time t) override {
    if (producers_.empty()) start(t);
    while (true) {
      const int who = s_.deterministic ? next_in_turn() : first_ready();
      if (who >= 0) return take(who, t);
      if (who == kAllEnded) {
        Time end = t;
        for (const Producer& p : producers_)
          end = std::max({end, p.ended_at, p.read_end});
        return {std::nullopt, end};
      }
      if (!advance(who == kAdvanceTurn ? turn_ : -1)) {
        throw Unsupported(
            fmt::format("{}: the producers stall (no slot and nothing to take)", s_.op));
      }
    }
  }

 private:
  static constexpr int kAllEnded = -1;
  static constexpr int kAdvance = -2;      // some producer must move first
  static constexpr int kAdvanceTurn = -3;  // the producer whose turn it is must move first

  void start(Time t) {
    for (int64_t i = 0; i < s_.producers; ++i) {
      Producer p;
      p.it =
          s_.chain(sim::substitute_element(s_.pipeline, static_cast<double>(i), s_.op))->iterate();
      producers_.push_back(std::move(p));
      pull(producers_.back(), t);
    }
    if (s_.transport == Transport::kStore) {
      for (const Producer& p : producers_)
        if (p.pulled) reuse_from_ = std::min(reuse_from_, p.pulled_at + first_write_ms(*p.pulled));
    }
  }

  void pull(Producer& p, Time s) {
    Pull q = p.it->next(s);
    if (!q.elem) {
      p.ended = true;
      p.ended_at = q.at;
      return;
    }
    if (!q.elem->bytes) {
      throw Unsupported(
          fmt::format("{}: the size of the producers' elements is not known (its copy)", s_.op));
    }
    p.pulled = std::move(q.elem);
    p.pulled_at = q.at;
  }

  SlotPool& pool(size_t i) { return pools_[s_.deterministic ? i : 0]; }

  Time copy_ms(const Elem& e) const { return s_.context.copy_ms(*e.bytes, s_.op); }
  // w, the write into the store of an element that gets its slot at `a` (the header's rule).
  Time store_write_ms(Producer& p, const Elem& e, Time a) const {
    if (p.wrote) return copy_ms(e);
    p.wrote = true;
    return std::min(first_write_ms(e), std::max<Time>(0, reuse_from_ - a) + copy_ms(e));
  }
  Time first_write_ms(const Elem& e) const { return s_.context.first_write_ms(*e.bytes, s_.op); }
  Time receive_ms(const Elem& e) const { return s_.context.receive_ms(*e.bytes, s_.op); }

  // When producer p's next held element is there for the consumer (socket: its bytes start to
  // arrive, once the consumer has read p's previous element).
  Time ready(const Producer& p) const {
    const Held& h = p.held.front();
    return s_.transport == Transport::kSocket ? std::max(h.ready, p.read_end) : h.ready;
  }

  // Non-deterministic order: the producer whose held element the consumer can have first, once no
  // element still to be given a slot can come before it.
  int first_ready() const {
    int best = -1;
    Time best_at = 0;
    bool live = false;
    Time earliest_pull = kUnbounded;
    for (size_t i = 0; i < producers_.size(); ++i) {
      const Producer& p = producers_[i];
      live = live || !p.ended || !p.held.empty();
      if (p.pulled && pools_[0].available()) earliest_pull = std::min(earliest_pull, p.pulled_at);
      if (p.held.empty()) continue;
      const Time at = ready(p);
      if (best < 0 || at < best_at) {
        best = static_cast<int>(i);
        best_at = at;
      }
    }
    if (!live) return kAllEnded;
    if (best >= 0 && best_at <= earliest_pull) return best;
    return kAdvance;
  }

  // Deterministic order: the producers in turn, skipping those that ended.
  int next_in_turn() {
    for (size_t k = 0; k < producers_.size(); ++k) {
      const Producer& p = producers_[static_cast<size_t>(turn_)];
      if (!p.held.empty()) return turn_;
      if (!p.ended) return kAdvanceTurn;
      turn_ = (turn_ + 1) % static_cast<int>(producers_.size());
    }
    return kAllEnded;
  }

  // Gives a slot to the waiting producer that pulled first (or to `only`); false if none can have
  // one.
  bool advance(int only) {
    int who = -1;
    for (size_t i = 0; i < producers_.size(); ++i) {
      const Producer& p = producers_[i];
      if (only >= 0 && static_cast<int>(i) != only) continue;
      if (!p.pulled || !pool(i).available()) continue;
      if (who < 0 || p.pulled_at < producers_[static_cast<size_t>(who)].pulled_at)
        who = static_cast<int>(i);
    }
    if (who < 0) return false;
    Producer& p = producers_[static_cast<size_t>(who)];
    const Time a = pool(static_cast<size_t>(who)).acquire(p.pulled_at);
    Elem e = std::move(*p.pulled);
    p.pulled.reset();
    if (s_.transport == Transport::kStore) {
      const Time written = a + store_write_ms(p, e, a);
      p.held.push_back({std::move(e), written});
      pull(p, written);
    } else {
      p.held.push_back({std::move(e), a});
      pull(p, a);
    }
    return true;
  }

  Pull take(int who, Time t) {
    Producer& p = producers_[static_cast<size_t>(who)];
    Time at = std::max(t, ready(p));
    if (s_.transport == Transport::kSocket) at += receive_ms(p.held.front().elem);
    Elem e = std::move(p.held.front().elem);
    p.held.pop_front();
    if (s_.transport == Transport::kSocket) p.read_end = at;
    pool(static_cast<size_t>(who)).release(at);
    if (s_.deterministic) turn_ = (who + 1) % static_cast<int>(producers_.size());
    return {std::move(e), at};
  }

  std::shared_ptr<const Settings> settings_;  // shared with the node, which may go first
  const Settings& s_;
  std::vector<Producer> producers_;
  std::vector<SlotPool> pools_;
  int turn_ = 0;
  Time reuse_from_ = kUnbounded;  // store: L, the earliest space can be freed for reuse
};

class ProcessSourceNode final : public sim::SimNode {
 public:
  explicit ProcessSourceNode(Settings s) : s_(std::make_shared<const Settings>(std::move(s))) {}
  std::unique_ptr<SimIterator> iterate() override {
    return std::make_unique<ProcessSourceIterator>(s_);
  }

 private:
  std::shared_ptr<const Settings> s_;
};

}  // namespace

sim::NodePtr simulate_process_source(const sim::SimStage& s) {
  Settings settings;
  settings.op = s.json().value("op", std::string());
  settings.transport = settings.op == "shared_store" ? Transport::kStore : Transport::kSocket;
  // Each producer runs the whole nested pipeline: their number sets how many elements there are,
  // so the bound keeps it at its starting value (autotune::SimResult::wait_mean_ms is what more
  // producers lower); only the queue is unbounded.
  if (s.is_autotune("producers")) {
    const FieldSpec* f = find_op(settings.op)->field("producers");
    settings.producers = f->knob->start;
  } else {
    settings.producers = s.integer("producers");
  }
  settings.capacity = s.capacity("queue_capacity");
  settings.deterministic = s.boolean("deterministic");
  settings.pipeline = s.value("pipeline");
  settings.chain = s.chain_builder();
  settings.context = s.context();
  return std::make_shared<ProcessSourceNode>(std::move(settings));
}

}  // namespace pipeprof::pipelines::ops
