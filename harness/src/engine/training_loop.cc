#include "pipeprof/harness/training_loop.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "pipeprof/autotune/online_tuner.h"
#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/pipelines/waits.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::harness {
namespace {

// The loop's span names (trace/analysis.h reads them): `epoch`, `get_next` (the wait for a batch),
// `step` (the step) and `barrier` (the wait for the other consumers).
struct LoopNames {
  trace::NameId epoch, step, get_next, barrier, epoch_arg, step_arg;
  LoopNames() {
    trace::Recorder& rec = trace::Recorder::global();
    epoch = rec.intern("epoch");
    step = rec.intern("step");
    get_next = rec.intern("get_next");
    barrier = rec.intern("barrier");
    epoch_arg = rec.intern("epoch");
    step_arg = rec.intern("step");
  }
};

int64_t rows(const pipelines::Element& batch) {
  return batch.empty() || batch[0].rank() == 0 ? 1 : batch[0].shape()[0];
}

int64_t storage_bytes(const std::vector<pipelines::NodeSnapshot>& stages) {
  int64_t bytes = 0;
  for (const auto& s : stages)
    bytes += s.bytes_read;
  return bytes;
}

// The wait for a batch, as a span: the loader's next batch, or (no loader) an empty one at once.
// Out of line: GCC 12 misreads the optional's lifetime when this is inlined in the step loop.
[[gnu::noinline]] std::optional<pipelines::Element> next_batch(pipelines::Iterator* it,
                                                               trace::NameId name, int64_t rank,
                                                               int64_t epoch, int64_t step) {
  trace::ScopedSpan wait(name, trace::category::wait());
  if (it == nullptr) return pipelines::Element{};
  auto what = [&] {
    return fmt::format("accelerator {}: a batch from its loader (epoch {}, step {})", rank, epoch, step);
  };
  pipelines::WaitScope waiting(what);
  return it->next();
}

std::mutex g_watchdog_mutex;
Watchdog g_watchdog;

class Shared;

// Runs when the last consumer of this process arrives at the barrier, before any leaves it: with
// ranks, the ranks' collective (Shared::on_phase).
struct PhaseDone {
  Shared* shared;
  void operator()() noexcept;
};

// What the consumers share: the barrier, the first error, the notes.
class Shared {
 public:
  Shared(const LoopOptions& o)
      : barrier_(static_cast<std::ptrdiff_t>(o.consumers), PhaseDone{this}),
        stop_(o.stop),
        cluster_(o.barrier && o.cluster != nullptr && o.cluster->size() > 1 ? o.cluster : nullptr) {}

  std::barrier<PhaseDone>& barrier() { return barrier_; }
  // Alone, a stop or a failure is seen at once; with ranks, only what the ranks agreed on at the
  // last barrier (so that every rank passes the same barriers).
  bool stopping() const {
    if (cluster_ != nullptr) return agreed_stop_.load(std::memory_order_relaxed);
    return local_stop();
  }
  // A consumer's loader ran out of batches: with ranks, every rank stops at this barrier (the
  // others would wait for this one's next step).
  void ran_out() { ran_out_ = true; }
  void on_phase() noexcept {
    // Once the ranks agreed to stop, every rank skips the collective from then on (all got the
    // same answer), so a rank whose consumers already left does not leave the others waiting for
    // one more allreduce.
    if (cluster_ == nullptr || agreed_stop_.load()) return;
    try {
      auto what = [&] {
        return fmt::format("rank {} of {}: the other ranks at the step barrier (one or more has not arrived)",
                           cluster_->rank(), cluster_->size());
      };
      pipelines::WaitScope waiting(what);
      // Given up (the cluster then broken) when the run is stopped or the watchdog fails it.
      if (cluster_->agree_stop(local_stop() || ran_out_.load(), &abandon_)) agreed_stop_ = true;
      pipelines::note_progress();
    } catch (...) {
      agreed_stop_ = true;
      fail(std::current_exception());
    }
  }
  // Ctrl-C or a stall the watchdog ended: a collective of the ranks no longer waits for them.
  void abandon() { abandon_ = true; }
  void fail(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::move(error);
    failed_ = true;
  }
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  void note(std::string text) {
    std::lock_guard<std::mutex> lock(mutex_);
    notes_.push_back(std::move(text));
  }
  std::vector<std::string> notes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return notes_;
  }
  // A consumer could not get real-time priority (noted once).
  void no_realtime(int error) {
    if (realtime_denied_.exchange(true)) return;
    note(fmt::format(
        "the simulated accelerators run at normal priority ({}: real-time scheduling needs root, "
        "CAP_SYS_NICE or an RLIMIT_RTPRIO, e.g. `ulimit -r 1`); with more accelerators than cores "
        "their AU then also measures how soon the scheduler runs them",
        std::strerror(error)));
  }
  bool realtime_denied() const { return realtime_denied_.load(); }

