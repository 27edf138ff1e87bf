#include "ops/prefetch.h"

#include <fmt/format.h>
#include <stdexcept>
#include <thread>

#include "ops/common.h"
#include "ops/handoff.h"
#include "pipeprof/pipelines/sleep.h"
#include "ops/stage_reader.h"
#include "ops/worker_thread.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// One producer thread, one consumer, one hand-off queue of buffer_size slots between them. Each
// side wakes the other only when it waits, and each polls briefly before it blocks, so a stream of
// fast elements costs no futex call per element.
class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(const IteratorContext& ctx, const PrefetchNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())),
        handoff_(cancellation()) {
    if (node.buffer_size == kAutotune) {
      knob_ = &this->node()->knob("buffer_size", 1, kMaxBufferSize, kDefaultAutotuneBuffer);
      handoff_.follow(*knob_);
    }
    stats().buffer_capacity.store(capacity(), std::memory_order_relaxed);
  }

  ~PrefetchIterator() override {
    if (knob_ != nullptr) handoff_.unfollow(*knob_);
    handoff_.stop();
    if (producer_.joinable()) producer_.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    if (!producer_.joinable())
      producer_ = WorkerThread(fmt::format("{} #0", stage_name()), [this] { produce(); });
    const bool ready = handoff_.wait(
        lock, handoff_.consumer(), [&] { return queue_.ready() || queue_.drained(); },
        [&] { return BlockedScope(*this); });
    if (!ready || queue_.drained()) return std::nullopt;
    Result r = queue_.take();
    set_buffered(queue_.buffered());
    const Handoff::Wake wake = handoff_.signal(handoff_.producers());
    lock.unlock();
    wake.notify();
    return r.take();
  }

 private:
  int64_t capacity() const { return knob_ ? knob_->value() : node_.buffer_size; }

  void produce() {
    prepare_worker_thread(stage_name(), 0);
    const trace::NameId fill = trace_phase("fill");
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(handoff_.mutex());
    while (
        handoff_.wait(lock, handoff_.producers(), [&] { return queue_.can_begin(capacity()); })) {
      stats().buffer_capacity.store(capacity(), std::memory_order_relaxed);
      const HandoffQueue::Ticket ticket = queue_.begin();
      lock.unlock();
      const int64_t fill_start = trace::ticks();
      Result r = capture(stage_name(), [&] {
        trace::ScopedSpan span(fill, trace::category::pipeline());
        return input_->next();
      });
      const int64_t fill_ns = trace::ticks_to_ns(trace::ticks() - fill_start);
      // Iterators of one node (inside an interleave) share its statistics.
      int64_t longest = stats().max_fill_ns.load(std::memory_order_relaxed);
      while (fill_ns > longest &&
             !stats().max_fill_ns.compare_exchange_weak(longest, fill_ns, std::memory_order_relaxed)) {
      }
      lock.lock();
      if (r.end()) {
        queue_.end(ticket);
      } else {
        queue_.fill(ticket, std::move(r));
      }
      set_buffered(queue_.buffered());
      const Handoff::Wake wake = handoff_.signal(handoff_.consumer());
      if (queue_.closed()) {
        lock.unlock();
        wake.notify();
        return;
      }
      wake.notify(lock);
    }
  }

  const PrefetchNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  Handoff handoff_;
  HandoffQueue queue_;  // guarded by handoff_.mutex()
  WorkerThread producer_;
};

}  // namespace

PrefetchNode::PrefetchNode(Dataset input, int64_t buffer_size_)
    : DatasetNode(std::move(input)), buffer_size(buffer_size_) {
  if (buffer_size < 1 && buffer_size != kAutotune) {
    throw std::invalid_argument("prefetch: buffer_size must be positive or kAutotune");
  }
}

nlohmann::json PrefetchNode::params() const {
  return {{"buffer_size", tunable_json(buffer_size)}};
}

std::unique_ptr<Iterator> PrefetchNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<PrefetchIterator>(ctx, *this);
}

const OpRegistration& prefetch_registration() {
  static const OpRegistration kOp{
      .name = "prefetch",
      .kind = OpKind::kTransform,
      .summary = "a background thread pulls the input ahead into a bounded buffer",
      .fields = {{.name = "buffer_size", .type = FieldType::kTunable, .fallback = "autotune",
                  .min = 1, .max = kMaxPrefetchBuffer,
                  .knob = KnobRule{.kind = KnobKind::kBufferSize,
                                   .start = kDefaultAutotuneBuffer}}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->prefetch(s.tunable("buffer_size"));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const sim::NodePtr input = s.input();
        const double capacity = s.capacity("buffer_size");
        return std::make_shared<sim::FnNode>([input, capacity] {
          return std::make_unique<sim::PrefetchIterator>(input->iterate(), capacity);
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::prefetch(int64_t buffer_size) const {
  return Dataset(std::make_shared<ops::PrefetchNode>(*this, buffer_size));
}

}  // namespace pipeprof::pipelines
