#include "workload/storage_probe.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <thread>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/results/document.h"
#include "pipeprof/trace/clock.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_training.h"
#include "workload/workload_pipeline.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {
namespace {

// Objects behind a server (http(s)://, s3://): no page cache of this client to drop or fill.
bool is_url(const std::string& name) {
  return name.find("://") != std::string::npos && !name.starts_with("file://");
}

bool stopped(const ProbeOptions& o) { return o.stop != nullptr && o.stop->load(); }

// `count` names taken evenly across `files`.
std::vector<std::string> evenly(const std::vector<std::string>& files, size_t count) {
  if (files.size() <= count) return files;
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i)
    out.push_back(files[i * files.size() / count]);
  return out;
}

void drop_cold(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    if (!is_url(f)) pipelines::drop_from_page_cache(f.starts_with("file://") ? f.substr(7) : f);
  }
}

// The files' mean size, from up to 8 of them asked at once (a request to a remote store may take
// a while to answer).
double mean_file_bytes(const std::vector<std::string>& files, const ProbeOptions& o) {
  const std::vector<std::string> some = evenly(files, 8);
  std::vector<uint64_t> sizes(some.size());
  std::vector<std::exception_ptr> errors(some.size());
  {
    std::vector<std::jthread> askers;
    for (size_t i = 0; i < some.size(); ++i) {
      askers.emplace_back([&, i] {
        try {
          sizes[i] = pipelines::object_size(some[i], o.storage);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  }
  double total = 0;
  for (size_t i = 0; i < some.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    total += static_cast<double>(sizes[i]);
  }
  return some.empty() ? 0 : total / static_cast<double>(some.size());
}

// The probe's files: the training files as the layout names them under the probed folder
// (probe_storage says which folder could not be read).
std::vector<std::string> probe_files(const DlioWorkload& w, const ProbeOptions& o) {
  const std::string& folder = w.dataset.data_folder;
  if (is_url(folder) && !w.s3) {
    // http(s): the layout's names under the URL (no listing needed); the first must exist.
    std::string base = folder;
    while (base.ends_with('/')) base.pop_back();
    DlioWorkload local = w;
    local.dataset.data_folder = std::string(1, '/');  // (a literal "/" trips -Wrestrict at -O3)
    std::vector<std::string> files = expected_training_files(local);
    for (std::string& f : files)
      f = base + f;
    if (!files.empty()) (void)pipelines::object_size(files.front(), o.storage);
    return files;
  }
  return training_files(w, o.storage.get());
}

// The workload as the probe's loaders run it over `files` split among `loaders`: `threads` reader
// threads each, the workload's batch where a loader's share fills one, no shuffle, no preprocess
// sleep, no step limit.
DlioWorkload probe_loader(const DlioWorkload& w, size_t files, int64_t loaders, int64_t threads) {
  DlioWorkload c = w;
  c.dataset.num_files_train = static_cast<int64_t>(files);
  c.read_threads = threads;
  c.read_threads_autotune = false;
  c.prefetch_size = 2 * threads;
  const int64_t share = static_cast<int64_t>(files) * std::max<int64_t>(1, w.dataset.num_samples_per_file) / loaders;
  c.batch_size = std::clamp<int64_t>(w.batch_size, 1, std::max<int64_t>(1, share));
  c.preprocess_time = {};
  c.total_training_steps = -1;
  c.file_shuffle = false;
  c.sample_shuffle = false;
  return c;
}

std::unique_ptr<pipelines::Iterator> open_probe_loader(const DlioWorkload& c, const std::vector<std::string>& files,
                                                       int64_t index, int64_t loaders, const ProbeOptions& o) {
  return pipelines::parse_spec(loader_spec(c, files, index, loaders),
                               fmt::format("{} (the probe's loader {})", c.file, index))
      .dataset.iterate({.storage = o.storage});
}

// The workload's own loader (one accelerator, its batch, no preprocess sleep) over `files`, in
// the page cache (read once first): the process's CPU time per sample, in microseconds.
double loader_cpu_us_per_sample(const DlioWorkload& w, const std::vector<std::string>& files,
                                const ProbeOptions& o) {
  for (const std::string& f : files)
    (void)pipelines::read_whole_file(f, {.storage = o.storage, .stop = o.stop});
  auto it = open_probe_loader(probe_loader(w, files.size(), 1, std::max<int64_t>(1, w.read_threads)), files, 0, 1, o);
  int64_t samples = 0;
  const int64_t cpu0 = trace::process_cpu_ns();
  while (!stopped(o)) {
    auto batch = it->next();
    if (!batch) break;
    samples += batch_samples(*batch);
  }
  const int64_t cpu = trace::process_cpu_ns() - cpu0;
  return samples > 0 ? static_cast<double>(cpu) / 1e3 / static_cast<double>(samples) : 0;
}

}  // namespace

double probe_pass_mib_per_s(const DlioWorkload& w, const std::vector<std::string>& files,
                            int64_t streams, double seconds, const ProbeOptions& o) {
  if (files.empty() || streams < 1) return 0;
  // As accelerators do: loaders of the workload's read_threads each (at most an interleave's 64),
  // each over its shard, as many as the streams take (at most one per file).
  const int64_t per = std::clamp<int64_t>(w.read_threads, 1, 64);
  const int64_t loaders = std::min<int64_t>((streams + per - 1) / per, static_cast<int64_t>(files.size()));
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> last{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const int64_t t0 = trace::now_ns();
  const int64_t deadline = t0 + static_cast<int64_t>(std::min(seconds, 86400.0) * 1e9);
  {
    std::vector<std::jthread> consumers;
    consumers.reserve(static_cast<size_t>(loaders));
    for (int64_t l = 0; l < loaders; ++l) {
      const DlioWorkload mine =
          probe_loader(w, files.size(), loaders, streams / loaders + (l < streams % loaders ? 1 : 0));
      consumers.emplace_back([&, mine, l] {
        try {
          auto it = open_probe_loader(mine, files, l, loaders, o);
          int64_t now = trace::now_ns();
          while (!stopped(o) && !failed.load() && now < deadline) {
            auto batch = it->next();
            if (!batch) break;
            bytes += batch_bytes(*batch);
            now = trace::now_ns();
            for (int64_t seen = last.load(); now > seen && !last.compare_exchange_weak(seen, now);) {
            }
          }
        } catch (...) {
          const std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      });
    }
  }
  if (error) std::rethrow_exception(error);
  const int64_t t1 = last.load();
  return t1 > t0 ? static_cast<double>(bytes.load()) / 1048576.0 / (static_cast<double>(t1 - t0) / 1e9) : 0;
}

namespace {

StorageProfile measure(const DlioWorkload& w, const ProbeOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.on_progress) o.on_progress(line);
  };
  StorageProfile p;
  p.target = w.dataset.data_folder;
  p.measured_utc = results::utc_now();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) p.host = host;
  p.format = std::string(pipelines::formats::data_format_name(w.dataset.format));
  p.loader = std::string(loader_name(w.loader));
  p.cores = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  p.memory_bytes = host_memory_gb() * 1073741824.0;

  const std::vector<std::string> all = probe_files(w, o);
  if (all.empty()) throw InputError(fmt::format("{}: no training files to probe", w.file));
  const bool remote = is_url(all.front());
  p.file_bytes = mean_file_bytes(all, o);
  p.request_bytes = std::min(p.file_bytes, static_cast<double>(w.transfer_size.value_or(1 << 20)));
  if (p.request_bytes <= 0) p.request_bytes = 4096;
  // Every k-th file, so that a pass reads at most max_bytes.
  const auto fit = static_cast<size_t>(std::max(
      1.0, std::floor(static_cast<double>(o.max_bytes) / std::max(1.0, p.file_bytes))));
  const std::vector<std::string> files = evenly(all, fit);
  const double files_bytes = p.file_bytes * static_cast<double>(files.size());
  say(fmt::format("probing {}: {} of {} files, {:.1f} MiB each, {:.0f} KiB requests{}",
                  p.target, files.size(), all.size(), p.file_bytes / 1048576.0,
                  p.request_bytes / 1024.0, remote ? "" : " (local)"));

  // More streams than files cannot all read at once.
  const int64_t most = std::min<int64_t>(o.max_streams, static_cast<int64_t>(files.size()));
  auto curve = [&](std::vector<BandwidthPoint>& out, bool cold) {
    int flat = 0;
    for (int64_t k = 1; k <= most && !stopped(o); k *= 2) {
      if (cold) drop_cold(files);
      const double mib = probe_pass_mib_per_s(w, files, k, o.pass_seconds, o);
      if (stopped(o)) break;
      say(fmt::format("  {} {:>3} stream(s): {:.1f} MiB/s", cold ? "cold" : "warm", k, mib));
      if (!(mib > 0)) {
        p.notes.push_back(fmt::format("{} pass of {} stream(s) read nothing in {} s: left out", cold ? "a cold" : "a warm", k, o.pass_seconds));
        continue;
      }
      if (!out.empty()) flat = mib < out.back().mib_per_s * 1.05 ? flat + 1 : 0;
      out.push_back({k, mib});
      if (flat >= 2) break;
    }
  };
  curve(p.cold, true);
  if (remote) {
    p.notes.push_back("remote objects: no page cache on this client, so no warm curve");
  } else if (!o.warm) {
    p.notes.push_back("warm curve not measured (--no-warm)");
  } else if (files_bytes > p.memory_bytes / 2) {
    p.notes.push_back(fmt::format("warm curve not measured: the probe's files ({:.1f} GiB) exceed "
                                  "half of this client's memory",
                                  files_bytes / 1073741824.0));
  } else if (!stopped(o)) {
    // Into the page cache (local files: plain reads).
    std::vector<std::string> paths;
    for (const std::string& f : files)
      paths.push_back(f.starts_with("file://") ? f.substr(7) : f);
    (void)measure_storage_mib_per_s(paths, 8, false, o.stop);
    curve(p.warm, false);
  }

  // Time to first byte: open + 4 KiB, one stream, cold.
  if (!stopped(o)) {
    const std::vector<std::string> heads = evenly(all, 64);
    drop_cold(heads);
    const int64_t t0 = trace::now_ns();
    size_t n = 0;
    for (; n < heads.size() && !stopped(o); ++n)
      (void)pipelines::read_whole_file(heads[n], {.block_bytes = 4096, .storage = o.storage, .max_bytes = 4096});
    if (n > 0) p.first_byte_ms = static_cast<double>(trace::now_ns() - t0) / 1e6 / static_cast<double>(n);
    // Small requests per second: 4 KiB heads on 16 streams for at most a second.
    std::atomic<int64_t> requests{0};
    std::atomic<size_t> next{0};
    std::atomic<bool> done{false};
    std::atomic<bool> failed{false};
    drop_cold(heads);
    const int64_t r0 = trace::now_ns();
    {
      std::vector<std::jthread> workers;
      for (int i = 0; i < 16; ++i) {
        workers.emplace_back([&] {
          try {
            while (!done.load() && !stopped(o) && trace::now_ns() - r0 < 1'000'000'000) {
              (void)pipelines::read_whole_file(heads[next++ % heads.size()],
                                               {.block_bytes = 4096, .storage = o.storage, .max_bytes = 4096});
              ++requests;
            }
          } catch (...) {
            failed = true;
            done = true;
          }
        });
      }
    }
    if (failed) p.notes.push_back("a small read failed: requests_per_s counts those before it");
    const int64_t dt = trace::now_ns() - r0;
    if (dt > 0) p.requests_per_s = static_cast<double>(requests.load()) / (static_cast<double>(dt) / 1e9);
    say(fmt::format("  first byte {:.3f} ms, {:.0f} requests/s (4 KiB, 16 streams)", p.first_byte_ms,
                    p.requests_per_s));
  }

  // This client's CPU per sample for the workload's format and loader: enough files for 256
  // samples (at most 256 MiB and 64 files; one at least).
  if (!stopped(o)) {
    const auto per_file = std::max<int64_t>(1, w.dataset.num_samples_per_file);
    size_t count = static_cast<size_t>(std::clamp<int64_t>((256 + per_file - 1) / per_file, 1, 64));
    count = std::min(count, static_cast<size_t>(std::max(1.0, std::floor(268435456.0 / std::max(1.0, p.file_bytes)))));
    const std::vector<std::string> some(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(count, all.size())));
    p.cpu_us_per_sample = loader_cpu_us_per_sample(w, some, o);
    say(fmt::format("  loader CPU {:.1f} us per sample ({} file(s), {} cores, {:.1f} GiB memory)",
                    p.cpu_us_per_sample, some.size(), p.cores, p.memory_bytes / 1073741824.0));
  }
  if (stopped(o)) {
    p.complete = false;
    p.notes.push_back("interrupted: the probe's later measurements are missing");
  } else if (p.cold.empty()) {
    throw InputError(fmt::format("{}: the probe read nothing from {} in passes of {} s", w.file,
                                 w.dataset.data_folder, o.pass_seconds));
  }
  return p;
}

}  // namespace

StorageProfile probe_storage(const DlioWorkload& w, const ProbeOptions& o) {
  try {
    return measure(w, o);
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // A file that cannot be read in the middle of the probe: the data is not what the workload
    // says (a smaller --scale generated, a server gone), bad input as a missing folder is.
    throw InputError(fmt::format("{}: the probe could not read the data folder {}: {}", w.file,
                                 w.dataset.data_folder, e.what()));
  }
}

}  // namespace pipeprof::harness::workload