  // The loaders open now (weakly: a loader's model goes with it), so that a stop can end a wait
  // inside one that no element would end (a producer that never sends, an artificial open of a day).
  void opened(const std::shared_ptr<pipelines::Model>& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(loaders_, [](const std::weak_ptr<pipelines::Model>& w) { return w.expired(); });
    loaders_.push_back(model);
  }
  void cancel_loaders() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& w : loaders_) {
      if (const auto model = w.lock()) model->cancellation().cancel();
    }
  }

 private:
  bool local_stop() const {
    return failed_.load(std::memory_order_relaxed) ||
           (stop_ != nullptr && stop_->load(std::memory_order_relaxed));
  }

  std::barrier<PhaseDone> barrier_;
  const std::atomic<bool>* stop_;
  cluster::Cluster* cluster_;
  std::atomic<bool> abandon_{false};
  std::atomic<bool> agreed_stop_{false};
  std::atomic<bool> ran_out_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> realtime_denied_{false};
  std::mutex mutex_;
  std::exception_ptr error_;
  std::vector<std::string> notes_;
  std::vector<std::weak_ptr<pipelines::Model>> loaders_;
};

void PhaseDone::operator()() noexcept {
  shared->on_phase();
}

class Consumer {
 public:
  Consumer(const LoopOptions& o, Shared& shared, int64_t local, bool own_thread)
      : o_(o), shared_(shared), local_(local), rank_(o.first_rank + local), own_thread_(own_thread) {
    record_.rank = rank_;
  }

  ConsumerRecord take() { return std::move(record_); }

  // Leaves the barrier (once): done, out of batches, stopped or failed, the others go on without
  // this consumer at once, not after its loader is torn down.
  void leave() {
    if (left_ || !o_.barrier) return;
    left_ = true;
    shared_.barrier().arrive_and_drop();
  }

