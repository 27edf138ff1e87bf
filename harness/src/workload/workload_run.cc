#include "workload/workload_run.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <thread>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/memory_limit.h"
#include "pipeprof/results/compare.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/trace/clock.h"
#include "workload/remote_env.h"
#include "workload/workload_pipeline.h"

namespace pipeprof::harness::workload {
namespace {

int64_t peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

WorkloadResult run_workload(const DlioWorkload& w, const WorkloadOptions& options,
                            LoaderMode mode) {
  WorkloadResult r;
  cluster::Cluster* ranks =
      options.cluster != nullptr && options.cluster->size() > 1 ? options.cluster : nullptr;
  const int64_t total = options.accelerators * (ranks != nullptr ? ranks->size() : 1);
  r.accelerators = total;
  r.steps = steps_per_epoch(w, total);
  if (r.steps < 1) {
    throw InputError(fmt::format(
        "{}: {} sample(s) ({} files x {} per file) make no step of batch_size {} on each of {} "
        "accelerator(s)",
        w.file, w.dataset.num_files_train * w.dataset.num_samples_per_file,
        w.dataset.num_files_train, w.dataset.num_samples_per_file, w.batch_size, total));
  }
  TrainOptions t{.accelerators = options.accelerators,
                 .epochs = w.epochs,
                 .steps = r.steps,
                 .mode = mode,
                 .drop_caches = options.drop_caches,
                 .autotune = options.autotune,
                 .trace = options.trace,
                 .realtime = options.realtime,
                 .stop = options.stop,
                 .on_step = options.on_step,
                 .cluster = ranks};
  // DLIO's checkpoints during training: every accelerator writes its share where DLIO writes it
  // (after the step or the epoch), and the training waits.
  // An S3 workload: its loaders and its checkpoints read and write through one storage context.
  const std::shared_ptr<pipelines::StorageContext> s3 =
      s3_storage(w, options.stop, ranks != nullptr ? ranks->rank() : 0);
  if (s3) t.storage = s3;
  std::unique_ptr<CheckpointIo> checkpoints;
  if (w.checkpoint && options.checkpoints && mode == LoaderMode::kPipeline) {
    r.checkpoint_plan = plan_checkpoint(w, total);
    const int64_t first = ranks != nullptr ? ranks->rank() * options.accelerators : 0;
    checkpoints = std::make_unique<CheckpointIo>(
        *r.checkpoint_plan, w.checkpoint_settings, first, options.accelerators,
        CheckpointIoOptions{.direct = w.odirect, .stop = options.stop, .storage = s3});
    const bool by_step = w.checkpoint_settings.steps_between >= 0;
    if (by_step) {
      t.after_step = [&w, &checkpoints](int64_t rank, int64_t epoch, int64_t step) {
        if (!checkpoint_after_step(w, step)) return false;
        checkpoints->save(rank, epoch, step, step / w.checkpoint_settings.steps_between,
                          trace::now_ns());
        return true;  // every accelerator waits for the slowest writer
      };
    } else {
      t.after_epoch = [&w, &checkpoints](int64_t rank, int64_t epoch, int64_t steps) {
        if (!checkpoint_after_epoch(w, epoch)) return;
        checkpoints->save(rank, epoch, steps + 1, 1, trace::now_ns());
      };
    }
  }
  // A remote dataset: the server (and the copy or the cache) for this run only.
  // Declared before the environment, so removed after it is torn down (preloads stopped).
  std::filesystem::path scratch = options.scratch_dir;
  struct RemoveScratch {
    std::filesystem::path dir;
    ~RemoveScratch() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_scratch;
  std::unique_ptr<RemoteEnvironment> remote;
  r.start = dlio_timestamp();
  const int64_t cpu0 = trace::process_cpu_ns();
  // What can fail before the training loops start (missing files, the object server): with
  // ranks, every rank learns of it before any enters the step barrier.
  std::exception_ptr error;
  try {
    if (w.remote.mode != RemoteMode::kNone && mode == LoaderMode::kPipeline) {
      if (scratch.empty()) {
        scratch = std::filesystem::temp_directory_path() /
                  fmt::format("pipeprof-remote-{}-{}", ::getpid(), trace::now_ns());
        remove_scratch.dir = scratch;
      } else if (ranks != nullptr) {  // each rank its own copy or cache
        scratch /= fmt::format("rank-{}", ranks->rank());
      }
      remote = std::make_unique<RemoteEnvironment>(w, options.accelerators, scratch, options.stop,
                                                   ranks != nullptr ? ranks->rank() : 0);
      t.files = remote->files();
      t.storage = remote->storage();
      t.on_epoch_end = [&remote](int64_t epoch) { remote->epoch_end(epoch); };
    } else if (mode == LoaderMode::kPipeline && ranks != nullptr) {
      t.files = training_files(w, s3.get());
    }
  } catch (...) {
    if (ranks == nullptr) throw;
    error = std::current_exception();
  }
  if (ranks == nullptr) {
    r.run = run_training(w, t);
    r.cpu_ms = trace::ns_to_ms(trace::process_cpu_ns() - cpu0);
    r.end = dlio_timestamp();
    r.metrics = run_metrics(w, r.run, r.steps);
    if (remote) r.remote = remote->report(w, r.run, r.metrics, r.steps);
    if (checkpoints) r.checkpoints = checkpoints->ops();
    return r;
  }

  // Ranks: every rank trains between two clock measures and sends rank 0 its accelerators'
  // records (the one rank path, ranks.h); rank 0 computes DLIO's metrics over all of them.
  RankRunOptions rank_options{.stop = options.stop, .classify = options.classify, .failed_before = error};
  RankRun ran = run_on_ranks(
      *ranks,
      [&] {
        TrainRun run = run_training(w, t);
        RankReport mine{.interrupted = run.interrupted,
                        .realtime = run.realtime,
                        .cpu_ms = trace::ns_to_ms(trace::process_cpu_ns() - cpu0),
                        .notes = run.notes,
                        .consumers = std::move(run.accelerators),
                        .trace = run.trace};
        if (checkpoints) mine.payload = ops_to_text(checkpoints->ops());
        r.run = std::move(run);
        return mine;
      },
      rank_options);
  r.cpu_ms = trace::ns_to_ms(trace::process_cpu_ns() - cpu0);
  r.end = dlio_timestamp();
  if (ran.broken) {
    // A rank did not come (it died, and mpirun is ending the job): this rank's own part, marked
    // interrupted, so rank 0 still writes what it measured.
    if (ran.mine.error) {
      if (ran.mine.error->input) throw InputError(ran.mine.error->message);
      throw RunFailure(ran.mine.error->message);
    }
    r.run.accelerators = std::move(ran.mine.consumers);
    r.run.interrupted = true;
    r.run.notes.push_back(fmt::format(
        "the job broke: another rank stopped answering (mpirun names it); these are rank {}'s {} "
        "accelerator(s) only",
        ranks->rank(), options.accelerators));
    r.metrics = run_metrics(w, r.run, r.steps);
    return r;
  }
  if (ranks->rank() != 0) {
    // The others report to rank 0, which names their failures; their own run is what they have.
    r.run.accelerators = std::move(ran.mine.consumers);
    r.metrics = run_metrics(w, r.run, r.steps);
    return r;
  }
  if (ran.failure) {
    if (ran.failure->input) throw InputError(ran.failure->message);
    throw RunFailure(ran.failure->message);
  }
  TrainRun all;
  all.files = std::move(r.run.files);
  all.spec = std::move(r.run.spec);
  all.realtime = true;
  all.trace = ran.merged;
  RanksSummary summary{.size = ranks->size(), .cluster = ranks->describe(), .clock_error_ns = ran.clock_error_ns};
  double cpu_ms = 0;
  for (RankReport& rep : ran.ranks) {
    summary.rows.push_back(RankRow{.rank = rep.rank,
                                   .host = rep.host,
                                   .accelerators = static_cast<int64_t>(rep.consumers.size()),
                                   .cpu_ms = rep.cpu_ms,
                                   .interrupted = rep.interrupted});
    for (const std::string& n : rep.notes)
      all.notes.push_back(fmt::format("rank {}: {}", rep.rank, n));
    all.interrupted = all.interrupted || rep.interrupted;
    all.realtime = all.realtime && rep.realtime;
    cpu_ms += rep.cpu_ms;
    for (ConsumerRecord& c : rep.consumers)
      all.accelerators.push_back(std::move(c));
    if (!rep.payload.empty()) {
      for (CheckpointOp& op : ops_from_text(rep.payload))
        r.checkpoints.push_back(std::move(op));
    }
  }
  std::stable_sort(all.accelerators.begin(), all.accelerators.end(),
                   [](const ConsumerRecord& a, const ConsumerRecord& b) { return a.rank < b.rank; });
  r.run = std::move(all);
  r.cpu_ms = cpu_ms;
  r.metrics = run_metrics(w, r.run, r.steps);
  // Each rank's AU (the mean over its accelerators) and samples/s (their sum).
  const size_t per_rank = static_cast<size_t>(options.accelerators);
  for (RankRow& row : summary.rows) {
    double au = 0, rate = 0;
    size_t n = 0;
    for (size_t k = static_cast<size_t>(row.rank) * per_rank;
         k < static_cast<size_t>(row.rank + 1) * per_rank && k < r.metrics.accelerator_au_percentage.size(); ++k, ++n) {
      au += r.metrics.accelerator_au_percentage[k];
      rate += r.metrics.accelerator_throughput[k];
    }
    row.au_percentage = n > 0 ? au / static_cast<double>(n) : 0.0;
    row.samples_per_second = rate;
  }
  sum_up(summary);
  r.ranks = std::move(summary);
  if (remote) r.remote = remote->report(w, r.run, r.metrics, r.steps);
  return r;
}

double measure_storage_mib_per_s(const std::vector<std::string>& files, int threads, bool cold,
                                 const std::atomic<bool>* stop,
                                 const std::shared_ptr<const pipelines::StorageContext>& storage) {
  if (files.empty()) return 0;
  auto has_scheme = [](const std::string& f) { return f.find("://") != std::string::npos; };
  if (cold) {
    for (const std::string& f : files)
      if (!has_scheme(f)) pipelines::drop_from_page_cache(f);
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> bytes{0};
  const int64_t t0 = trace::now_ns();
  {
    std::vector<std::jthread> workers;
    for (int i = 0; i < std::max(1, threads); ++i) {
      workers.emplace_back([&] {
        constexpr size_t kBlock = size_t{1} << 20;
        std::unique_ptr<char[]> buffer;  // local files only: a server's streams can be hundreds
        for (size_t k = next++; k < files.size(); k = next++) {
          if (stop != nullptr && stop->load()) return;
          if (has_scheme(files[k])) {
            try {
              bytes += static_cast<int64_t>(pipelines::read_whole_file(
                  files[k], {.block_bytes = kBlock / 4, .storage = storage, .stop = stop}));
            } catch (const pipelines::IoError&) {
              // counts nothing, as a local file that cannot be opened
            } catch (const pipelines::RemoteError&) {
            }
            continue;
          }
          const int fd = ::open(files[k].c_str(), O_RDONLY | O_CLOEXEC);
          if (fd < 0) continue;
          if (!buffer) buffer = std::make_unique_for_overwrite<char[]>(kBlock);
          ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
          ssize_t n = 0;
          while ((n = ::read(fd, buffer.get(), kBlock)) > 0)
            bytes += n;
          ::close(fd);
        }
      });
    }
  }
  const int64_t dt = trace::now_ns() - t0;
  return dt > 0 ? static_cast<double>(bytes.load()) / 1048576.0 / (static_cast<double>(dt) / 1e9)
                : 0;
}

int64_t files_bytes(const std::vector<std::string>& files) {
  int64_t total = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

double mean_sample_bytes(const DlioWorkload& w, const std::vector<std::string>& files) {
  const double samples =
      static_cast<double>(files.size()) * static_cast<double>(w.dataset.num_samples_per_file);
  return samples > 0 ? static_cast<double>(files_bytes(files)) / samples : record_bytes(w);
}

double demand_mib_per_s(const DlioWorkload& w, double sample_bytes) {
  const double step_s = w.computation_time.mean();
  if (step_s <= 0) return 0;
  return static_cast<double>(w.batch_size) / step_s * sample_bytes / 1048576.0;
}

std::vector<std::string> spread_files(const std::vector<std::string>& files, int64_t max_bytes) {
  const int64_t total = files_bytes(files);
  if (total <= max_bytes || files.empty()) return files;
  // Every k-th file: k = ceil(total / max_bytes).
  const auto k = std::max<size_t>(
      1, static_cast<size_t>((total + max_bytes - 1) / std::max<int64_t>(1, max_bytes)));
  std::vector<std::string> out;
  for (size_t i = 0; i < files.size(); i += k)
    out.push_back(files[i]);
  return out;
}

StallAnalysis stall_analysis(const DlioWorkload& w, const WorkloadOptions& options,
                             const std::function<void(const std::string&)>& on_pass) {
  StallAnalysis a;
  WorkloadOptions o = options;
  o.trace = false;
  o.checkpoints = false;
  auto pass = [&](const char* name, LoaderMode mode, bool cold) {
    if (on_pass) on_pass(name);
    o.drop_caches = cold;
    WorkloadResult r = run_workload(w, o, mode);
    a.interrupted = a.interrupted || r.run.interrupted;
    return r;
  };
  const WorkloadResult synthetic = pass("synthetic", LoaderMode::kSynthetic, false);
  // Warm: the files read once first, so every epoch finds them in the page cache.
  if (!a.interrupted) {
    if (on_pass) on_pass("reading the dataset into the page cache");
    (void)measure_storage_mib_per_s(training_files(w), 2, false, options.stop);
  }
  const WorkloadResult warm =
      a.interrupted ? WorkloadResult{} : pass("warm", LoaderMode::kPipeline, false);
  const WorkloadResult cold =
      a.interrupted ? WorkloadResult{} : pass("cold", LoaderMode::kPipeline, true);
  a.synthetic_au = synthetic.metrics.au_mean_percentage;
  a.warm_au = warm.metrics.au_mean_percentage;
  a.cold_au = cold.metrics.au_mean_percentage;
  const size_t epochs = std::min({synthetic.metrics.epoch_seconds.size(),
                                  warm.metrics.epoch_seconds.size(),
                                  cold.metrics.epoch_seconds.size()});
  for (size_t e = 0; e < epochs; ++e) {
    StallEpoch s;
    s.synthetic_s = synthetic.metrics.epoch_seconds[e];
    s.warm_s = warm.metrics.epoch_seconds[e];
    s.cold_s = cold.metrics.epoch_seconds[e];
    s.fetch_stall_s = std::max(0.0, s.cold_s - s.warm_s);
    s.prep_stall_s = std::max(0.0, s.warm_s - s.synthetic_s);
    a.epochs.push_back(s);
  }
  return a;
}

results::WorkloadRecord workload_record(const DlioWorkload& w, const WorkloadResult& r) {
  const RunMetrics& m = r.metrics;
  results::WorkloadRecord out;
  out.file = w.file;
  out.name = w.name;
  out.loader = loader_name(w.loader);
  out.format = pipelines::formats::data_format_name(w.dataset.format);
  out.accelerators = r.accelerators;
  out.steps_per_epoch = r.steps;
  out.batch_size = w.batch_size;
  if (!w.read_threads_autotune) out.read_threads = w.read_threads;
  out.computation_time = w.computation_time.to_json();
  out.au_threshold = w.au;
  out.scale = w.scale;
  out.dlio = results::DlioFigures{.au_percentage = m.au_percentage,
                                  .throughput = m.throughput_samples_per_s,
                                  .au_mean_percentage = m.au_mean_percentage,
                                  .au_stdev_percentage = m.au_stdev_percentage,
                                  .throughput_mean = m.throughput_mean,
                                  .throughput_stdev = m.throughput_stdev,
                                  .io_mean_mb_per_s = m.io_mean_mb_per_s,
                                  .io_stdev_mb_per_s = m.io_stdev_mb_per_s,
                                  .meets_au = m.meets_au};
  for (size_t i = 0; i < m.accelerator_au_percentage.size(); ++i) {
    out.per_accelerator.push_back({.rank = static_cast<int64_t>(i),
                                   .au_percentage = m.accelerator_au_percentage[i],
                                   .samples_per_second = m.accelerator_throughput[i]});
  }
  out.wait = results::WaitFigures{.mean_ms = m.wait_mean_ms, .p50_ms = m.wait_p50_ms, .p99_ms = m.wait_p99_ms};
  out.barrier_mean_ms = m.barrier_mean_ms;
  int64_t bytes_read = 0;
  for (int64_t b : m.bytes_read_per_epoch)
    bytes_read += b;
  out.bytes_read = bytes_read;
  out.bytes_read_per_epoch = m.bytes_read_per_epoch;
  out.accelerator_priority = r.run.realtime ? "SCHED_FIFO" : "normal";
  out.notes = r.run.notes;
  out.remote = r.remote;
  out.ranks = r.ranks;
  if (r.checkpoint_plan) {
    out.checkpoint = checkpoint_record(w, *r.checkpoint_plan, r.checkpoints);
    double stall = 0;  // the accelerators waited for the slowest rank of each save
    for (const results::CheckpointOpRecord& op : out.checkpoint->ops)
      stall += op.slowest_seconds;
    out.checkpoint->training_stall_s = stall;
  }
  return out;
}

ExperimentResult to_experiment(const DlioWorkload& w, const WorkloadResult& r) {
  ExperimentResult x;
  x.id = "workload:" + w.name;
  x.description = fmt::format(
      "DLIO workload {}: {} files, {} loader, batch {}, {} accelerator(s), computation_time {}",
      w.name, pipelines::formats::data_format_name(w.dataset.format), loader_name(w.loader),
      w.batch_size, r.accelerators, w.computation_time.describe());
  x.step = fmt::format("sleep:{:g}", w.computation_time.mean() * 1e3);
  x.part = std::string("C");  // a move: GCC 12 -O3 reports a false -Wrestrict in assigning "C"
  x.epochs = w.epochs;
  x.spec = r.run.spec;
  x.interrupted = r.run.interrupted;
  // A repetition per epoch: the slowest accelerator's epoch, the waits of every accelerator.
  const double ideal_ms = static_cast<double>(r.steps) * w.computation_time.mean() * 1e3;
  size_t epochs = 0;
  for (const auto& a : r.run.accelerators)
    epochs = std::max(epochs, a.epochs.size());
  for (size_t e = 0; e < epochs; ++e) {
    const LoopFigures f = loop_figures(r.run.accelerators, e);
    if (!f.complete) continue;  // a partial epoch is not a measurement
    Repetition rep = repetition_of(f);
    // DLIO's AU of the epoch: the mean over the accelerators, its window left out.
    double au = 0;
    for (const auto& a : r.run.accelerators)
      au += e < a.epochs.size() ? epoch_metrics(w, a.epochs[e], r.steps).au : 0.0;
    rep.au_percentage = 100.0 * au / static_cast<double>(r.run.accelerators.size());
    rep.cpu_ms = r.cpu_ms / static_cast<double>(std::max<size_t>(1, epochs));
    rep.peak_rss_kb = peak_rss_kb();
    x.repetitions.push_back(rep);
  }
  summarize_repetitions(x);
  x.ideal_ms = ideal_ms;
  x.ideal_basis = "an epoch's steps x computation_time: every step computing, none waiting (AU 100%)";
  x.simulation_note = "a DLIO workload: its ideal is its computation time";
  // A remote dataset names its own ideal: an epoch as fast as the store can serve it with the
  // requests in flight, or its computation time where that is longer (the median over the epochs,
  // as the wall time is).
  if (r.remote && !r.remote->epochs.empty()) {
    std::vector<double> ideals;
    for (const results::RemoteEpoch& e : r.remote->epochs)
      ideals.push_back(e.ideal_seconds * 1e3);
    x.ideal_ms = results::median(ideals);
    x.ideal_basis =
        "the remote store's epoch: the longer of an epoch's steps x computation_time and its "
        "requests' time over the requests in flight (the median over the epochs)";
    x.simulation_note = "a remote DLIO workload: its ideal is what the store can serve";
  }
  if (x.median_wall_ms > 0 && *x.ideal_ms > 0) x.efficiency = *x.ideal_ms / x.median_wall_ms;
  if (!r.run.accelerators.empty()) {
    x.stages = r.run.accelerators.front().stages;
    x.autotune = r.run.accelerators.front().autotune;
  }
  x.kind = results::EntryKind::kWorkload;
  x.workload = workload_record(w, r);
  return x;
}

results::StallRecord stall_record(const StallAnalysis& a) {
  results::StallRecord out{.synthetic_au_percentage = a.synthetic_au,
                           .warm_au_percentage = a.warm_au,
                           .cold_au_percentage = a.cold_au};
  for (size_t i = 0; i < a.epochs.size(); ++i) {
    const StallEpoch& e = a.epochs[i];
    out.epochs.push_back({.epoch = static_cast<int64_t>(i + 1),
                          .synthetic_s = e.synthetic_s,
                          .warm_s = e.warm_s,
                          .cold_s = e.cold_s,
                          .fetch_stall_s = e.fetch_stall_s,
                          .prep_stall_s = e.prep_stall_s});
  }
  return out;
}

std::string dry_run_text(const DlioWorkload& w, int64_t ranks) {
  std::string out = fmt::format(
      "{}: {} rank(s) (--accelerators x processes); nothing is read or written (--dry-run)\n",
      w.name, ranks);
  const bool uses_data = w.train || w.evaluation || w.generate_data;
  if (uses_data) {
    const std::vector<pipelines::formats::DatasetFile> files = pipelines::formats::dataset_files(w.dataset);
    double train_bytes = 0, all_bytes = 0;
    int64_t train_files = 0;
    for (const auto& f : files) {
      all_bytes += static_cast<double>(f.bytes);
      if (!f.eval) {
        train_bytes += static_cast<double>(f.bytes);
        ++train_files;
      }
    }
    if (w.generate_data) {
      out += fmt::format("data generation: {} {} file(s), {}, into {}\n", files.size(),
                         pipelines::formats::data_format_name(w.dataset.format),
                         pipelines::format_bytes(all_bytes),
                         w.dataset.data_folder);
    }
    if (w.train) {
      const int64_t steps = steps_per_epoch(w, ranks);
      const double per_rank = static_cast<double>(steps) * static_cast<double>(w.batch_size) *
                              record_bytes(w);
      out += fmt::format(
          "training: {} {} file(s) in {}/train, {} (samples of {} bytes); {} epoch(s) x {} "
          "step(s) of batch {} per rank\n",
          train_files, pipelines::formats::data_format_name(w.dataset.format),
          w.dataset.data_folder, pipelines::format_bytes(train_bytes), static_cast<int64_t>(record_bytes(w)),
          w.epochs, steps, w.batch_size);
      out += fmt::format(
          "  reads: {} per rank and epoch, {} per epoch from all ranks, {} in the run\n",
          pipelines::format_bytes(per_rank),
          pipelines::format_bytes(per_rank * static_cast<double>(ranks)),
          pipelines::format_bytes(per_rank * static_cast<double>(ranks) * static_cast<double>(w.epochs)));
      const double memory = host_memory_gb();
      if (memory > 0) {
        const double ratio = train_bytes / kGiB / memory;
        out += fmt::format(
            "  this client's memory: {:.1f} GiB; the dataset is {:.2f} x that: {}\n", memory, ratio,
            ratio >= 5 ? "at least 5 x, as MLPerf Storage asks (reads come from storage)"
                       : "under the 5 x MLPerf Storage asks: after the first epoch reads come "
                         "from the page cache unless --drop-caches makes every epoch cold");
      }
    }
  }
  if (w.checkpoint) {
    const CheckpointPlan plan = plan_checkpoint(w, ranks);
    const CheckpointSettings& c = w.checkpoint_settings;
    out += "checkpoints (workflow.checkpoint):\n";
    std::istringstream lines(describe_plan(w, plan));
    for (std::string line; std::getline(lines, line);)
      out += "  " + line + "\n";
    const double size = static_cast<double>(plan.file_bytes()) / kGiB;
    if (w.train) {
      int64_t count = 0;
      const int64_t steps = steps_per_epoch(w, ranks);
      for (int64_t e = 1; e <= w.epochs; ++e) {
        for (int64_t s = 1; s <= steps; ++s)
          count += checkpoint_after_step(w, s) ? 1 : 0;
        count += checkpoint_after_epoch(w, e) ? 1 : 0;
      }
      out += fmt::format("  during training: {} checkpoint(s) ({}), {:.2f} GiB written\n", count,
                         c.steps_between > 0
                             ? fmt::format("every {} steps of an epoch", c.steps_between)
                             : fmt::format("after epoch {}, then every {} epoch(s)", c.after_epoch,
                                           c.epochs_between),
                         static_cast<double>(count) * size);
    } else {
      const int64_t writes = std::max<int64_t>(0, c.num_write);
      const int64_t reads = std::max<int64_t>(0, c.num_read);
      out += fmt::format(
          "  checkpoint-only: {} written ({:.2f} GiB{}), then {} read back cold ({:.2f} GiB)\n",
          writes, static_cast<double>(writes) * size, c.fsync ? ", fsync" : "", reads,
          static_cast<double>(reads) * size);
    }
  }
  if (!uses_data && !w.checkpoint) out += "the workflow runs nothing (no train, checkpoint or generate_data)\n";
  return out;
}

ExperimentResult checkpoint_experiment(const DlioWorkload& w, const CheckpointPlan& plan,
                                       const std::vector<CheckpointOp>& ops, int64_t ranks,
                                       bool interrupted) {
  ExperimentResult x;
  x.id = "workload:" + w.name;
  x.description = fmt::format(
      "DLIO checkpoint workload {}: {} rank(s), checkpoint of {:.2f} GiB, {} written and {} read",
      w.name, ranks, plan.size_gib(), std::max<int64_t>(0, w.checkpoint_settings.num_write),
      std::max<int64_t>(0, w.checkpoint_settings.num_read));
  x.step = "checkpoint";
  x.spec = nlohmann::json::object();  // no pipeline: the checkpoint is in the workload record
  x.part = std::string("C");
  x.interrupted = interrupted;
  x.simulation_note = "a checkpoint workload: no training steps to compare with an ideal";
  x.kind = results::EntryKind::kWorkload;
  results::WorkloadRecord rec;
  rec.file = w.file;
  rec.name = w.name;
  rec.format = "checkpoint";
  rec.accelerators = ranks;
  rec.checkpoint = checkpoint_record(w, plan, ops);
  x.workload = std::move(rec);
  return x;
}

}  // namespace pipeprof::harness::workload
