#include "pipeprof/pipelines/model.h"

#include <algorithm>

#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::pipelines {

Knob::Knob(std::string name, int64_t min, int64_t max, int64_t initial)
    : name_(std::move(name)),
      min_(min),
      max_(std::max(min, max)),
      value_(std::clamp(initial, min_, max_)) {}

void Knob::record_value() const {
  trace::Recorder& rec = trace::Recorder::global();
  if (rec.enabled() && trace_counter_ != 0xffffffffu)
    rec.counter(trace_counter_, static_cast<double>(value()));
}

int64_t Knob::set(int64_t value) {
  const int64_t v = std::clamp(value, min_, max_);
  if (value_.exchange(v, std::memory_order_acq_rel) != v) {
    changes_.fetch_add(1, std::memory_order_relaxed);
  }
  record_value();
  std::lock_guard<std::mutex> subs(subscribers_mu_);
  for (auto [mu, cv] : subscribers_) {
    // Taking the subscriber's lock orders the store before any waiter's next predicate check.
    std::lock_guard<std::mutex> lock(*mu);
    cv->notify_all();
  }
  return v;
}

void Knob::subscribe(std::mutex* mu, std::condition_variable* cv) {
  std::lock_guard<std::mutex> lock(subscribers_mu_);
  subscribers_.emplace_back(mu, cv);
}

void Knob::unsubscribe(std::mutex* mu, std::condition_variable* cv) {
  std::lock_guard<std::mutex> lock(subscribers_mu_);
  std::erase(subscribers_, std::pair{mu, cv});
}

Knob& Node::knob(const std::string& name, int64_t min, int64_t max, int64_t initial) {
  std::lock_guard<std::mutex> lock(knobs_mu_);
  for (auto& k : knobs_) {
    if (k->name() == name) return *k;
  }
  knobs_.push_back(std::make_unique<Knob>(name, min, max, initial));
  knobs_.back()->set_trace_counter(trace::Recorder::global().intern(name_ + ": " + name));
  knobs_.back()->record_value();
  return *knobs_.back();
}

std::vector<Knob*> Node::knobs() const {
  std::lock_guard<std::mutex> lock(knobs_mu_);
  std::vector<Knob*> out;
  for (const auto& k : knobs_)
    out.push_back(k.get());
  return out;
}

NodeSnapshot Node::snapshot() const {
  NodeSnapshot s;
  s.key = key_;
  s.op = op_;
  s.name = name_;
  s.parent = parent_;
  s.elements = stats_.elements.load();
  const int64_t calls = stats_.calls.load();
  const int64_t timed = stats_.timed_calls.load();
  s.self_wall_ns =
      timed > 0 ? static_cast<int64_t>(static_cast<double>(stats_.timed_self_ns.load()) *
                                       static_cast<double>(calls) / static_cast<double>(timed))
                : 0;
  s.work_wall_ns = stats_.work_wall_ns.load();
  s.blocked_ns = stats_.blocked_ns.load();
  const double wall = static_cast<double>(s.self_wall_ns + s.work_wall_ns);
  const auto sampled_wall = stats_.sampled_wall_ns.load();
  const auto sampled_cpu = stats_.sampled_cpu_ns.load();
  s.cpu_share = sampled_wall > 0
                    ? std::clamp(static_cast<double>(sampled_cpu) / sampled_wall, 0.0, 1.0)
                    : 0.0;
  if (s.elements > 0) {
    s.wall_ns_per_element = wall / static_cast<double>(s.elements);
    s.cpu_ns_per_element = s.wall_ns_per_element * s.cpu_share;
    s.mean_buffered =
        static_cast<double>(stats_.buffered_sum.load()) / static_cast<double>(s.elements);
  }
  s.buffered = stats_.buffered.load();
  s.buffer_capacity = stats_.buffer_capacity.load();
  s.bytes_copied = stats_.bytes_copied.load();
  s.max_fill_ns = stats_.max_fill_ns.load();
  s.bytes_read = stats_.bytes_read.load();
  s.read_calls = stats_.read_calls.load();
  s.files_opened = stats_.files_opened.load();
  if (const int64_t read_ns = stats_.read_ns.load(); read_ns > 0) {
    s.read_mb_per_s = static_cast<double>(s.bytes_read) * 1e3 / static_cast<double>(read_ns);
  }
  if (s.files_opened > 0) {
    s.mean_first_byte_ns =
        static_cast<double>(stats_.first_byte_ns.load()) / static_cast<double>(s.files_opened);
  }
  for (const Knob* k : knobs())
    s.knobs.emplace_back(k->name(), k->value());
  return s;
}

void Cancellation::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool Cancellation::wait_until(int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline =
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
  cv_.wait_until(lock, deadline, [&] { return cancelled(); });
  return !cancelled();
}

Node& Model::node(const std::string& key, const std::string& op, const std::string& name,
                  const std::string& parent) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& n : nodes_) {
    if (n->key() == key) return *n;
  }
  nodes_.push_back(std::make_unique<Node>(key, op, name, parent));
  return *nodes_.back();
}

std::vector<Node*> Model::nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Node*> out;
  for (const auto& n : nodes_)
    out.push_back(n.get());
  return out;
}

std::vector<Knob*> Model::knobs() const {
  std::vector<Knob*> out;
  for (Node* n : nodes()) {
    for (Knob* k : n->knobs())
      out.push_back(k);
  }
  return out;
}

std::vector<NodeSnapshot> Model::snapshot() const {
  trace::recalibrate_ticks();
  std::vector<NodeSnapshot> out;
  for (Node* n : nodes())
    out.push_back(n->snapshot());
  return out;
}

void Model::record_knobs() const {
  if (!trace::Recorder::global().enabled()) return;
  for (Knob* k : knobs())
    k->record_value();
}

}  // namespace pipeprof::pipelines
