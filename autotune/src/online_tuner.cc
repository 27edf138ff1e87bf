#include "pipeprof/autotune/online_tuner.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::autotune {
namespace {

double to_ms(double ns) {
  return ns / 1e6;
}

}  // namespace

struct OnlineTuner::Candidate {
  const StageModel* stage = nullptr;
  std::string knob;
  int64_t value = 0;
  double gain_ns = 0;  // predicted drop of the output interval (or wait) per element
  bool known = false;  // false: an exploration (the stage's latency is not known yet)
  std::string reason;
};

OnlineTuner::OnlineTuner(TunerOptions options) : options_(std::move(options)) {
  if (options_.cpu_budget <= 0)
    options_.cpu_budget = std::max(1u, std::thread::hardware_concurrency());
  if (options_.initial_period.count() <= 0) options_.initial_period = std::chrono::milliseconds(1);
  options_.max_period = std::max(options_.max_period, options_.initial_period);
  element_bytes_.store(options_.element_bytes, std::memory_order_relaxed);
  reset_state();
}

OnlineTuner::OnlineTuner(pipelines::Model& model, TunerOptions options)
    : OnlineTuner(std::move(options)) {
  model_ = &model;
  attached_ = true;
}

void OnlineTuner::reset_state() {
  period_ns_.store(options_.initial_period.count(), std::memory_order_relaxed);
  start_ns_ = trace::now_ns();
  quiet_ = 0;
  windows_.clear();
  cpu_samples_.clear();
  cpu_samples_.emplace_back(start_ns_, trace::process_cpu_ns());
  rate_known_ = false;
}

void OnlineTuner::attach(pipelines::Model& model) {
  {
    std::lock_guard<std::mutex> lock(model_mu_);
    model_ = &model;
    reset_state();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_ = true;
  }
  cv_.notify_all();
}

void OnlineTuner::detach() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_ = false;
  }
  // A tick in progress holds model_mu_: once it is ours, no tick uses the model any more.
  std::lock_guard<std::mutex> lock(model_mu_);
  model_ = nullptr;
}

OnlineTuner::~OnlineTuner() {
  stop();
}

void OnlineTuner::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), kThreadName);  // how top, gdb and /proc name it
    pipelines::prepare_worker_thread();  // normal priority, whatever its creator's
    run();
  });
}

void OnlineTuner::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OnlineTuner::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!attached_) {
      cv_.wait(lock, [&] { return stop_ || attached_; });
      continue;
    }
    lock.unlock();
    tick();
    lock.lock();
    // Woken early by stop() or by a detach() and attach() (a new model starts with the first
    // period).
    cv_.wait_for(lock, std::chrono::nanoseconds(period_ns_.load(std::memory_order_relaxed)),
                 [&] { return stop_ || !attached_; });
  }
}

void OnlineTuner::observe_element_bytes(int64_t bytes) {
  // A running maximum: the budget must hold for the largest elements.
  int64_t seen = element_bytes_.load(std::memory_order_relaxed);
  while (bytes > seen && !element_bytes_.compare_exchange_weak(seen, bytes)) {
  }
}

// The process's CPU rate (cores) over the last `kCpuWindowNs` at least: shorter windows see the
// scheduler's time slices (a computing thread may be off its core for milliseconds), not the work.
double OnlineTuner::process_cpu_rate() {
  const int64_t wall = trace::now_ns();
  const int64_t cpu = trace::process_cpu_ns();
  cpu_samples_.emplace_back(wall, cpu);
  while (cpu_samples_.size() > 2 && wall - cpu_samples_[1].first >= kCpuWindowNs)
    cpu_samples_.pop_front();
  const auto [wall0, cpu0] = cpu_samples_.front();
  rate_known_ = wall - wall0 >= kCpuWindowNs;
  return wall > wall0 ? static_cast<double>(cpu - cpu0) / static_cast<double>(wall - wall0) : 0;
}

