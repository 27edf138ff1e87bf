#include "workload/training_loop.h"

#include <fmt/format.h>

#include <pthread.h>
#include <sched.h>

#include <barrier>
#include <cstring>
#include <cerrno>
#include <ctime>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <thread>

#include "pipeprof/autotune/online_tuner.h"
#include "pipeprof/harness/cli.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"
#include "workload/workload_pipeline.h"

namespace pipeprof::harness::workload {
namespace {

// Names of the training loop's spans: `get_next` (the wait for a batch) and `step` (the emulated
// compute) as the runner names them, so that `pipeprof analyze` reads a workload's trace the same
// way; `barrier` for the simulated allreduce.
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

int64_t batch_bytes(const pipelines::Element& batch) {
  int64_t bytes = 0;
  if (!batch.empty() && batch[0].dtype() == pipelines::DType::kInt64) {
    for (const int64_t b : batch[0].values<int64_t>())
      bytes += b;
  }
  return bytes;
}

int64_t batch_samples(const pipelines::Element& batch) {
  return batch.empty() || batch[0].rank() == 0 ? 1 : batch[0].shape()[0];
}

class Shared;

// Runs when the last accelerator of this process arrives at the barrier, before any leaves it:
// with ranks, the ranks' collective (Shared::on_phase).
struct PhaseDone {
  Shared* shared;
  void operator()() noexcept;
};

// What the accelerators share: the barrier, and the first error.
class Shared {
 public:
  Shared(int64_t accelerators, const std::atomic<bool>* stop, cluster::Cluster* cluster)
      : barrier_(static_cast<std::ptrdiff_t>(accelerators), PhaseDone{this}),
        stop_(stop),
        cluster_(cluster != nullptr && cluster->size() > 1 ? cluster : nullptr) {}

  std::barrier<PhaseDone>& barrier() { return barrier_; }
  // Alone, a stop or a failure is seen at once; with ranks, only what the ranks agreed on at the
  // last barrier (so that every rank passes the same barriers).
  bool stopping() const {
    if (cluster_ != nullptr) return agreed_stop_.load(std::memory_order_relaxed);
    return local_stop();
  }
  // An accelerator's loader ran out of batches: with ranks, every rank stops at this barrier
  // (the others would wait for this one's next step).
  void ran_out() { ran_out_ = true; }
  void on_phase() noexcept {
    // Once the ranks agreed to stop, every rank skips the collective from then on (all got the
    // same answer), so a rank whose accelerators already left does not leave the others waiting
    // for one more allreduce.
    if (cluster_ == nullptr || agreed_stop_.load()) return;
    try {
      if (cluster_->agree_stop(local_stop() || ran_out_.load(), stop_)) agreed_stop_ = true;
    } catch (...) {
      agreed_stop_ = true;
      fail(std::current_exception());
    }
  }
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
  // An accelerator could not get real-time priority (noted once).
  void no_realtime(int error) {
    if (realtime_denied_.exchange(true)) return;
    note(fmt::format(
        "the simulated accelerators run at normal priority ({}: real-time scheduling needs root, "
        "CAP_SYS_NICE or an RLIMIT_RTPRIO, e.g. `ulimit -r 1`); with more accelerators than cores "
        "their AU then also measures how soon the scheduler runs them",
        std::strerror(error)));
  }
  bool realtime_denied() const { return realtime_denied_.load(); }

 private:
  bool local_stop() const {
    return failed_.load(std::memory_order_relaxed) ||
           (stop_ != nullptr && stop_->load(std::memory_order_relaxed));
  }

