#include "workload/remote_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness::workload {
namespace fs = std::filesystem;

std::unique_ptr<testbed::ObjectServer> start_object_server(const DlioWorkload& w) {
  return std::make_unique<testbed::ObjectServer>(testbed::ObjectServerOptions{
      .root = fs::absolute(w.dataset.data_folder),
      .latency = std::chrono::microseconds(std::llround(w.remote.latency_ms * 1e3)),
      .rate_bytes_per_second = static_cast<int64_t>(w.remote.rate_mib_s * 1048576.0)});
}

std::vector<std::string> object_urls(const testbed::ObjectServer& server, const DlioWorkload& w,
                                     const std::vector<std::string>& files) {
  const fs::path root = fs::absolute(w.dataset.data_folder);
  std::vector<std::string> urls;
  urls.reserve(files.size());
  for (const std::string& f : files) {
    urls.push_back(server.url() + fs::absolute(f).lexically_relative(root).generic_string());
  }
  return urls;
}

RemoteEnvironment::RemoteEnvironment(const DlioWorkload& w, int64_t accelerators,
                                     const fs::path& scratch, const std::atomic<bool>* stop,
                                     int64_t rank)
    : w_(w), settings_(w.remote), accelerators_(accelerators), scratch_(scratch) {
  std::vector<std::string> urls;
  // Where each object's copy goes under the copy's folder (copy_first).
  std::vector<fs::path> relative;
  if (w.s3) {
    // The dataset is in its bucket: no server of the run's; the objects are read from there,
    // through the workload's S3 settings.
    storage_ = s3_storage(w, stop, rank);
    const std::string& endpoint = storage_->s3().endpoint_url;
    store_ = endpoint.empty() ? w.dataset.data_folder
                              : fmt::format("{} at {}", w.dataset.data_folder, endpoint);
    urls = training_files(w, storage_.get(), &file_bytes_);
    // An object's name below the data folder ("train/img_1_of_8.npz"); one outside it keeps its
    // key.
    std::string folder = w.dataset.data_folder;
    while (folder.ends_with('/')) folder.pop_back();
    folder += '/';
    for (const std::string& u : urls) {
      const size_t bucket_end = u.find('/', u.find("://") + 3);
      relative.push_back(u.starts_with(folder) ? u.substr(folder.size())
                                               : u.substr(std::min(u.size(), bucket_end + 1)));
    }
  } else {
    const std::vector<std::string> local = training_files(w, nullptr, &file_bytes_);
    const fs::path root = fs::absolute(w.dataset.data_folder);
    for (const std::string& f : local)
      relative.push_back(fs::absolute(f).lexically_relative(root));
    server_ = start_object_server(w);
    urls = object_urls(*server_, w, local);
    // One request per reader thread, as the ideals count them (R): no object is read in parts.
    pipelines::RemoteReadOptions read{.stop = stop};
    read.parts_in_flight = 1;
    storage_ = std::make_shared<pipelines::StorageContext>(read);
  }
  start_ns_ = trace::now_ns();
  try {
    switch (settings_.mode) {
      case RemoteMode::kDirect:
        files_ = urls;
        break;
      case RemoteMode::kCopyFirst: {
        copy_dir_ = scratch_ / "remote_copy";
        std::error_code ec;
        fs::remove_all(copy_dir_, ec);
        for (const fs::path& r : relative)
          files_.push_back((copy_dir_ / r).string());
        const int64_t bytes_before = storage_->counters().bytes;  // the listings' (S3)
        std::atomic<size_t> next{0};
        std::exception_ptr error;
        std::mutex error_mutex;
        {
          std::vector<std::jthread> copiers;
          const auto threads = static_cast<size_t>(std::max<int64_t>(1, settings_.copy_threads));
          for (size_t t = 0; t < std::min(threads, urls.size()); ++t) {
            copiers.emplace_back([&] {
              for (size_t i = next++; i < urls.size(); i = next++) {
                if (stop != nullptr && stop->load()) return;
                try {
                  try {
                    pipelines::download(urls[i], files_[i], storage_.get());
                  } catch (const pipelines::RemoteError& e) {
                    // As a read of the same object by a loader (direct, cached): bad input data.
                    throw pipelines::InputDataError("copy_first", e.what());
                  }
                } catch (...) {
                  const std::lock_guard lock(error_mutex);
                  if (!error) error = std::current_exception();
                  next = urls.size();
                }
              }
            });
          }
        }
        // A copy cut off by Ctrl-C is the stop, not a failure.
        if (error && !(stop != nullptr && stop->load())) std::rethrow_exception(error);
        // Interrupted midway: the run that follows stops at once; it is given the URLs, not a copy
        // with files missing.
        if (stop != nullptr && stop->load()) files_ = urls;
        copy_s_ = trace::ns_to_seconds(trace::now_ns() - start_ns_);
        copy_bytes_ = storage_->counters().bytes - bytes_before;
        break;
      }
      case RemoteMode::kCached: {
        cache_dir_ = settings_.cache_dir.empty() ? scratch_ / "remote_cache" : fs::path(settings_.cache_dir);
        if (!settings_.keep_cache && settings_.cache_dir.empty()) {
          std::error_code ec;
          fs::remove_all(cache_dir_, ec);  // the run's own folder
        }
        uint64_t total = 0;
        for (const uint64_t b : file_bytes_) total += b;
        const auto budget = settings_.cache_budget_mib > 0
                                ? static_cast<uint64_t>(settings_.cache_budget_mib * 1048576.0)
                                : total + total / 10 + 1;
        cache_ = std::make_shared<pipelines::RemoteCache>(pipelines::RemoteCacheOptions{
            .dir = cache_dir_,
            .budget_bytes = budget,
            .preload_threads = static_cast<int>(std::max<int64_t>(1, settings_.copy_threads)),
            // The run's server's port changes from run to run; a bucket's objects keep their names.
            .key_by_path = !w.s3,
            .read = storage_->read_options(),
            .s3 = storage_->s3()});
        // A folder of the user's: its cached objects go (a cold start), its other files stay.
        if (!settings_.keep_cache && !settings_.cache_dir.empty()) cache_->clear();
        storage_ = std::make_shared<pipelines::StorageContext>(storage_->read_options(), cache_,
                                                               storage_->s3());
        if (settings_.preload) cache_->preload(urls);
        files_ = urls;
        break;
      }
      case RemoteMode::kNone:
      case RemoteMode::kGrowingCache:  // its own run (growing_run.h)
        throw InputError(fmt::format("{}: pipeprof.remote.mode {}: not a way of reading files", w.file,
                                     remote_mode_name(settings_.mode)));
    }
  } catch (...) {
    // A failed copy or cache set-up leaves nothing behind (the destructor does not run).
    storage_.reset();
    cache_.reset();
    remove_files();
    throw;
  }
  samples_.push_back(sample());  // the epochs' counts start here (after a copy)
}

