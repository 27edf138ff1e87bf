#include "ops/prefetch.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/common.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(const IteratorContext& ctx, const PrefetchNode& node)
      : Iterator(ctx, &node), node_(node), input_(node.inputs()[0].node().make_iterator(input_context())) {
    if (node.buffer_size == kAutotune) {
      knob_ = &this->node()->knob("buffer_size", 1, kMaxBufferSize, kDefaultAutotuneBuffer);
      knob_->subscribe(&mu_, &cv_);
    }
  }

  ~PrefetchIterator() override {
    if (knob_ != nullptr) knob_->unsubscribe(&mu_, &cv_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (producer_.joinable()) producer_.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!producer_.joinable()) producer_ = std::thread([this] { produce(); });
    if (buffer_.empty() && !ended_) {
      BlockedScope blocked(*this);
      cv_.wait(lock, [&] { return !buffer_.empty() || ended_; });
    }
    if (buffer_.empty()) return std::nullopt;
    Result r = std::move(buffer_.front());
    buffer_.pop_front();
    stats().buffered.store(static_cast<int64_t>(buffer_.size()), std::memory_order_relaxed);
    lock.unlock();
    cv_.notify_all();
    return r.take();
  }

 private:
  int64_t capacity() const { return knob_ ? knob_->value() : node_.buffer_size; }

  void produce() {
    prepare_worker_thread();
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || static_cast<int64_t>(buffer_.size()) < capacity(); });
      if (stop_) return;
      stats().buffer_capacity.store(capacity(), std::memory_order_relaxed);
      lock.unlock();
      Result r = capture(stage_name(), [&] { return input_->next(); });
      lock.lock();
      if (r.end()) {
        ended_ = true;
        cv_.notify_all();
        return;
      }
      buffer_.push_back(std::move(r));
      stats().buffered.store(static_cast<int64_t>(buffer_.size()), std::memory_order_relaxed);
      cv_.notify_all();
    }
  }

  const PrefetchNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Result> buffer_;
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