  void run() {
    pipelines::set_minimal_timer_slack();
    // The lane's name: a consumer's own thread is named for it; the calling thread (which is the
    // process's main thread, named in `ps` after it) only while a trace records.
    if (o_.lane_name && (own_thread_ || trace::Recorder::global().enabled())) {
      trace::Recorder& rec = trace::Recorder::global();
      rec.set_thread_name(o_.lane_name(rank_));
      rec.set_thread_sort_index(o_.sort_index + local_);
    }
    if (o_.realtime) {
      // A consumer stands for an accelerator, which does not wait for a core: real-time priority
      // lets it start its next step the moment the barrier opens, ahead of the loaders' threads
      // (which run at the normal priority: pipeline workers drop what they inherit).
      sched_param sp{};
      sp.sched_priority = 1;
      if (const int rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &sp); rc != 0) {
        shared_.no_realtime(rc);
      }
    }
    try {
      loop();
    } catch (...) {
      // A read cut off by the stop (Ctrl-C ends the HTTP requests in flight) is the stop, not a
      // failure: what was measured is kept and the run ends as interrupted.
      if (o_.stop != nullptr && o_.stop->load()) {
        shared_.note("stopped while a batch was being loaded");
      } else {
        shared_.fail(std::current_exception());
      }
    }
    leave();
  }

 private:
  std::unique_ptr<pipelines::Iterator> open(int64_t epoch) {
    if (!o_.open) return nullptr;
    auto it = o_.open(rank_, epoch);
    if (it) shared_.opened(it->shared_model());
    return it;
  }

  // What the tuner moved since the last call, as changes of `epoch`.
  void record_changes(const autotune::OnlineTuner& tuner, int64_t epoch) {
    if (record_.autotune.is_null()) record_.autotune = {{"changes", nlohmann::json::array()}};
    const std::vector<autotune::KnobChange> changes = tuner.changes();
    for (size_t i = changes_seen_; i < changes.size(); ++i) {
      nlohmann::json change = autotune::to_json(std::vector{changes[i]})[0];
      change["epoch"] = epoch;
      record_.autotune["changes"].push_back(std::move(change));
    }
    changes_seen_ = changes.size();
  }

  void loop() {
    static const LoopNames names;
    const bool per_epoch = o_.loader_life == LoaderLife::kEpoch;
    // With one loader for the run, it is made before the first epoch (its workers start while
    // the consumers gather at the first epoch's barrier).
    std::unique_ptr<pipelines::Iterator> it;
    if (!per_epoch) it = open(1);
    // One tuner thread for the whole run, attached to each loader in turn.
    std::optional<autotune::OnlineTuner> tuner;
    std::vector<autotune::KnobValue> picked;  // its values, carried to the next epoch's loader
    // Declared after the iterator and the tuner, so destroyed before them: on any way out (an
    // error included) the tuner lets go of the model before the model goes.
    struct Detach {
      autotune::OnlineTuner* tuner = nullptr;
      ~Detach() {
        if (tuner != nullptr) tuner->detach();
      }
    } detach_guard;
    auto attach = [&] {
      if (!it || !o_.autotune || it->model().knobs().empty()) return;
      autotune::apply_values(it->model(), picked);
      if (!tuner) tuner.emplace(autotune::TunerOptions{});
      tuner->attach(it->model());
      detach_guard.tuner = &*tuner;
      tuner->start();  // once: a no-op while the thread runs
    };
    // The knobs' values as the loader starts with them (the tuner's picks applied), into the trace.
    auto opened = [&] {
      attach();
      if (it) it->model().record_knobs();
    };
    auto detach = [&] {
      if (detach_guard.tuner == nullptr) return false;
      tuner->detach();
      detach_guard.tuner = nullptr;
      picked = autotune::knob_values(it->model());
      return true;
    };
    if (!per_epoch) opened();

    int64_t bytes_before = 0;
    for (int64_t epoch = 1; epoch <= o_.epochs; ++epoch) {
      if (local_ == 0 && o_.before_epoch) o_.before_epoch(epoch);
      if (o_.barrier) {  // every consumer starts together
        auto what = [&] {
          return fmt::format("accelerator {}: the other accelerators at the start of epoch {}", rank_, epoch);
        };
        pipelines::WaitScope at_barrier(what);
        shared_.barrier().arrive_and_wait();
      }
      if (shared_.stopping()) break;
      trace::ScopedSpan epoch_span(names.epoch, trace::category::step(), names.epoch_arg, epoch);
      if (per_epoch) {
        it = open(epoch);
        opened();
      }
      // The epoch's clock starts with its loader in hand: opening a fresh one (parsing its spec,
      // listing files, starting its workers) is in the run's time, not in the epoch's.
      EpochRecord e;
      e.epoch = epoch;
      e.start_ns = trace::now_ns();
      bool ended = false;  // the loader ran out
      int64_t load_start = e.start_ns;
      for (int64_t step = 1; o_.steps == 0 || step <= o_.steps; ++step) {
        StepRecord s;
        std::optional<pipelines::Element> batch =
            next_batch(it.get(), names.get_next, rank_, epoch, step);
        const int64_t loaded = trace::now_ns();
        if (!batch) {
          // A loader cancelled by the stop: the epoch was cut short, not at the loader's end.
          if (o_.stop != nullptr && o_.stop->load()) break;
          ended = true;
          if (o_.steps > 0) {
            shared_.ran_out();
            shared_.note(fmt::format(
                "accelerator {}: its loader ended after {} of {} steps in epoch {} (its shard "
                "holds fewer batches)",
                rank_, step - 1, o_.steps, epoch));
          }
          break;
        }
        s.load_ns = loaded - load_start;
        if (o_.count) {
          o_.count(*batch, it != nullptr, s);
        } else {
          s.samples = rows(*batch);
        }
        {
          trace::ScopedSpan compute(names.step, trace::category::step(), names.step_arg, step);
          auto what = [&] { return fmt::format("accelerator {}: its step (epoch {}, step {})", rank_, epoch, step); };
          pipelines::WaitScope in_step(what);
          if (o_.step) o_.step(rank_, *batch, loaded);
        }
        const int64_t computed = trace::now_ns();
        batch.reset();
        s.compute_ns = computed - loaded;
        s.proc_ns = computed - load_start;
        pipelines::note_progress();
        if (o_.barrier) {
          {
            trace::ScopedSpan wait(names.barrier, trace::category::wait());
            auto what = [&] {
              return fmt::format("accelerator {}: the other accelerators at the barrier after step {}",
                                 rank_, step);
            };
            pipelines::WaitScope at_barrier(what);
            shared_.barrier().arrive_and_wait();
          }
          s.barrier_ns = trace::now_ns() - computed;
        }
        if (o_.after_step) {
          const int64_t before = trace::now_ns();
          auto what = [&] {
            return fmt::format("accelerator {}: the work after step {} of epoch {} (a checkpoint)", rank_,
                               step, epoch);
          };
          pipelines::WaitScope pausing(what);
          if (o_.after_step(rank_, epoch, step)) {
            if (o_.barrier) {
              trace::ScopedSpan wait(names.barrier, trace::category::wait());
              shared_.barrier().arrive_and_wait();
            }
            s.pause_ns = trace::now_ns() - before;
          }
        }
        e.steps.push_back(s);
        if (local_ == 0 && o_.on_step) o_.on_step(epoch, step);  // not timed as the next load
        load_start = trace::now_ns();
        if (shared_.stopping()) break;
      }
      e.end_ns = trace::now_ns();
      e.complete = o_.steps > 0 ? static_cast<int64_t>(e.steps.size()) == o_.steps : ended;
      if (per_epoch) {
        if (detach()) {
          record_changes(*tuner, epoch);
          record_.autotune["final"] = autotune::to_json(picked);
        }
        if (it) {  // its statistics are complete once its workers are joined
          const auto model = it->shared_model();
          it.reset();
          e.stages = model->snapshot();
          e.bytes_read = storage_bytes(e.stages);
          record_.stages = e.stages;
        }
      } else {
        if (it) {  // the storage bytes of this epoch: the file sources' counts since the last
          const int64_t bytes = storage_bytes(it->model().snapshot());
          e.bytes_read = bytes - bytes_before;
          bytes_before = bytes;
        }
        if (tuner) record_changes(*tuner, epoch);
      }
      const bool complete = e.complete;
      const auto steps_done = static_cast<int64_t>(e.steps.size());
      record_.epochs.push_back(std::move(e));
      if (complete && o_.after_epoch && !shared_.stopping()) o_.after_epoch(rank_, epoch, steps_done);
      if (local_ == 0 && o_.on_epoch_end) o_.on_epoch_end(record_.epochs.back());
      if (!complete) break;  // out of batches or stopping: this consumer leaves
    }
    leave();
    if (!per_epoch) {
      if (detach()) {
        if (!record_.autotune.contains("changes")) record_.autotune["changes"] = nlohmann::json::array();
        record_.autotune["final"] = autotune::to_json(picked);
      }
      if (it) {
        const auto model = it->shared_model();
        it.reset();  // stops and joins the loader's workers; its statistics are then complete
        record_.stages = model->snapshot();
      }
    }
  }

  const LoopOptions& o_;
  Shared& shared_;
  int64_t local_, rank_;
  bool own_thread_;
  ConsumerRecord record_;
  size_t changes_seen_ = 0;
  bool left_ = false;
};