RemoteEnvironment::~RemoteEnvironment() {
  // The loaders may still hold the storage context (and the cache with it) for a moment: the
  // preload stops here, before its folder goes.
  if (cache_) cache_->stop_preload();
  storage_.reset();
  cache_.reset();
  server_.reset();
  remove_files();
}

void RemoteEnvironment::remove_files() {
  std::error_code ec;
  if (!copy_dir_.empty()) fs::remove_all(copy_dir_, ec);
  if (!cache_dir_.empty() && !settings_.keep_cache && settings_.cache_dir.empty()) {
    fs::remove_all(cache_dir_, ec);  // the run's own folder (a user's folder stays)
  }
}

RemoteEnvironment::Sample RemoteEnvironment::sample() const {
  return {.remote = storage_->counters(),
          .cache = cache_ ? cache_->counters() : pipelines::RemoteCacheCounters{}};
}

void RemoteEnvironment::epoch_end(int64_t epoch) {
  if (static_cast<int64_t>(samples_.size()) == epoch) samples_.push_back(sample());
}

results::RemoteRecord RemoteEnvironment::report(const DlioWorkload& w, const TrainRun& run,
                                         const RunMetrics& m, int64_t steps) const {
  const double latency_s = settings_.latency_ms / 1e3;
  const double rate = settings_.rate_mib_s * 1048576.0;
  double request_s = 0;  // sum of t_f
  uint64_t total_bytes = 0;
  // The server sends the first piece of a response at once, then waits piece / rate after each
  // (ObjectServer: pieces of 10 ms at the rate, at least 4 KiB).
  const double piece = std::max(4096.0, rate / 100);
  // A file over the first request's 1 MiB costs a second request (its latency again).
  constexpr uint64_t kFirstRequest = uint64_t{1} << 20;
  for (const uint64_t b : file_bytes_) {
    request_s += latency_s * (b > kFirstRequest ? 2 : 1) +
                 (rate > 0 ? std::max(0.0, static_cast<double>(b) - piece) / rate : 0.0);
    total_bytes += b;
  }
  const double mean_request_s = file_bytes_.empty() ? 0 : request_s / static_cast<double>(file_bytes_.size());
  const int64_t in_flight = accelerators_ * std::max<int64_t>(1, w.read_threads);
  const int64_t copy_threads = std::max<int64_t>(1, settings_.copy_threads);
  const double compute_s = static_cast<double>(steps) * w.computation_time.mean();
  const double remote_epoch_s = std::max(compute_s, request_s / static_cast<double>(in_flight));
  const int64_t batch_files = std::max<int64_t>(
      1, (w.batch_size + w.dataset.num_samples_per_file - 1) / w.dataset.num_samples_per_file);
  // Rank 0's first batch is read by its own readers only.
  const double first_batch_s =
      std::ceil(static_cast<double>(batch_files) /
                static_cast<double>(std::max<int64_t>(1, w.read_threads))) *
      mean_request_s;

  results::RemoteRecord out;
  out.mode = std::string(remote_mode_name(settings_.mode));
  out.preload = settings_.preload;
  if (!store_.empty()) out.store = store_;
  out.latency_ms = settings_.latency_ms;
  out.rate_mib_s_per_request = settings_.rate_mib_s;
  out.requests_in_flight = in_flight;
  out.files = static_cast<int64_t>(file_bytes_.size());
  out.dataset_bytes = static_cast<int64_t>(total_bytes);
  double ideal_first_step_s = first_batch_s;
  if (settings_.mode == RemoteMode::kCopyFirst) {
    const double ideal_copy_s = request_s / static_cast<double>(copy_threads);
    out.copy_seconds = copy_s_;
    out.copy_bytes = static_cast<int64_t>(copy_bytes_);
    out.copy_ideal_seconds = ideal_copy_s;
    out.copy_threads = copy_threads;
    ideal_first_step_s = ideal_copy_s;
  }
  if (cache_) {
    out.cache_budget_bytes = static_cast<int64_t>(cache_->options().budget_bytes);
    const auto c = cache_->counters();
    out.cache = results::CacheCounters{.hits = static_cast<int64_t>(c.hits),
                                       .misses = static_cast<int64_t>(c.misses),
                                       .bytes_fetched = static_cast<int64_t>(c.bytes_fetched),
                                       .evictions = static_cast<int64_t>(c.evictions),
                                       .damaged = static_cast<int64_t>(c.damaged),
                                       .write_failures = static_cast<int64_t>(c.write_failures),
                                       .too_large = static_cast<int64_t>(c.too_large),
                                       .preloaded = static_cast<int64_t>(c.preloaded),
                                       .preload_failures = static_cast<int64_t>(c.preload_failures)};
  }
  // The time to the first step: from the start (before a copy) to rank 0's first batch in hand.
  if (!run.accelerators.empty() && !run.accelerators[0].epochs.empty() &&
      !run.accelerators[0].epochs[0].steps.empty()) {
    const EpochRecord& e = run.accelerators[0].epochs[0];
    out.time_to_first_step_seconds = trace::ns_to_seconds(e.start_ns + e.steps[0].load_ns - start_ns_);
  }
  out.time_to_first_step_ideal_seconds = ideal_first_step_s;

  const bool cache_holds_all =
      cache_ && cache_->options().budget_bytes >= total_bytes;
  for (size_t k = 1; k < samples_.size(); ++k) {
    const Sample& a = samples_[k - 1];
    const Sample& b = samples_[k];
    const int64_t hits = b.cache.hits - a.cache.hits;
    const int64_t misses = b.cache.misses - a.cache.misses;
    bool remote_epoch = settings_.mode == RemoteMode::kDirect;
    if (settings_.mode == RemoteMode::kCached) remote_epoch = k == 1 || !cache_holds_all;
    double ideal = remote_epoch ? remote_epoch_s : compute_s;
    if (settings_.mode == RemoteMode::kCached && k == 1 && settings_.preload) {
      ideal = std::max(compute_s, request_s / static_cast<double>(in_flight + copy_threads));
    }
    results::RemoteEpoch e{
        .epoch = static_cast<int64_t>(k),
        .seconds = k - 1 < m.epoch_seconds.size() ? m.epoch_seconds[k - 1] : 0.0,
        .ideal_seconds = ideal,
        .au_percentage = k - 1 < m.au_percentage.size() ? m.au_percentage[k - 1] : 0.0,
        .remote_bytes = static_cast<int64_t>(b.remote.bytes - a.remote.bytes),
        .requests = static_cast<int64_t>(b.remote.requests - a.remote.requests),
        .retries = static_cast<int64_t>(b.remote.retries - a.remote.retries)};
    if (cache_) {
      e.cache_hits = hits;
      e.cache_misses = misses;
      e.cache_hit_ratio =
          hits + misses > 0 ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
    }
    out.epochs.push_back(e);
  }
  return out;
}

