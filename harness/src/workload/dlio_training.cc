#include "workload/dlio_training.h"

#include <fmt/format.h>

#include <cerrno>
#include <ctime>
#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"
#include "workload/workload_pipeline.h"

namespace pipeprof::harness::workload {
namespace {

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

}  // namespace

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

std::vector<std::string> training_files(const DlioWorkload& w, const pipelines::StorageContext* storage,
                                        std::vector<uint64_t>* sizes) {
  std::vector<std::string> files;
  std::vector<uint64_t> object_bytes;
  std::error_code ec;
  if (w.s3) {
    // A listing per folder the layout puts files in (train/, or its subfolders): an object
    // store's patterns take wildcards in their last part only.
    const auto own = storage == nullptr ? s3_storage(w, nullptr) : nullptr;
    const std::string ext(pipelines::formats::data_format_name(w.dataset.format));
    std::set<std::string> folders;
    for (const std::string& f : expected_training_files(w))
      folders.insert(f.substr(0, f.rfind('/')));
    std::vector<std::pair<std::string, uint64_t>> objects;
    for (const std::string& folder : folders) {
      for (auto& object : pipelines::matching_objects(folder + "/*." + ext, own ? own.get() : storage))
        objects.push_back(std::move(object));
    }
    std::sort(objects.begin(), objects.end());
    for (auto& [name, size] : objects) {
      files.push_back(std::move(name));
      object_bytes.push_back(size);
    }
  } else if (std::filesystem::is_directory(std::filesystem::path(w.dataset.data_folder) / "train", ec)) {
    files = pipelines::matching_files(train_pattern(w));
  }
  if (static_cast<int64_t>(files.size()) < w.dataset.num_files_train) {
    throw InputError(fmt::format(
        "{}: {} training file(s) match {}, the workload needs {} (dataset.num_files_train): "
        "generate them with `pipeprof datagen --workload {}` or "
        "++workload.workflow.generate_data=True",
        w.file, files.size(), train_pattern(w), w.dataset.num_files_train, w.file));
  }
  files.resize(static_cast<size_t>(w.dataset.num_files_train));
  if (sizes != nullptr) {
    sizes->clear();
    for (size_t i = 0; i < files.size(); ++i) {
      if (w.s3) {
        sizes->push_back(object_bytes[i]);
      } else {
        std::error_code size_ec;
        const auto bytes = std::filesystem::file_size(files[i], size_ec);
        sizes->push_back(size_ec ? 0 : static_cast<uint64_t>(bytes));
      }
    }
  }
  return files;
}

std::shared_ptr<pipelines::StorageContext> s3_storage(const DlioWorkload& w, const std::atomic<bool>* stop,
                                                      int64_t rank) {
  if (!w.s3) return nullptr;
  pipelines::S3Options s3 = w.s3_options;
  if (!w.s3_endpoints.empty())
    s3.endpoint_url = w.s3_endpoints[static_cast<size_t>(rank) % w.s3_endpoints.size()];
  pipelines::RemoteReadOptions read;
  read.max_attempts = w.s3_max_attempts;
  read.stop = stop;
  return std::make_shared<pipelines::StorageContext>(read, nullptr, std::move(s3));
}

TrainRun run_training(const DlioWorkload& w, const TrainOptions& options) {
  if (options.accelerators < 1) throw InputError("--accelerators: expected at least 1");
  TrainRun run;
  if (options.mode == LoaderMode::kPipeline) {
    run.files = options.files.empty() ? training_files(w, options.storage.get()) : options.files;
  }
  const bool ranks = options.cluster != nullptr && options.cluster->size() > 1;
  const int64_t first = ranks ? options.cluster->rank() * options.accelerators : 0;
  const int64_t total = ranks ? options.cluster->size() * options.accelerators : options.accelerators;
  run.spec = loader_spec(w, run.files.empty() ? expected_training_files(w) : run.files, first,
                         total);
  LoopOptions loop;
  loop.consumers = options.accelerators;
  loop.epochs = options.epochs;
  loop.steps = options.steps;
  loop.barrier = true;
  loop.cluster = options.cluster;
  loop.first_rank = first;
  loop.loader_life = LoaderLife::kRun;
  if (options.mode == LoaderMode::kPipeline) {
    loop.open = [&w, &run, &options, total](int64_t rank, int64_t) {
      const nlohmann::json spec = repeated(loader_spec(w, run.files, rank, total));
      auto it = pipelines::parse_spec(spec, fmt::format("{} (rank {})", w.file, rank))
                    .dataset.iterate({.storage = options.storage});
      if (w.read_threads_autotune) start_readers_at_one(spec, it->model());
      if (options.on_loader) options.on_loader(rank, it->model());
      return it;
    };
  }
  // Each accelerator draws its computation times from its own generator, seeded by its rank; its
  // consumer thread alone uses it.
  std::vector<std::mt19937_64> rngs;
  for (int64_t k = 0; k < options.accelerators; ++k)
    rngs.emplace_back(static_cast<uint64_t>(w.seed + first + k));
  loop.step = [&w, &rngs, first](int64_t rank, pipelines::Element& batch, int64_t loaded_ns) {
    batch = {};
    std::mt19937_64& rng = rngs[static_cast<size_t>(rank - first)];
    compute_sleep(loaded_ns + static_cast<int64_t>(w.computation_time.sample(rng) * 1e9));
  };
  loop.count = [&w](const pipelines::Element& batch, bool has_loader, StepRecord& s) {
    s.samples = has_loader ? batch_samples(batch) : w.batch_size;
    s.bytes = batch_bytes(batch);
  };
  if (options.drop_caches && options.mode == LoaderMode::kPipeline) {
    loop.before_epoch = [&run](int64_t) {
      for (const std::string& f : run.files) {
        if (f.find("://") == std::string::npos) pipelines::drop_from_page_cache(f);
      }
    };
  }
  loop.on_step = options.on_step;
  if (options.on_epoch_end) {
    loop.on_epoch_end = [&options](const EpochRecord& e) { options.on_epoch_end(e.epoch); };
  }
  loop.after_step = options.after_step;
  loop.after_epoch = options.after_epoch;
  loop.autotune = options.autotune;
  loop.realtime = options.realtime;
  loop.stop = options.stop;
  loop.lane_name = [](int64_t rank) { return fmt::format("accelerator {}", rank); };
  loop.sort_index = -100 + static_cast<int>(first);

  trace::Recorder& rec = trace::Recorder::global();
  if (options.trace) {
    rec.start();
    rec.set_thread_name("main");
  }
  LoopRun looped;
  try {
    looped = run_loop(loop);
  } catch (...) {
    if (options.trace) (void)rec.stop();
    throw;
  }
  if (options.trace) {
    run.trace = std::make_shared<trace::Trace>(rec.stop());
    run.trace->metadata["workload"] = w.name;
    run.trace->metadata["accelerators"] = std::to_string(options.accelerators);
  }
  run.accelerators = std::move(looped.consumers);
  run.interrupted = looped.interrupted;
  run.notes = std::move(looped.notes);
  run.realtime = looped.realtime;
  return run;
}

}  // namespace pipeprof::harness::workload
