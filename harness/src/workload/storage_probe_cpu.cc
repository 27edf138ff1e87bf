// What a sample costs this client's CPU, as the storage probe measures it (storage_probe.h): the
// workload's loader alone, and its training loop near the limit.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/trace/clock.h"
#include "workload/dlio_training.h"
#include "workload/storage_probe_detail.h"
#include "workload/workload_pipeline.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload::probe_detail {

// The workload's own loader (one accelerator, its batch, no preprocess sleep) over `files`, in
// the page cache (read once first): the process's CPU time per sample, in microseconds, from the
// first batch on (the loader's start, paid once a run, left out; counted when the files hold
// one batch only), the median of three passes (a shared machine's CPU comes and goes).
double loader_cpu_us_per_sample(const DlioWorkload& w, const std::vector<std::string>& files,
                                const ProbeOptions& o) {
  for (const std::string& f : files)
    (void)pipelines::read_whole_file(f, {.storage = o.storage, .stop = o.stop});
  std::vector<double> passes;
  for (int pass = 0; pass < 3 && !stopped(o); ++pass) {
    const int64_t opened = trace::process_cpu_ns();
    auto it = open_probe_loader(probe_loader(w, files.size(), 1, std::max<int64_t>(1, w.read_threads)),
                                files, 0, 1, o);
    auto first = it->next();
    if (!first) break;
    const int64_t first_samples = batch_samples(*first);
    int64_t samples = 0;
    const int64_t cpu0 = trace::process_cpu_ns();
    while (!stopped(o)) {
      auto batch = it->next();
      if (!batch) break;
      samples += batch_samples(*batch);
    }
    const int64_t cpu1 = trace::process_cpu_ns();
    if (samples > 0) {
      passes.push_back(static_cast<double>(cpu1 - cpu0) / 1e3 / static_cast<double>(samples));
    } else if (first_samples > 0) {
      passes.push_back(static_cast<double>(cpu1 - opened) / 1e3 / static_cast<double>(first_samples));
    }
  }
  if (passes.empty()) return 0;
  std::sort(passes.begin(), passes.end());
  return passes[passes.size() / 2];
}

// The workload's training loop itself over its own files (`all`, at most `most_files` of them,
// taken evenly) in the page cache, with half again as many accelerators as the loader's CPU
// (`loader_us` per sample) could feed: their steps (the sleeps, the barrier after each), their
// loaders' hand-offs and wake-ups, DLIO's preprocess sleep left out. Each file is read once where
// there are enough of them, else the files are listed again in turn, so that a file is read again
// about one of the loop's epochs later, as a training job reads it. (Reading a few files again and
// again costs this client less: on the 2-core development VM, the probe's 1,873 files of a
// 6,144-file dataset, each read 8 times, gave 1.1-1.3 ms a sample where the dataset's own files
// gave 1.5-1.7 ms, and runs of the workload 1.4-1.9 ms.) What a sample costs this client there, in
// microseconds of its cores, from the end of the 8th step to the end of the 24th: the cores' time
// over the samples the loaders made in that span when the loop fell behind its demand (the client
// saturated: whatever its cores could not be kept busy with counts too), else the process's CPU
// time over them; the latter also stands beside it (`busy_us`: a cold read's extra work fills the
// idle cores first). The loop runs three times: the first pays the first touches of its loaders'
// buffers (the process's arenas grow to the loop's working set, a cost a training job pays once and
// a search pays at its first probes, which it runs again), and is left out; the figure is the mean
// of the other two. The accelerators are at most as many as read for 20 s a run at the loader's
// figure. No figure (us 0) when that is not worth a run: fewer than two accelerators or no compute
// to sleep (the loader's figure stands), or when stopped.

