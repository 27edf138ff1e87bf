#include "ops/handoff.h"

#include <stdexcept>

namespace pipeprof::pipelines::ops {

void Handoff::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_locked();
  }
  consumer_.cv_.notify_all();
  producers_.cv_.notify_all();
}

void Handoff::stop_locked() {
  stop_.store(true, std::memory_order_release);
  consumer_.signals_.fetch_add(1, std::memory_order_release);
  producers_.signals_.fetch_add(1, std::memory_order_release);
}

void Handoff::follow(Knob& knob) {
  knob.subscribe(&mu_, &consumer_.cv_);
  knob.subscribe(&mu_, &producers_.cv_);
}

void Handoff::unfollow(Knob& knob) {
  knob.unsubscribe(&mu_, &consumer_.cv_);
  knob.unsubscribe(&mu_, &producers_.cv_);
}

HandoffQueue::Ticket HandoffQueue::begin() {
  if (turn_ || closed_) throw std::logic_error("HandoffQueue::begin: the turn is taken or closed");
  turn_ = true;
  slots_.push_back(Slot{next_, Result{}, false});
  return next_++;
}

void HandoffQueue::release_turn() {
  turn_ = false;
}

void HandoffQueue::fill(Ticket ticket, Result result) {
  Slot& s = slot(ticket);
  if (s.filled) throw std::logic_error("HandoffQueue::fill: the slot is filled already");
  s.result = std::move(result);
  s.filled = true;
  ++filled_;
  if (turn_ && ticket + 1 == next_) turn_ = false;
}

void HandoffQueue::end(Ticket ticket) {
  if (slots_.empty() || slots_.back().ticket != ticket || slots_.back().filled) {
    throw std::logic_error("HandoffQueue::end: not the slot being pulled");
  }
  slots_.pop_back();
  turn_ = false;
  closed_ = true;
}

Result HandoffQueue::take(Order order) {
  auto it = slots_.begin();
  if (order == Order::kAnyOrder) {
    it = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.filled; });
  }
  if (it == slots_.end() || !it->filled) throw std::logic_error("HandoffQueue::take: not ready");
  Result r = std::move(it->result);
  if (it == slots_.begin()) {
    slots_.pop_front();
  } else {
    slots_.erase(it);
  }
  --filled_;
  return r;
}

HandoffQueue::Slot& HandoffQueue::slot(Ticket ticket) {
  // Tickets are consecutive unless kAnyOrder takes left gaps; then a binary search finds it.
  if (!slots_.empty() && ticket >= slots_.front().ticket) {
    const Ticket i = ticket - slots_.front().ticket;
    if (i < slots_.size() && slots_[i].ticket == ticket) return slots_[i];
  }
  auto it = std::lower_bound(slots_.begin(), slots_.end(), ticket,
                             [](const Slot& s, Ticket t) { return s.ticket < t; });
  if (it == slots_.end() || it->ticket != ticket) {
    throw std::logic_error("HandoffQueue: no reserved slot for this ticket");
  }
  return *it;
}

}  // namespace pipeprof::pipelines::ops
