#include "ops/prefetch.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/common.h"
#include "ops/handoff.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// One producer thread, one consumer. Each side wakes the other only when the other is blocked
// (the *_waiting_ flags), and each side polls briefly before it blocks, so a stream of fast
// elements costs no futex call per element.
class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(const IteratorContext& ctx, const PrefetchNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {
    if (node.buffer_size == kAutotune) {
      knob_ = &this->node()->knob("buffer_size", 1, kMaxBufferSize, kDefaultAutotuneBuffer);
      knob_->subscribe(&mu_, &producer_cv_);
    }
    stats().buffer_capacity.store(capacity(), std::memory_order_relaxed);
  }

  ~PrefetchIterator() override {
    if (knob_ != nullptr) knob_->unsubscribe(&mu_, &producer_cv_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    producer_cv_.notify_all();
    if (producer_.joinable()) producer_.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!producer_.joinable()) producer_ = std::thread([this] { produce(); });
    if (buffer_.empty() && !ended_) {
      lock.unlock();
      BlockedScope blocked(*this);
      const bool ready =
          consumer_spin_.poll([&] { return available_.load(std::memory_order_acquire); });
      lock.lock();
      if (!ready) {
        consumer_waiting_ = true;
        consumer_cv_.wait(lock, [&] { return !buffer_.empty() || ended_; });
        consumer_waiting_ = false;
      }
    }
    if (buffer_.empty()) return std::nullopt;
    Result r = std::move(buffer_.front());
    buffer_.pop_front();
    publish();
    const bool wake = producer_waiting_;
    lock.unlock();
    if (wake) producer_cv_.notify_one();
    return r.take();
  }

 private:
  int64_t capacity() const { return knob_ ? knob_->value() : node_.buffer_size; }

  // With mu_ held: mirrors the buffer state for the polling consumer and the statistics.
  void publish() {
    available_.store(!buffer_.empty() || ended_, std::memory_order_release);
    size_.store(static_cast<int64_t>(buffer_.size()), std::memory_order_release);
    set_buffered(static_cast<int64_t>(buffer_.size()));
  }

  void produce() {
    prepare_worker_thread(stage_name(), 0);
    const trace::NameId fill = trace_phase("fill");
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (!stop_ && static_cast<int64_t>(buffer_.size()) >= capacity()) {
        lock.unlock();
        producer_spin_.poll([&] { return size_.load(std::memory_order_acquire) < capacity(); });
        lock.lock();
      }
      if (!stop_ && static_cast<int64_t>(buffer_.size()) >= capacity()) {
        producer_waiting_ = true;
        producer_cv_.wait(
            lock, [&] { return stop_ || static_cast<int64_t>(buffer_.size()) < capacity(); });
        producer_waiting_ = false;
      }
      if (stop_) return;
      stats().buffer_capacity.store(capacity(), std::memory_order_relaxed);
      lock.unlock();
      Result r = capture(stage_name(), [&] {
        trace::ScopedSpan span(fill, trace::category::pipeline());
        return input_->next();
      });
      lock.lock();
      if (r.end()) {
        ended_ = true;
      } else {
        buffer_.push_back(std::move(r));
      }
      publish();
      if (consumer_waiting_) consumer_cv_.notify_one();
      if (ended_) return;
    }
  }

  const PrefetchNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  std::mutex mu_;
  std::condition_variable producer_cv_;
  std::condition_variable consumer_cv_;
  std::deque<Result> buffer_;
  std::atomic<bool> available_{false};  // an element or the end is waiting for the consumer
  std::atomic<int64_t> size_{0};        // buffer_.size(), for the polling producer
  AdaptiveSpin consumer_spin_;          // used by the consumer only
  AdaptiveSpin producer_spin_;          // used by the producer only
  bool producer_waiting_ = false;
  bool consumer_waiting_ = false;
  bool ended_ = false;
  bool stop_ = false;
  std::thread producer_;
};

}  // namespace

PrefetchNode::PrefetchNode(Dataset input, int64_t buffer_size_)
    : DatasetNode(std::move(input)), buffer_size(buffer_size_) {
  if (buffer_size < 1 && buffer_size != kAutotune) {
    throw std::invalid_argument("prefetch: buffer_size must be positive or kAutotune");
  }
}

nlohmann::json PrefetchNode::to_json() const {
  return {{"op", "prefetch"}, {"buffer_size", tunable_json(buffer_size)}};
}

std::unique_ptr<Iterator> PrefetchNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<PrefetchIterator>(ctx, *this);
}

}  // namespace ops

Dataset Dataset::prefetch(int64_t buffer_size) const {
  return Dataset(std::make_shared<ops::PrefetchNode>(*this, buffer_size));
}

}  // namespace pipeprof::pipelines