  std::barrier<PhaseDone> barrier_;
  const std::atomic<bool>* stop_;
  cluster::Cluster* cluster_;
  std::atomic<bool> agreed_stop_{false};
  std::atomic<bool> ran_out_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> realtime_denied_{false};
  std::mutex mutex_;
  std::exception_ptr error_;
  std::vector<std::string> notes_;
};

void PhaseDone::operator()() noexcept {
  shared->on_phase();
}

// The emulated step: a sleep to `deadline_ns`, as DLIO's time.sleep, without the spin at the end
// that precise_sleep_until adds. Every accelerator's step ends at about the same moment (they
// start together after the barrier), so spinning accelerators would take the cores from each other
// and from the loaders; the kernel's wake-up is late by tens of microseconds, counted as compute.
void compute_sleep(int64_t deadline_ns) {
  const int64_t offset = trace::now_ns();  // the trace clock's origin on CLOCK_MONOTONIC
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t mono = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  const int64_t target = mono + (deadline_ns - offset);
  const timespec ts{.tv_sec = target / 1'000'000'000, .tv_nsec = target % 1'000'000'000};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// read_threads: autotune starts the readers at one thread: the tuner adds one while they are all
// busy and nothing waits for the consumer, so it settles at the fewest that keep up with the step.
// The interleave makes its parallelism knob (at cycle_length) when the repeat above it first pulls;
// the knob is made here first, at 1, on the interleave's node, and the interleave takes it.
void start_readers_at_one(const nlohmann::json& spec, pipelines::Model& model) {
  const nlohmann::json& stages = spec.at("stages");
  for (size_t i = 0; i < stages.size(); ++i) {
    const nlohmann::json& s = stages[i];
    if (s.value("op", "") != "interleave" || s.value("parallelism", nlohmann::json()) != "autotune")
      continue;
    model
        .node(fmt::format("stages[{}]", i), "interleave",
              fmt::format("interleave '{}'", s.value("name", "")), fmt::format("stages[{}]", i + 1))
        .knob("parallelism", 1, s.at("cycle_length").get<int64_t>(), 1);
  }
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
                                                               trace::NameId name) {
  trace::ScopedSpan wait(name, trace::category::wait());
  if (it == nullptr) return pipelines::Element{};
  return it->next();
}

class Accelerator {
 public:
  // `local`: the index among this process's accelerators; `rank` of `ranks`: among all.
  Accelerator(const DlioWorkload& w, const TrainOptions& o, const std::vector<std::string>& files,
              Shared& shared, int64_t local, int64_t rank, int64_t ranks)
      : w_(w), o_(o), files_(files), shared_(shared), local_(local), rank_(rank), ranks_(ranks) {
    record_.rank = rank;
  }

  AcceleratorRecord take() { return std::move(record_); }

  // Leaves the barrier (once): done, out of batches, stopped or failed, the others go on without
  // this accelerator at once, not after its loader is torn down.
  void leave() {
    if (left_) return;
    left_ = true;
    shared_.barrier().arrive_and_drop();
  }

  void run() {
    static const LoopNames names;
    trace::Recorder& rec = trace::Recorder::global();
    rec.set_thread_name(fmt::format("accelerator {}", rank_));
    rec.set_thread_sort_index(-100 + rank_);
    pipelines::set_minimal_timer_slack();
    if (o_.realtime) {
      // The training loop stands for an accelerator, which does not wait for a core: real-time
      // priority lets it start its next step the moment the barrier opens, ahead of the loaders'
      // threads (which run at the normal priority: pipeline workers drop what they inherit).
      sched_param sp{};
      sp.sched_priority = 1;
      if (const int rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &sp); rc != 0) {
        shared_.no_realtime(rc);
      }
    }
    try {
      // One loader for every epoch, made before the first (its workers start while the
      // accelerators gather at the first epoch's barrier).
      std::unique_ptr<pipelines::Iterator> it;
      if (o_.mode == LoaderMode::kPipeline) {
        const nlohmann::json spec = repeated(loader_spec(w_, files_, rank_, ranks_));
        it = pipelines::parse_spec(spec, fmt::format("{} (rank {})", w_.file, rank_)).dataset.iterate();
        if (w_.read_threads_autotune) start_readers_at_one(spec, it->model());
      }
      std::optional<autotune::OnlineTuner> tuner;
      struct Detach {
        autotune::OnlineTuner* tuner = nullptr;
        ~Detach() {
          if (tuner != nullptr) tuner->detach();
        }
      } detach_guard;  // declared after the iterator: the tuner lets go of its model first
      if (it && o_.autotune && !it->model().knobs().empty()) {
        tuner.emplace(autotune::TunerOptions{});
        tuner->attach(it->model());
        detach_guard.tuner = &*tuner;
        tuner->start();
      }
      std::mt19937_64 rng(static_cast<uint64_t>(w_.seed + rank_));
      int64_t bytes_before = 0;
      size_t changes_seen = 0;
      for (int64_t epoch = 1; epoch <= o_.epochs; ++epoch) {
        if (local_ == 0 && o_.drop_caches && o_.mode == LoaderMode::kPipeline) {
          for (const std::string& f : files_) {
            if (f.find("://") == std::string::npos) pipelines::drop_from_page_cache(f);
          }
        }
        shared_.barrier().arrive_and_wait();  // every accelerator starts the epoch together
        if (shared_.stopping()) break;
        trace::ScopedSpan epoch_span(names.epoch, trace::category::step(), names.epoch_arg, epoch);
        EpochRecord e;
        e.epoch = epoch;
        e.start_ns = trace::now_ns();
        int64_t load_start = trace::now_ns();
        for (int64_t step = 1; step <= o_.steps; ++step) {
          StepRecord s;
          std::optional<pipelines::Element> batch = next_batch(it.get(), names.get_next);
          const int64_t loaded = trace::now_ns();
          if (!batch) {
            shared_.ran_out();
            shared_.note(fmt::format(
                "accelerator {}: its loader ended after {} of {} steps in epoch {} (its shard "
                "holds fewer batches)",
                rank_, step - 1, o_.steps, epoch));
            break;
          }
          s.load_ns = loaded - load_start;
          s.samples = it ? batch_samples(*batch) : w_.batch_size;
          s.bytes = batch_bytes(*batch);
          batch.reset();
          {
            trace::ScopedSpan compute(names.step, trace::category::step(), names.step_arg, step);
            compute_sleep(loaded + static_cast<int64_t>(w_.computation_time.sample(rng) * 1e9));
          }
          const int64_t computed = trace::now_ns();
          s.compute_ns = computed - loaded;
          s.proc_ns = computed - load_start;
          {
            trace::ScopedSpan wait(names.barrier, trace::category::wait());
            shared_.barrier().arrive_and_wait();
          }
          s.barrier_ns = trace::now_ns() - computed;
          e.steps.push_back(s);
          if (local_ == 0 && o_.on_step) o_.on_step(epoch, step);  // not timed as the next load
          load_start = trace::now_ns();
          if (shared_.stopping()) break;
        }
        e.end_ns = trace::now_ns();
        e.complete = static_cast<int64_t>(e.steps.size()) == o_.steps;
        if (it) {  // the storage bytes of this epoch: the file sources' counts since the last
          const int64_t bytes = storage_bytes(it->model().snapshot());
          e.bytes_read = bytes - bytes_before;
          bytes_before = bytes;
        }
        if (tuner) {  // what the tuner moved during this epoch
          if (record_.autotune.is_null()) record_.autotune = {{"changes", nlohmann::json::array()}};
          const std::vector<autotune::KnobChange> changes = tuner->changes();
          for (size_t i = changes_seen; i < changes.size(); ++i) {
            nlohmann::json change = autotune::to_json(std::vector{changes[i]})[0];
            change["epoch"] = epoch;
            record_.autotune["changes"].push_back(std::move(change));
          }
          changes_seen = changes.size();
        }
        const bool complete = e.complete;
        record_.epochs.push_back(std::move(e));
        if (local_ == 0 && o_.on_epoch_end) o_.on_epoch_end(epoch);
        if (!complete) break;  // out of batches or stopping: this accelerator leaves
      }
      leave();
      if (tuner) {
        tuner->detach();
        detach_guard.tuner = nullptr;
        if (record_.autotune.is_null()) record_.autotune = {{"changes", nlohmann::json::array()}};
        record_.autotune["final"] = autotune::to_json(autotune::knob_values(it->model()));
      }
      if (it) {
        const auto model = it->shared_model();
        it.reset();  // stops and joins the loader's workers; its statistics are then complete
        record_.stages = model->snapshot();
      }
    } catch (...) {
      shared_.fail(std::current_exception());
    }
    leave();
  }

 private:
  const DlioWorkload& w_;
  const TrainOptions& o_;
  const std::vector<std::string>& files_;
  Shared& shared_;
  int64_t local_, rank_, ranks_;
  AcceleratorRecord record_;
  bool left_ = false;
};

}  // namespace

std::vector<std::string> training_files(const DlioWorkload& w) {
  std::vector<std::string> files;
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::path(w.dataset.data_folder) / "train", ec))
    files = pipelines::matching_files(train_pattern(w));
  if (static_cast<int64_t>(files.size()) < w.dataset.num_files_train) {
    throw InputError(fmt::format(
        "{}: {} training file(s) match {}, the workload needs {} (dataset.num_files_train): "
        "generate them with `pipeprof datagen --workload {}` or "
        "++workload.workflow.generate_data=True",
        w.file, files.size(), train_pattern(w), w.dataset.num_files_train, w.file));
  }
  files.resize(static_cast<size_t>(w.dataset.num_files_train));
  return files;
}