bool OnlineTuner::tick() {
  const std::lock_guard<std::mutex> model_lock(model_mu_);
  if (model_ == nullptr) return false;
  ticks_.fetch_add(1, std::memory_order_relaxed);
  const PerformanceModel model = PerformanceModel::from(*model_);
  // A stage with no CPU sample yet is charged the process's CPU rate per busy worker: a pipeline
  // that sleeps shows a low rate, one that computes a high one. Before the first rate is known,
  // a whole core.
  int64_t busy = 0;
  for (const auto& s : model.stages())
    busy += s.active_workers;
  // The estimate is coarse (other processes take cores from computing workers too), so above a
  // tenth of a core per busy worker it counts as a whole core: only clearly idle workers are
  // taken for waiting ones.
  const double rate = process_cpu_rate();
  double unknown_share =
      rate_known_ ? std::clamp(rate / static_cast<double>(std::max<int64_t>(1, busy)), 0.0, 1.0)
                  : 1.0;
  if (unknown_share > 0.1) unknown_share = 1.0;
  const bool moved = decide(model, unknown_share);

  // Back off only once every tuned stage has shown enough elements to be judged.
  bool warm = true;
  for (const auto& s : model.stages()) {
    if ((s.parallelism > 0 || s.buffer_size > 0) && s.elements < options_.warmup_elements)
      warm = false;
  }
  int64_t period = period_ns_.load(std::memory_order_relaxed);
  if (moved || !warm) {
    period = options_.initial_period.count();
    quiet_ = 0;
  } else if (++quiet_ >= options_.quiet_ticks) {
    period = std::min<int64_t>(period * 2, options_.max_period.count());
    quiet_ = 0;
  }
  period_ns_.store(period, std::memory_order_relaxed);
  return moved;
}