std::string describe_waits(int64_t now) {
  constexpr size_t kMostListed = 16;
  const std::vector<pipelines::OpenWait> waits = pipelines::open_waits();
  std::string text;
  for (size_t i = 0; i < waits.size() && i < kMostListed; ++i)
    text += fmt::format("\n  {:7.1f} s  {}", trace::ns_to_seconds(now - waits[i].since_ns), waits[i].what);
  if (waits.size() > kMostListed) text += fmt::format("\n  ... and {} more", waits.size() - kMostListed);
  if (waits.empty()) text += "\n  (no thread of this process says it waits: a step or loader busy computing?)";
  return text;
}

// The monitor of a loop: Ctrl-C cancels the loaders (again for any opened since) and gives up the
// ranks' collective; the watchdog reports and fails stalls (LoopOptions::watchdog).
// `ready` is counted down once the monitor has set itself up (its allocations done); from then on
// a quiet loop allocates nothing.
void watch(Shared& shared, const LoopOptions& o, const std::stop_token& done, std::latch& ready) {
  using std::chrono::milliseconds;
  const int64_t report_ns = std::chrono::nanoseconds(o.watchdog.report_after).count();
  const int64_t fail_ns = std::chrono::nanoseconds(o.watchdog.fail_after).count();
  uint64_t seen = pipelines::progress_count();
  int64_t moved = trace::now_ns();  // when the count last changed
  int64_t next_report = report_ns;
  bool failed = false;
  std::mutex m;
  std::condition_variable_any wake;  // at the end of the loop, at once
  std::unique_lock lock(m);
  ready.count_down();
  while (!done.stop_requested()) {
    if ((o.stop != nullptr && o.stop->load()) || failed) {
      shared.abandon();
      shared.cancel_loaders();
    }
    const int64_t now = trace::now_ns();
    if (const uint64_t count = pipelines::progress_count(); count != seen) {
      seen = count;
      moved = now;
      next_report = report_ns;
    }
    const int64_t idle = now - moved;
    if (!failed && fail_ns > 0 && idle >= fail_ns) {
      failed = true;
      shared.fail(std::make_exception_ptr(RunFailure(fmt::format(
          "the run stalled: no progress for {:.1f} s (the stall timeout), waiting for:{}",
          trace::ns_to_seconds(idle), describe_waits(now)))));
      continue;  // cancels at once
    }
    if (!failed && report_ns > 0 && idle >= next_report) {
      const std::string text =
          fmt::format("no progress for {:.1f} s (no step ended; nothing was read, written or received), "
                      "waiting for:{}",
                      trace::ns_to_seconds(idle), describe_waits(now));
      next_report += report_ns;
      try {
        if (o.watchdog.report) {
          o.watchdog.report(text);
        } else {
          std::fprintf(stderr, "warning: %s\n", text.c_str());
        }
      } catch (...) {
        // A report that cannot be delivered does not end the run.
      }
    }
    wake.wait_for(lock, done, milliseconds(20), [] { return false; });
  }
}

}  // namespace