LoopFigure loop_cpu_us_per_sample(const DlioWorkload& w, const std::vector<std::string>& all,
                                  size_t most_files, double loader_us, int64_t cores,
                                  const ProbeOptions& o) {
  constexpr int64_t kSteps = 24;
  constexpr int64_t kFrom = 8;  // the loaders' start and first hand-offs behind
  const double step_s = w.computation_time.mean();
  const auto batch = static_cast<double>(std::max<int64_t>(1, w.batch_size));
  if (!(loader_us > 0) || !(step_s > 0) || all.empty() || most_files < 1) return {};
  const double per_accelerator = batch / step_s;  // samples/s at AU 100%
  const double fed = static_cast<double>(cores) / (loader_us * 1e-6) / per_accelerator;
  const auto spf = static_cast<double>(std::max<int64_t>(1, w.dataset.num_samples_per_file));
  constexpr double kMostReadSeconds = 20;
  const double fit = std::floor(kMostReadSeconds * static_cast<double>(cores) /
                                (static_cast<double>(kSteps) * batch * loader_us * 1e-6));
  const auto accelerators = static_cast<int64_t>(std::min({std::floor(1.5 * fed), fit, 256.0}));
  if (accelerators < 2) return {};
  // Each accelerator its own files for kSteps steps.
  const auto needed = static_cast<size_t>(std::ceil(static_cast<double>(accelerators * kSteps) * batch / spf));
  const std::vector<std::string> files = evenly(all, std::min(needed, most_files));
  read_warm(files, o);
  if (stopped(o)) return {};
  std::vector<std::string> listed;
  listed.reserve(needed);
  for (size_t i = 0; i < needed; ++i)
    listed.push_back(files[i % files.size()]);
  DlioWorkload c = w;
  c.dataset.num_files_train = static_cast<int64_t>(listed.size());
  c.preprocess_time = {};
  c.total_training_steps = kSteps;
  c.epochs = 1;
  c.file_shuffle = false;
  c.sample_shuffle = false;
  const double delivered = static_cast<double>(accelerators * (kSteps - kFrom)) * batch;
  const double demanded = static_cast<double>(accelerators) * per_accelerator;
  const auto once = [&]() -> LoopFigure {
    // Each loader's output stage, and the batches in its buffer when its accelerator has just
    // finished step kFrom and step kSteps (read on that accelerator's own thread, after the
    // barrier and before it takes its next batch): by then it has taken exactly that many.
    const auto n = static_cast<size_t>(accelerators);
    std::vector<const pipelines::NodeStats*> outputs(n, nullptr);
    std::vector<int64_t> held_from(n, 0), held_to(n, 0);
    std::atomic<int64_t> cpu_from{0}, cpu_to{0}, wall_from{0}, wall_to{0};
    const TrainRun run = run_training(
        c, {.accelerators = accelerators,
            .epochs = 1,
            .steps = kSteps,
            .autotune = false,
            .stop = o.stop,
            .on_step = [&](int64_t, int64_t step) {
              if (step == kFrom) {
                cpu_from = trace::process_cpu_ns();
                wall_from = trace::now_ns();
              }
              if (step == kSteps) {
                cpu_to = trace::process_cpu_ns();
                wall_to = trace::now_ns();
              }
            },
            .after_step = [&](int64_t rank, int64_t, int64_t step) {
              const pipelines::NodeStats* out = outputs.at(static_cast<size_t>(rank));
              if (out != nullptr && (step == kFrom || step == kSteps)) {
                (step == kFrom ? held_from : held_to).at(static_cast<size_t>(rank)) =
                    out->buffered.load(std::memory_order_relaxed);
              }
              return false;  // no pause
            },
            .on_loader = [&](int64_t rank, pipelines::Model& loader) {
              for (const pipelines::Node* node : loader.nodes()) {
                if (node->parent().empty()) outputs.at(static_cast<size_t>(rank)) = &node->stats();
              }
            },
            .files = listed,
            .storage = o.storage});
    if (run.interrupted || cpu_from.load() == 0 || cpu_to.load() <= cpu_from.load())
      return LoopFigure{};
    const double wall_s = static_cast<double>(wall_to.load() - wall_from.load()) / 1e9;
    // The samples the loaders made in the span: those delivered, less the read-ahead they held at
    // its start and spent in it (a loader reads ahead while the barrier holds every accelerator
    // for the slowest one's first batch), plus what they held at its end. A figure far from the
    // samples delivered is not believed.
    int64_t held = 0;
    for (size_t r = 0; r < n; ++r)
      held += held_to[r] - held_from[r];
    double samples = delivered + static_cast<double>(held) * batch;
    if (!(samples >= 0.5 * delivered && samples <= 1.5 * delivered)) samples = delivered;
    const double process_us = static_cast<double>(cpu_to.load() - cpu_from.load()) / 1e3 / samples;
    LoopFigure f{.us = process_us,
                 .busy_us = process_us,
                 .accelerators = accelerators,
                 .files = files.size()};
    if (wall_s > 0 && delivered / wall_s < 0.95 * demanded)
      f.us = std::max(process_us, static_cast<double>(cores) * wall_s * 1e6 / samples);
    return f;
  };
  if (!(once().us > 0)) return {};  // the warm-up
  const LoopFigure first = once();
  const LoopFigure second = first.us > 0 ? once() : LoopFigure{};
  if (!(second.us > 0)) return {};
  return {.us = (first.us + second.us) / 2,
          .busy_us = (first.busy_us + second.busy_us) / 2,
          .accelerators = accelerators,
          .files = files.size()};
}

}  // namespace pipeprof::harness::workload::probe_detail
