#include "workload/growing_run.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <random>

#include "pipeprof/harness/metrics.h"
#include "pipeprof/harness/training_loop.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/growing_cache.h"
#include "pipeprof/testbed/object_server.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/clock.h"
#include "workload/remote_env.h"
#include "workload/dlio_training.h"

namespace pipeprof::harness::workload {
namespace fs = std::filesystem;

namespace {

nlohmann::json loader(const DlioWorkload& w, const std::string& pattern) {
  const int64_t threads = std::max<int64_t>(1, w.read_threads);
  return {{"name", w.name + "_growing_cache"},
          {"description", "the complete shards of the growing cache, listed every epoch"},
          {"stages",
           {{{"op", "list_files"}, {"pattern", pattern}, {"shuffle", true}, {"seed", w.seed}},
            {{"op", "interleave"},
             {"name", "reader"},
             {"cycle_length", threads},
             {"parallelism", threads},
             {"pipeline", {{"stages", {{{"op", "tfrecord"}, {"files", "$element"}}}}}}},
            {{"op", "map"},
             {"name", "deserialize"},
             {"fn", "parse_example"},
             {"args",
              {{"features",
                {{{"key", "image"}, {"type", "bytes"}}, {{"key", "label"}, {"type", "int64"}}}}}},
             {"parallelism", threads}},
            {{"op", "batch"}, {"batch_size", w.batch_size}},
            {{"op", "prefetch"}, {"buffer_size", std::max<int64_t>(1, w.prefetch_size)}}}}};
}

}  // namespace

GrowingRun run_growing_cache(const DlioWorkload& w, const fs::path& scratch,
                             const std::atomic<bool>* stop,
                             const std::function<void(const GrowingEpoch&)>& on_epoch) {
  const RemoteSettings& s = w.remote;
  GrowingRun run;
  run.samplers = s.samplers;
  run.shard_samples = s.shard_samples;
  const std::unique_ptr<testbed::ObjectServer> server = start_object_server(w);
  testbed::GrowingCacheOptions options;
  options.urls = object_urls(*server, w, training_files(w));
  // The samples in a random order (seeded): the shards then hold a mix, as a sampler's would.
  std::shuffle(options.urls.begin(), options.urls.end(), std::mt19937_64(static_cast<uint64_t>(w.seed)));
  options.dir = scratch / "growing_cache";
  options.samplers = static_cast<int>(s.samplers);
  options.shard_samples = s.shard_samples;
  options.budget_bytes = static_cast<uint64_t>(s.cache_budget_mib * 1048576.0);
  struct RemoveFolder {
    fs::path dir;
    ~RemoveFolder() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_folder{options.dir};
  const int64_t start = trace::now_ns();
  testbed::GrowingSampleCache cache(options);
  run.spec = loader(w, cache.pattern());
  if (!cache.wait_for_first_shard(stop)) {
    run.interrupted = true;
    return run;
  }
  // The training job: one consumer on this thread, a fresh loader every epoch (the folder is
  // listed again), the budget enforced and the samplers checked before each epoch.
  std::mt19937_64 rng(static_cast<uint64_t>(w.seed));
  std::vector<int64_t> evicted;
  LoopOptions loop;
  loop.epochs = w.epochs;
  loop.loader_life = LoaderLife::kEpoch;
  loop.autotune = false;
  loop.stop = stop;
  loop.open = [&](int64_t, int64_t) { return pipelines::parse_spec(run.spec, w.file).dataset.iterate(); };
  loop.step = [&](int64_t, pipelines::Element& batch, int64_t loaded_ns) {
    batch = {};
    pipelines::precise_sleep_until(loaded_ns + static_cast<int64_t>(w.computation_time.sample(rng) * 1e9));
  };
  loop.before_epoch = [&](int64_t) {
    (void)cache.samplers_done();  // a failed sampler ends the run, naming it
    evicted.push_back(cache.enforce_budget().shards);
  };
  loop.on_epoch_end = [&](const EpochRecord& rec) {
    GrowingEpoch e;
    e.epoch = rec.epoch;
    e.evicted_shards = evicted.empty() ? 0 : evicted.back();
    e.steps = static_cast<int64_t>(rec.steps.size());
    if (run.time_to_first_step_s == 0 && !rec.steps.empty())
      run.time_to_first_step_s = static_cast<double>(rec.start_ns + rec.steps[0].load_ns - start) / 1e9;
    e.seconds = static_cast<double>(rec.end_ns - rec.start_ns) / 1e9;
    // DLIO's AU with the epoch's first step left out.
    e.au_percentage = 100.0 * harness::epoch_metrics(rec, {.exclude_start = 1}, w.batch_size).au;
    std::vector<int64_t> waits;
    for (const StepRecord& step : rec.steps) {
      waits.push_back(step.load_ns);
      e.samples += step.samples;
    }
    const WaitStats ws = wait_stats(std::move(waits));
    e.wait_mean_ms = ws.mean_ms;
    e.wait_p99_ms = ws.p99_ms;
    double ns_per_record = 0;  // the deserialization's time per record, in one thread
    for (const auto& stage : rec.stages) {
      if (stage.op == "list_files") e.shards = stage.elements;
      if (stage.op == "tfrecord") e.bytes += stage.bytes_read;
      if (stage.name.find("deserialize") != std::string::npos) ns_per_record = stage.wall_ns_per_element;
    }
    // One thread's rate: a record's bytes over the time the function took for it.
    if (ns_per_record > 0 && e.samples > 0) {
      const double record_bytes = static_cast<double>(e.bytes) / static_cast<double>(e.samples);
      e.deserialize_mb_s_per_thread = record_bytes / ns_per_record * 1e3;
    }
    run.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
  };
  run.interrupted = run_loop(loop).interrupted;
  return run;
}

nlohmann::json growing_entry(const DlioWorkload& w, const GrowingRun& run) {
  ExperimentResult x;
  x.id = "workload:" + w.name;
  x.description = fmt::format(
      "growing sample cache: {} samplers write {}-sample TFRecord shards, every epoch trains on "
      "the complete ones (batch {}, {} readers, computation_time {})",
      run.samplers, run.shard_samples, w.batch_size, w.read_threads, w.computation_time.describe());
  x.step = fmt::format("sleep:{:g}", w.computation_time.mean() * 1e3);
  x.part = std::string("C");
  x.epochs = w.epochs;
  x.spec = run.spec;
  x.interrupted = run.interrupted;
  results::GrowingCacheRecord growing{.samplers = run.samplers,
                                      .shard_samples = run.shard_samples,
                                      .latency_ms = w.remote.latency_ms,
                                      .rate_mib_s_per_request = w.remote.rate_mib_s,
                                      .budget_mib = static_cast<double>(w.remote.cache_budget_mib),
                                      .time_to_first_step_seconds = run.time_to_first_step_s};
  double ideal_sum = 0;
  for (const GrowingEpoch& e : run.epochs) {
    Repetition rep;
    rep.wall_ms = e.seconds * 1e3;
    rep.steps = e.steps;
    rep.wait.mean_ms = e.wait_mean_ms;
    rep.wait.p99_ms = e.wait_p99_ms;
    rep.au_percentage = e.au_percentage;
    rep.samples = e.samples;
    x.repetitions.push_back(rep);
    ideal_sum += static_cast<double>(e.steps) * w.computation_time.mean() * 1e3;
    growing.epochs.push_back({.epoch = e.epoch,
                              .shards = e.shards,
                              .samples = e.samples,
                              .steps = e.steps,
                              .evicted_shards = e.evicted_shards,
                              .bytes = e.bytes,
                              .seconds = e.seconds,
                              .au_percentage = e.au_percentage,
                              .wait_mean_ms = e.wait_mean_ms,
                              .wait_p99_ms = e.wait_p99_ms,
                              .deserialize_mb_per_s_per_thread = e.deserialize_mb_s_per_thread});
  }
  summarize_repetitions(x);
  // The epochs differ in length: the ideal is the mean epoch's compute time.
  if (!run.epochs.empty()) {
    x.ideal_ms = ideal_sum / static_cast<double>(run.epochs.size());
    x.ideal_basis = "an epoch's steps x computation_time (the mean over the growing epochs)";
    x.simulation_note = "a growing cache: its ideal is its computation time";
  }
  x.kind = results::EntryKind::kGrowingCache;
  x.workload = results::WorkloadRecord{.file = w.file,
                                       .name = w.name,
                                       .format = "tfrecord",
                                       .batch_size = w.batch_size,
                                       .read_threads = w.read_threads,
                                       .computation_time = w.computation_time.to_json(),
                                       .growing_cache = std::move(growing)};
  return to_json(x);
}

std::string growing_table(const GrowingRun& run) {
  std::string out = fmt::format(
      "growing cache: {} samplers, {} samples a shard; first step after {:.2f} s\n", run.samplers,
      run.shard_samples, run.time_to_first_step_s);
  out += fmt::format("  {:>5} {:>6} {:>8} {:>6} {:>8} {:>7} {:>10} {:>10} {:>14}\n", "epoch", "shards",
                     "samples", "steps", "seconds", "AU %", "wait ms", "p99 ms", "deser. MB/s/thr");
  for (const GrowingEpoch& e : run.epochs) {
    out += fmt::format("  {:>5} {:>6} {:>8} {:>6} {:>8.2f} {:>7.1f} {:>10.2f} {:>10.2f} {:>14.0f}{}\n",
                       e.epoch, e.shards, e.samples, e.steps, e.seconds, e.au_percentage,
                       e.wait_mean_ms, e.wait_p99_ms, e.deserialize_mb_s_per_thread,
                       e.evicted_shards > 0 ? fmt::format("  ({} evicted)", e.evicted_shards)
                                            : std::string());
  }
  return out;
}

}  // namespace pipeprof::harness::workload