std::string RemoteEnvironment::table(const results::RemoteRecord& remote) {
  // The run's own server is described by its latency and rate; a store by its name.
  const std::string server =
      remote.store ? fmt::format("from {}", *remote.store)
                   : fmt::format("{:g} ms to first byte, {} per request", remote.latency_ms,
                                 remote.rate_mib_s_per_request > 0
                                     ? fmt::format("{:g} MiB/s", remote.rate_mib_s_per_request)
                                     : std::string("no bandwidth limit"));
  std::string out = fmt::format("remote ({}{}): {} files, {:.1f} MiB, {}, {} requests in flight\n",
                                remote.mode, remote.preload ? ", preloaded" : "", remote.files,
                                static_cast<double>(remote.dataset_bytes) / 1048576.0, server,
                                remote.requests_in_flight);
  if (remote.copy_seconds) {
    out += fmt::format("  copy first: {:.2f} s (ideal {:.2f} s, {} threads)\n", *remote.copy_seconds,
                       remote.copy_ideal_seconds.value_or(0), remote.copy_threads.value_or(0));
  }
  if (remote.time_to_first_step_seconds) {
    out += fmt::format("  time to first step: {:.3f} s (ideal {:.3f} s)\n",
                       *remote.time_to_first_step_seconds, remote.time_to_first_step_ideal_seconds);
  }
  const bool cached = remote.cache.has_value();
  out += fmt::format("  {:>5} {:>9} {:>9} {:>7} {:>12} {:>9}{}\n", "epoch", "seconds", "ideal",
                     "AU %", "remote MiB", "requests", cached ? "  hit ratio" : "");
  for (const results::RemoteEpoch& e : remote.epochs) {
    out += fmt::format("  {:>5} {:>9.2f} {:>9.2f} {:>7.1f} {:>12.1f} {:>9}{}\n", e.epoch, e.seconds,
                       e.ideal_seconds, e.au_percentage,
                       static_cast<double>(e.remote_bytes) / 1048576.0, e.requests,
                       cached ? fmt::format("  {:>9.1f}%", 100.0 * e.cache_hit_ratio.value_or(0))
                              : std::string());
  }
  return out;
}

}  // namespace pipeprof::harness::workload