TrainRun run_training(const DlioWorkload& w, const TrainOptions& options) {
  if (options.accelerators < 1) throw InputError("--accelerators: expected at least 1");
  TrainRun run;
  if (options.mode == LoaderMode::kPipeline) {
    run.files = options.files.empty() ? training_files(w) : options.files;
  }
  const bool ranks = options.cluster != nullptr && options.cluster->size() > 1;
  const int64_t first = ranks ? options.cluster->rank() * options.accelerators : 0;
  const int64_t total = ranks ? options.cluster->size() * options.accelerators : options.accelerators;
  run.spec = loader_spec(w, run.files.empty() ? expected_training_files(w) : run.files, first,
                         total);
  trace::Recorder& rec = trace::Recorder::global();
  if (options.trace) {
    rec.start();
    rec.set_thread_name("main");
  }
  Shared shared(options.accelerators, options.stop, options.cluster);
  std::vector<std::unique_ptr<Accelerator>> accelerators;
  for (int64_t k = 0; k < options.accelerators; ++k) {
    accelerators.push_back(
        std::make_unique<Accelerator>(w, options, run.files, shared, k, first + k, total));
  }
  {
    std::vector<std::jthread> threads;
    threads.reserve(accelerators.size());
    for (size_t i = 0; i < accelerators.size(); ++i) {
      try {
        threads.emplace_back([&a = accelerators[i]] { a->run(); });
      } catch (const std::system_error& e) {
        // No thread for this one (or the rest): they never arrive; those started stop.
        shared.fail(std::make_exception_ptr(RunFailure(fmt::format(
            "cannot start the thread of accelerator {} of {}: {}", i, accelerators.size(),
            e.what()))));
        for (size_t k = i; k < accelerators.size(); ++k)
          shared.barrier().arrive_and_drop();
        break;
      }
    }
  }  // joined
  if (options.trace) {
    run.trace = std::make_shared<trace::Trace>(rec.stop());
    run.trace->metadata["workload"] = w.name;
    run.trace->metadata["accelerators"] = std::to_string(options.accelerators);
  }
  if (const std::exception_ptr error = shared.error()) std::rethrow_exception(error);
  for (auto& a : accelerators)
    run.accelerators.push_back(a->take());
  run.interrupted = options.stop != nullptr && options.stop->load();
  run.notes = shared.notes();
  run.realtime = options.realtime && !shared.realtime_denied();
  return run;
}

}  // namespace pipeprof::harness::workload