void set_default_watchdog(const Watchdog& watchdog) {
  std::lock_guard<std::mutex> lock(g_watchdog_mutex);
  g_watchdog = watchdog;
}

Watchdog default_watchdog() {
  std::lock_guard<std::mutex> lock(g_watchdog_mutex);
  return g_watchdog;
}

LoopRun run_loop(const LoopOptions& options) {
  if (options.consumers < 1) throw InputError("the training loop needs at least one consumer");
  if (options.steps == 0 && !options.open) {
    throw InputError("the training loop needs a step count or a loader that ends");
  }
  if (options.steps == 0 && options.barrier && options.cluster != nullptr && options.cluster->size() > 1) {
    // A rank whose loaders end would leave the ranks' collective while the others wait in it.
    throw InputError("a training loop over ranks needs a step count per epoch");
  }
  Shared shared(options);
  // Ctrl-C and the watchdog: the loaders are cancelled, so that a consumer waiting inside one for
  // an element that never comes sees the stop within a few tens of milliseconds.
  // The loaders are opened once the monitor thread (and each consumer's, below) is up: a loader
  // may fork its producers (multiprocess, shared_store), and a thread still starting may hold the
  // allocator's and the thread registry's locks, which AddressSanitizer's runtime does not reset in
  // a child of fork() (pipelines/src/ops/worker_thread.h, NoWorkerThreadLeaving).
  std::latch monitor_ready(1);
  std::jthread monitor([&shared, &options, &monitor_ready](const std::stop_token& done) {
    watch(shared, options, done, monitor_ready);
  });
  monitor_ready.wait();
  const bool own_threads = options.consumers > 1 || options.realtime;
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int64_t k = 0; k < options.consumers; ++k)
    consumers.push_back(std::make_unique<Consumer>(options, shared, k, own_threads));
  if (!own_threads) {
    consumers.front()->run();  // on the calling thread
  } else {
    std::latch all_started(static_cast<std::ptrdiff_t>(consumers.size()));  // outlives the threads
    std::vector<std::jthread> threads;
    threads.reserve(consumers.size());
    for (size_t i = 0; i < consumers.size(); ++i) {
      try {
        threads.emplace_back([&c = consumers[i], &all_started] {
          all_started.arrive_and_wait();
          c->run();
        });
      } catch (const std::system_error& e) {
        all_started.count_down(static_cast<std::ptrdiff_t>(consumers.size() - i));
        // No thread for this one (or the rest): they never arrive; those started stop.
        shared.fail(std::make_exception_ptr(
            RunFailure(fmt::format("cannot start the thread of accelerator {} of {}: {}", i,
                                   consumers.size(), e.what()))));
        if (options.barrier) {
          for (size_t k = i; k < consumers.size(); ++k)
            shared.barrier().arrive_and_drop();
        }
        break;
      }
    }
  }  // joined
  monitor.request_stop();
  monitor.join();
  if (const std::exception_ptr error = shared.error()) std::rethrow_exception(error);
  LoopRun run;
  for (auto& c : consumers)
    run.consumers.push_back(c->take());
  // Interrupted: stopped before every consumer ran every epoch it was asked for to its end.
  bool cut_short = false;
  for (const ConsumerRecord& c : run.consumers) {
    cut_short = cut_short || static_cast<int64_t>(c.epochs.size()) < options.epochs;
    for (const EpochRecord& e : c.epochs)
      cut_short = cut_short || !e.complete;
  }
  run.interrupted = options.stop != nullptr && options.stop->load() && cut_short;
  run.notes = shared.notes();
  run.realtime = options.realtime && !shared.realtime_denied();
  return run;
}

}  // namespace pipeprof::harness