// The decision rule of the header, in order: shed CPU when over budget; else collect the
// candidates (saturated parallel stages, bursty buffers), drop those that break a budget, and take
// the largest known gain above min_gain, or else an exploration.
bool OnlineTuner::decide(const PerformanceModel& model, double unknown_share) {
  const double budget = options_.cpu_budget + 1e-9;
  const double interval = model.interval_ns();

  // Windows: each stage's consumer wait and the output's elements since the previous tick.
  int64_t root_elements = 0;
  for (const auto& s : model.stages()) {
    if (s.parent.empty()) root_elements = s.elements;
  }
  auto window_of = [&](const std::string& key) -> Window& {
    for (auto& [k, w] : windows_) {
      if (k == key) return w;
    }
    windows_.emplace_back(key, Window{});
    return windows_.back().second;
  };

  // Over budget (e.g. defaults of one worker per core on several computing stages): take a
  // worker from the stage that burns the most CPU, measured stages only.
  const double demand = model.cpu_cores({}, unknown_share);
  if (demand > budget) {
    const StageModel* worst = nullptr;
    double worst_share = 0.1;  // waiting stages are never shed: they free no CPU
    for (const auto& s : model.stages()) {
      const double share = model.worker_share(s, -1);
      if (s.parallelism > 1 && share > worst_share) {
        worst = &s;
        worst_share = share;
      }
    }
    if (worst != nullptr && knob_of(worst->key, "parallelism") != nullptr) {
      apply(*worst, "parallelism", worst->parallelism - 1,
            fmt::format("CPU demand {:.2f} cores over the budget of {:.2f}; this stage burns "
                        "{:.0f}% CPU",
                        demand, options_.cpu_budget, 100 * worst_share));
      return true;
    }
  }

  std::vector<Candidate> candidates;
  for (const auto& s : model.stages()) {
    Window& w = window_of(s.key);
    const int64_t waited = std::max<int64_t>(0, s.blocked_ns - w.blocked_ns);
    const int64_t outputs = std::max<int64_t>(0, root_elements - w.root_elements);
    const bool started = w.root_elements > 0;  // the output had elements before this tick's
    w.blocked_ns = s.blocked_ns;
    w.root_elements = root_elements;

    if (s.parallelism > 0) {
      const pipelines::Knob* k = knob_of(s.key, "parallelism");
      int64_t max = k ? k->max() : 0;
      if (options_.max_parallelism > 0) max = std::min(max, options_.max_parallelism);
      // Saturated: every worker runs the function, so no slot holds a finished element. With no
      // CPU sample of the stage yet, some of its workers must have been busy at every tick of the
      // CPU window, so that the process's CPU rate shows what kind of work they do.
      const bool saturated = s.active_workers >= s.parallelism;
      const int64_t now = trace::now_ns();
      if (s.active_workers == 0) {
        w.busy_since = -1;
      } else if (w.busy_since < 0) {
        w.busy_since = now;
      }
      const bool busy_long = w.busy_since >= 0 && now - w.busy_since >= kCpuWindowNs;
      if (k && s.parallelism < max && saturated && (s.cpu_known || busy_long)) {
        Candidate c{&s, "parallelism", s.parallelism + 1};
        const double p = static_cast<double>(s.parallelism);
        if (s.known()) {
          c.known = true;
          c.gain_ns = s.latency_ns * s.ratio * (1 / p - 1 / (p + 1));
          c.reason = fmt::format(
              "saturated: {}/{} workers busy, none ready; {:.3f} ms per element -> predicted "
              "stage interval {:.3f} -> {:.3f} ms",
              s.active_workers, s.parallelism, to_ms(s.latency_ns),
              to_ms(s.latency_ns * s.ratio / p), to_ms(s.latency_ns * s.ratio / (p + 1)));
        } else {
          c.reason =
              fmt::format("saturated: {}/{} workers busy before any element finished (explore)",
                          s.active_workers, s.parallelism);
        }
        candidates.push_back(std::move(c));
      }
    }
    if (s.buffer_size > 0) {
      const pipelines::Knob* k = knob_of(s.key, "buffer_size");
      const bool full = s.buffer_capacity > 0 && s.buffered >= s.buffer_capacity;
      w.full = w.full || full;
      // Before a stall: the producer fills the buffer between its gaps (it was full), but its
      // longest pull (an open, a fetch) outlasts what the buffer holds at the consumer's pace, so
      // the next gap will empty it. The buffer grows to cover that gap.
      // The consumer's pace: its time per element since the start, less its waits for this stage.
      const int64_t busy_ns = trace::now_ns() - start_ns_ - s.blocked_ns;
      const double pace = s.elements > 1 && busy_ns > 0
                              ? static_cast<double>(busy_ns) / static_cast<double>(s.elements)
                              : 0;
      if (k && s.buffer_size < k->max() && w.full && s.max_fill_ns > 0 && pace > 0) {
        const auto need = std::min<int64_t>(
            k->max(), static_cast<int64_t>(std::ceil(static_cast<double>(s.max_fill_ns) / pace)));
        const double gap = static_cast<double>(s.max_fill_ns) -
                           static_cast<double>(s.buffer_size) * pace;
        if (need > s.buffer_size && gap > 0) {
          Candidate c{&s, "buffer_size", need};
          c.known = true;
          c.gain_ns = gap;
          c.reason = fmt::format(
              "bursty producer: a pull took {:.3f} ms and the consumer takes an element every "
              "{:.3f} ms, so {} buffered elements cover the gap before the consumer stalls",
              to_ms(static_cast<double>(s.max_fill_ns)), to_ms(pace), need);
          candidates.push_back(std::move(c));
        }
      }
      // The wait for the first element is the pipeline's start, which no buffer shortens: a tick
      // that comes late (a loaded machine) sees it beside the buffer that the first element
      // filled, before the consumer woke to take it.
      if (k && s.buffer_size < k->max() && w.full && started && waited > 0 && outputs > 0) {
        Candidate c{&s, "buffer_size", std::min(k->max(), s.buffer_size * 2)};
        c.known = true;
        c.gain_ns = static_cast<double>(waited) / static_cast<double>(outputs);
        c.reason = fmt::format(
            "the consumer waited {:.3f} ms per element although the buffer of {} was full "
            "earlier: a bursty producer",
            to_ms(c.gain_ns), s.buffer_size);
        candidates.push_back(std::move(c));
      }
    }
  }

  const int64_t bytes = element_bytes_.load(std::memory_order_relaxed);
  const Candidate* best = nullptr;
  for (const auto& c : candidates) {
    KnobOverrides ov;
    ov[c.stage->key][c.knob] = c.value;
    // A move that lowers the demand (or keeps it) never breaks the CPU budget it already met.
    const double cpu = model.cpu_cores(ov, unknown_share);
    if (cpu > budget && cpu > demand + 1e-9) continue;
    if (bytes > 0 && bytes * model.buffer_elements(ov) > options_.memory_budget_bytes) continue;
    if (c.known && interval > 0 && c.gain_ns < options_.min_gain * interval) continue;
    if (!best || (c.known && !best->known) ||
        (c.known == best->known && c.gain_ns > best->gain_ns)) {
      best = &c;
    }
  }
  if (best == nullptr) return false;
  apply(*best->stage, best->knob, best->value, best->reason);
  for (auto& [key, w] : windows_)
    w.full = false;
  return true;
}

pipelines::Knob* OnlineTuner::knob_of(const std::string& stage_key, const std::string& knob) const {
  for (pipelines::Node* n : model_->nodes()) {
    if (n->key() != stage_key) continue;
    for (pipelines::Knob* k : n->knobs()) {
      if (k->name() == knob) return k;
    }
  }
  return nullptr;
}

void OnlineTuner::apply(const StageModel& stage, const std::string& knob, int64_t value,
                        const std::string& reason) {
  pipelines::Knob* k = knob_of(stage.key, knob);
  if (k == nullptr) return;
  const int64_t old = k->value();
  const int64_t now = k->set(value);  // also records the "<stage>: <knob>" trace counter
  if (now == old) return;
  // The decision and its reason, as an instant on the tuner's lane of the trace.
  trace::Recorder& rec = trace::Recorder::global();
  if (rec.enabled()) {
    static const trace::NameId category = rec.intern("autotune");
    rec.instant(rec.intern(fmt::format("{}: {} {} -> {} ({})", stage.name, knob, old, now, reason)),
                category);
  }
  std::lock_guard<std::mutex> lock(mu_);
  changes_.push_back({static_cast<double>(trace::now_ns() - start_ns_) / 1e6, stage.key, stage.name,
                      knob, old, now, reason});
}

std::vector<KnobChange> OnlineTuner::changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

std::vector<KnobValue> OnlineTuner::final_values() const {
  const std::lock_guard<std::mutex> lock(model_mu_);
  return model_ == nullptr ? std::vector<KnobValue>{} : knob_values(*model_);
}

std::vector<KnobValue> knob_values(const pipelines::Model& model) {
  std::vector<KnobValue> out;
  for (pipelines::Node* n : model.nodes()) {
    for (pipelines::Knob* k : n->knobs())
      out.push_back({n->key(), n->name(), k->name(), k->value()});
  }
  return out;
}

std::chrono::nanoseconds OnlineTuner::period() const {
  return std::chrono::nanoseconds(period_ns_.load(std::memory_order_relaxed));
}

int64_t apply_values(pipelines::Model& model, const std::vector<KnobValue>& values) {
  int64_t set = 0;
  for (pipelines::Node* n : model.nodes()) {
    for (pipelines::Knob* k : n->knobs()) {
      for (const auto& v : values) {
        if (v.stage_key == n->key() && v.knob == k->name()) {
          k->set(v.value);
          ++set;
        }
      }
    }
  }
  return set;
}

nlohmann::json to_json(const std::vector<KnobChange>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : changes) {
    out.push_back({{"time_ms", c.time_ms},
                   {"stage_key", c.stage_key},
                   {"stage", c.stage},
                   {"knob", c.knob},
                   {"old", c.old_value},
                   {"new", c.new_value},
                   {"reason", c.reason}});
  }
  return out;
}

nlohmann::json to_json(const std::vector<KnobValue>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : values) {
    out.push_back(
        {{"stage_key", v.stage_key}, {"stage", v.stage}, {"knob", v.knob}, {"value", v.value}});
  }
  return out;
}

}  // namespace pipeprof::autotune
