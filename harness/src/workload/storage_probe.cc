#include "workload/storage_probe.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/results/compare.h"
#include "pipeprof/results/document.h"
#include "pipeprof/trace/clock.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_training.h"
#include "workload/storage_probe_detail.h"
#include "workload/workload_pipeline.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {
namespace probe_detail {

// Objects behind a server (http(s)://, s3://): no page cache of this client to drop or fill.
bool is_url(const std::string& name) {
  return name.find("://") != std::string::npos && !name.starts_with("file://");
}

bool stopped(const ProbeOptions& o) { return o.stop != nullptr && o.stop->load(); }

std::vector<std::string> evenly(const std::vector<std::string>& files, size_t count) {
  if (files.size() <= count) return files;
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i)
    out.push_back(files[i * files.size() / count]);
  return out;
}

std::string local_path(const std::string& f) { return f.starts_with("file://") ? f.substr(7) : f; }

void drop_cold(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    if (!is_url(f)) pipelines::drop_from_page_cache(local_path(f));
  }
}

void read_warm(const std::vector<std::string>& files, const ProbeOptions& o) {
  std::vector<std::string> paths;
  for (const std::string& f : files)
    paths.push_back(local_path(f));
  (void)measure_storage_mib_per_s(paths, 8, false, o.stop);
}

// The local files behind a test-bed server into the page cache, where they fit in half of this
// machine's memory: a run's epochs after its first read them from there (every epoch reads every
// file), so the curve measured against a server reading from disk predicted a third fewer
// accelerators than the searches' runs then fed (16-18 against 24-25 for npz_256k over nginx).
void warm_served(const ProbeOptions& o, StorageProfile& p,
                 const std::function<void(const std::string&)>& say) {
  if (o.served_files.empty() || stopped(o)) return;
  double bytes = 0;
  for (const std::string& f : o.served_files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(local_path(f), ec);
    if (!ec) bytes += static_cast<double>(size);
  }
  const double gib = bytes / 1073741824.0;
  if (bytes > p.memory_bytes / 2) {
    p.notes.push_back(fmt::format(
        "the server's files ({:.1f} GiB) exceed half of this machine's memory: read as found "
        "(from disk, mostly), as a run's epochs read them",
        gib));
    return;
  }
  say(fmt::format("reading the server's {} files ({:.1f} GiB) into the page cache first, as a "
                  "run's epochs after its first find them",
                  o.served_files.size(), gib));
  read_warm(o.served_files, o);
  if (stopped(o)) return;  // Ctrl-C: not all of them were read
  p.notes.push_back(fmt::format(
      "the server's files ({:.1f} GiB) were read into this machine's page cache before the "
      "passes, as a run's epochs after its first find them",
      gib));
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

}  // namespace probe_detail

using namespace probe_detail;  // NOLINT(google-build-using-namespace): the probe's own helpers

namespace {

// probe_pass, or with `start_only` its start alone: each loader ends once every loader has its
// first batch.
PassFigures run_pass(const DlioWorkload& w, const std::vector<std::string>& files, int64_t streams,
                     double seconds, const ProbeOptions& o, bool start_only) {
  PassFigures out;
  if (files.empty() || streams < 1) return out;
  // As accelerators do: loaders of the workload's read_threads each (at most an interleave's 64),
  // each over its shard, as many as the streams take (at most one per file).
  const int64_t per = std::clamp<int64_t>(w.read_threads, 1, 64);
  const int64_t loaders = std::min<int64_t>((streams + per - 1) / per, static_cast<int64_t>(files.size()));
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> last{0};
  // The steady state, as a run's AU window leaves its first step out: from the moment every
  // loader has its first batch (connections opened, read-ahead started), the bytes after it.
  std::atomic<int64_t> running{0};
  // When each loader had its first batch (0: never), for the wait at the barrier after a run's
  // first step.
  std::vector<int64_t> first_batch_ns(static_cast<size_t>(loaders), 0);
  std::mutex start_mutex;
  std::condition_variable start_released;
  // Loaders past the start: their first batch came, or they ended without one (so that the others
  // do not wait for it).
  std::atomic<int64_t> arrived{0};
  auto arrive = [&] {
    if (++arrived == loaders) {
      const std::lock_guard lock(start_mutex);
      start_released.notify_all();
    }
  };
  std::atomic<int64_t> all_running{0};
  std::atomic<int64_t> cpu_from{0};
  std::atomic<int64_t> steady{0};
  // The CPU span's end: the first loader to stop (the deadline, its shard read) takes the
  // process's CPU time and the steady bytes together, before read-ahead in flight and the loaders'
  // teardown add CPU time that no delivered byte pays for.
  std::atomic<bool> span_ended{false};
  std::atomic<int64_t> cpu_to{0};
  std::atomic<int64_t> steady_to{0};
  auto end_span = [&] {
    if (bool expected = false; span_ended.compare_exchange_strong(expected, true)) {
      steady_to = steady.load();
      cpu_to = trace::process_cpu_ns();
    }
  };
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const int64_t t0 = trace::now_ns();
  // A pass lasts `seconds`, or `seconds` of the steady state when the start took longer than the
  // pass (many streams of large files: every loader's first batch is several files a stream),
  // at most four times `seconds` in all.
  const auto span = static_cast<int64_t>(std::min(seconds, 86400.0) * 1e9);
  std::atomic<int64_t> deadline{t0 + span};
  {
    std::vector<std::jthread> consumers;
    consumers.reserve(static_cast<size_t>(loaders));
    for (int64_t l = 0; l < loaders; ++l) {
      const DlioWorkload mine =
          probe_loader(w, files.size(), loaders, streams / loaders + (l < streams % loaders ? 1 : 0));
      consumers.emplace_back([&, mine, l] {
        try {
          auto it = open_probe_loader(mine, files, l, loaders, o);
          const pipelines::NodeStats* output = nullptr;
          for (const pipelines::Node* node : it->model().nodes())
            if (node->parent().empty()) output = &node->stats();
          int64_t now = trace::now_ns();
          bool first = true;
          int64_t held = 0;  // batches read during the start, in the loader's buffer at the release
          while (!stopped(o) && !failed.load() && now < deadline) {
            auto batch = it->next();
            if (!batch) break;
            const int64_t b = batch_bytes(*batch);
            bytes += b;
            now = trace::now_ns();
            if (first) {
              first = false;
              first_batch_ns[static_cast<size_t>(l)] = now;
              if (++running == loaders) {
                cpu_from = trace::process_cpu_ns();
                all_running = now;
                deadline = std::max(deadline.load(), std::min(t0 + 4 * span, now + span));
              }
              arrive();
              // As a run's accelerator at the barrier after its first step: its loader reads
              // ahead into its buffer meanwhile, and stops when that is full.
              {
                std::unique_lock lock(start_mutex);
                while (arrived.load() < loaders && !stopped(o) && !failed.load() && trace::now_ns() < t0 + 4 * span)
                  start_released.wait_for(lock, std::chrono::milliseconds(10));
              }
              if (start_only) break;
              if (output != nullptr) held = output->buffered.load(std::memory_order_relaxed);
              now = trace::now_ns();
            } else if (held > 0) {
              --held;  // read before the steady state began
            } else if (all_running.load() != 0) {
              steady += b;
            }
            for (int64_t seen = last.load(); now > seen && !last.compare_exchange_weak(seen, now);) {
            }
          }
          if (first) arrive();  // ended (its shard read, the deadline, a stop) without a first batch
          end_span();
        } catch (...) {
          const std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      });
    }
  }
  if (error) {
    if (!stopped(o)) std::rethrow_exception(error);
    return out;  // a read that Ctrl-C ended is not an error of the storage: the caller sees the stop
  }
  // Every loader had its first batch: the mean wait for the last one.
  if (loaders > 1 && std::none_of(first_batch_ns.begin(), first_batch_ns.end(), [](int64_t t) { return t == 0; })) {
    const int64_t last_first = *std::max_element(first_batch_ns.begin(), first_batch_ns.end());
    double wait_ns = 0;
    for (const int64_t t : first_batch_ns)
      wait_ns += static_cast<double>(last_first - t);
    out.start_wait_ms = wait_ns / static_cast<double>(loaders) / 1e6;
  }
  out.bytes = bytes.load();
  if (start_only) return out;
  const int64_t t1 = last.load();
  auto mib_per_s = [](int64_t b, int64_t ns) {
    return static_cast<double>(b) / 1048576.0 / (static_cast<double>(ns) / 1e9);
  };
  // The steady state where it lasted a quarter of the pass at least (else the files ran out
  // first, or the start took most of it): the whole pass otherwise.
  const int64_t from = all_running.load();
  const bool steady_span = from > 0 && steady.load() > 0 && 4 * (t1 - from) >= t1 - t0;
  const int64_t cpu = cpu_to.load() - cpu_from.load();
  if (steady_span && cpu_from.load() > 0 && cpu > 0 && steady_to.load() > 0)
    out.cpu_us_per_mib = static_cast<double>(cpu) / 1e3 / (static_cast<double>(steady_to.load()) / 1048576.0);
  if (steady_span) {
    out.mib_per_s = mib_per_s(steady.load(), t1 - from);
  } else if (t1 > t0) {
    out.mib_per_s = mib_per_s(bytes.load(), t1 - t0);
  }
  return out;
}

}  // namespace

bool measure_again(const std::vector<BandwidthPoint>& so_far, double mib_per_s) {
  return !so_far.empty() && mib_per_s > 0 && mib_per_s < 0.95 * so_far.back().mib_per_s;
}

PassFigures median_pass(std::vector<PassFigures> passes) {
  std::sort(passes.begin(), passes.end(), [](const PassFigures& a, const PassFigures& b) {
    return a.mib_per_s < b.mib_per_s;
  });
  return passes[passes.size() / 2];
}

double remote_cpu_us_per_sample(double loader_us, const std::vector<BandwidthPoint>& cold,
                                double streams, double mib_per_sample) {
  const double from_curve = cpu_per_mib_at(cold, streams) * mib_per_sample;
  return from_curve > 0 && (!(loader_us > 0) || from_curve < loader_us) ? from_curve : loader_us;
}

bool curve_ends(const std::vector<BandwidthPoint>& c, int64_t at_least, double stream_mib) {
  const size_t n = c.size();
  if (n < 3 || c[n - 1].streams < at_least) return false;
  if (!(c[n - 1].mib_per_s < c[n - 2].mib_per_s * 1.05 &&
        c[n - 2].mib_per_s < c[n - 3].mib_per_s * 1.05))
    return false;
  return !(stream_mib > 0) || static_cast<double>(c[n - 1].streams) >= peak(c) / stream_mib;
}

PassFigures probe_pass(const DlioWorkload& w, const std::vector<std::string>& files,
                       int64_t streams, double seconds, const ProbeOptions& o) {
  return run_pass(w, files, streams, seconds, o, false);
}

PassFigures probe_start(const DlioWorkload& w, const std::vector<std::string>& files,
                        int64_t streams, const ProbeOptions& o) {
  return run_pass(w, files, streams, o.pass_seconds, o, true);
}

namespace {

// Fills `p` as it measures: what it holds when Ctrl-C ends a read is what was measured before.
void measure(const DlioWorkload& w, const ProbeOptions& o, StorageProfile& p) {
  auto say = [&](const std::string& line) {
    if (o.on_progress) o.on_progress(line);
  };
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
  warm_served(o, p, say);

  // More streams than files cannot all read at once.
  const int64_t most = std::min<int64_t>(o.max_streams, static_cast<int64_t>(files.size()));
  // What a stream of the workload's takes at metric.au (its accelerator's MiB/s over its reader
  // threads; 0 without a step): a curve that levels off goes on until it covers the streams its
  // plateau would feed, so that the prediction reads the storage at the counts it predicts rather
  // than holding the plateau beyond the last pass (a server sharing this machine's cores gives
  // less to more streams than it gave to fewer).
  double stream_mib = 0;
  if (w.computation_time.mean() > 0) {
    const WorkloadDemand d = demand_of(w);
    stream_mib = d.mib_per_second * std::max(0.01, d.au) / static_cast<double>(d.threads);
  }
  // `at_least`: streams the curve reaches even past its plateau (the warm curve goes as far as
  // the cold one did, so that their CPU per MiB compare at the same streams).
  auto curve = [&](std::vector<BandwidthPoint>& out, bool cold, int64_t at_least) {
    for (int64_t k = 1; k <= most && !stopped(o); k *= 2) {
      if (cold) drop_cold(files);
      std::vector<PassFigures> passes{probe_pass(w, files, k, o.pass_seconds, o)};
      std::string again;
      if (measure_again(out, passes.front().mib_per_s)) {
        while (passes.size() < kPassMeasures && !stopped(o)) {
          if (cold) drop_cold(files);
          const PassFigures more = probe_pass(w, files, k, o.pass_seconds, o);
          if (!(more.mib_per_s > 0)) break;  // stopped, or the files read nothing this time
          passes.push_back(more);
        }
        if (passes.size() > 1) {
          const auto [low, high] = std::minmax_element(
              passes.begin(), passes.end(),
              [](const PassFigures& a, const PassFigures& b) { return a.mib_per_s < b.mib_per_s; });
          again = fmt::format(", the median of {} passes: {:.0f}-{:.0f}", passes.size(),
                              low->mib_per_s, high->mib_per_s);
        }
      }
      PassFigures pass = median_pass(passes);
      const double mib = pass.mib_per_s;
      // The start again (kStartMeasures in all, the median; each pass's own counts): one start's
      // wait is set by its slowest loader, and one straggler can make it several times the usual.
      std::vector<double> starts;
      for (const PassFigures& each : passes)
        if (each.start_wait_ms > 0 && starts.size() < kStartMeasures)
          starts.push_back(each.start_wait_ms);
      while (!starts.empty() && starts.size() < kStartMeasures && !stopped(o)) {
        if (cold) drop_cold(files);
        const double wait = probe_start(w, files, k, o).start_wait_ms;
        if (!(wait > 0)) break;
        starts.push_back(wait);
      }
      if (stopped(o)) break;
      std::string start;
      if (!starts.empty()) {
        pass.start_wait_ms = results::median(starts);
        start = fmt::format(", {:.0f} ms waited for the last first batch", pass.start_wait_ms);
      }
      if (starts.size() > 1) {
        const auto [low, high] = std::minmax_element(starts.begin(), starts.end());
        start += fmt::format(": the median of {} starts, {:.0f}-{:.0f}", starts.size(), *low, *high);
      }
      say(fmt::format("  {} {:>3} stream(s): {:.1f} MiB/s{} ({:.0f} us of CPU per MiB{})",
                      cold ? "cold" : "warm", k, mib, again, pass.cpu_us_per_mib, start));
      if (!(mib > 0)) {
        p.notes.push_back(fmt::format("{} pass of {} stream(s) read nothing in {} s: left out", cold ? "a cold" : "a warm", k, o.pass_seconds));
        continue;
      }
      out.push_back({k, mib, pass.cpu_us_per_mib, pass.start_wait_ms});
      if (curve_ends(out, at_least, stream_mib)) break;
    }
  };
  curve(p.cold, true, 0);
  if (remote) {
    p.notes.push_back("remote objects: no page cache on this client, so no warm curve");
  } else if (!o.warm) {
    p.notes.push_back("warm curve not measured (--no-warm)");
  } else if (files_bytes > p.memory_bytes / 2) {
    p.notes.push_back(fmt::format("warm curve not measured: the probe's files ({:.1f} GiB) exceed "
                                  "half of this client's memory",
                                  files_bytes / 1073741824.0));
  } else if (!stopped(o)) {
    read_warm(files, o);
    curve(p.warm, false, p.cold.empty() ? 0 : p.cold.back().streams);
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
    if (failed && !stopped(o))
      p.notes.push_back("a small read failed: requests_per_s counts those before it");
    const int64_t dt = trace::now_ns() - r0;
    if (dt > 0) p.requests_per_s = static_cast<double>(requests.load()) / (static_cast<double>(dt) / 1e9);
    say(fmt::format("  first byte {:.3f} ms, {:.0f} requests/s (4 KiB, 16 streams)", p.first_byte_ms,
                    p.requests_per_s));
  }

  // This client's CPU per sample for the workload's format and loader: enough files for 1024
  // samples (at most 256 MiB and 256 files; two at least, the first batch being left out).
  if (!stopped(o)) {
    const auto per_file = std::max<int64_t>(1, w.dataset.num_samples_per_file);
    size_t count = static_cast<size_t>(std::clamp<int64_t>((1024 + per_file - 1) / per_file, 2, 256));
    count = std::min(count, static_cast<size_t>(std::max(1.0, std::floor(268435456.0 / std::max(1.0, p.file_bytes)))));
    const std::vector<std::string> some(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(count, all.size())));
    const double calibrated = loader_cpu_us_per_sample(w, some, o);
    const double mib_per_sample =
        p.file_bytes / static_cast<double>(std::max<int64_t>(1, w.dataset.num_samples_per_file)) /
        1048576.0;
    const double loader =
        remote
            ? remote_cpu_us_per_sample(
                  calibrated, p.cold,
                  static_cast<double>(std::clamp<int64_t>(w.read_threads, 1, 64)), mib_per_sample)
            : calibrated;
    const bool from_curve = loader != calibrated;
    if (from_curve) {
      p.notes.push_back(fmt::format(
          "client CPU: {:.1f} us per sample from the cold curve at {} streams (one loader's), "
          "where the loader's own calibration measured {:.1f}",
          loader, std::clamp<int64_t>(w.read_threads, 1, 64), calibrated));
    }
    // The training loop reads the workload's own files from the page cache, as many as fit in
    // half the memory. Remote objects keep the loader's figure, or the curve's where lower
    // (remote_cpu_us_per_sample; their loop waits on the server, not on this client's cores).
    LoopFigure loop;
    std::string why = from_curve ? "the cold curve's at one loader's streams: remote objects"
                                 : "the loader's: remote objects";
    const auto in_memory = static_cast<size_t>(
        std::max(0.0, std::floor(p.memory_bytes / 2 / std::max(1.0, p.file_bytes))));
    if (!remote && in_memory < 2) {
      why = "the loader's: two of the workload's files exceed half the memory";
    } else if (!remote && !stopped(o)) {
      loop = loop_cpu_us_per_sample(w, all, in_memory, loader, p.cores, o);
      why = "the loader's: too few samples or no compute for the training loop";
    }
    p.cpu_us_per_sample = loop.us > 0 ? loop.us : loader;
    p.cpu_busy_us_per_sample = loop.us > 0 ? loop.busy_us : 0;
    say(fmt::format("  CPU {:.1f} us per sample: {} ({} cores, {:.1f} GiB memory)", p.cpu_us_per_sample,
                    loop.us > 0
                        ? fmt::format("the training loop's ({} accelerators over {} of the "
                                      "workload's files), two runs after a warm-up (the loader "
                                      "alone: {:.1f} us)",
                                      loop.accelerators, loop.files, loader)
                        : why,
                    p.cores, p.memory_bytes / 1073741824.0));
  }
  if (!stopped(o) && p.cold.empty()) {
    throw InputError(fmt::format("{}: the probe read nothing from {} in passes of {} s", w.file,
                                 w.dataset.data_folder, o.pass_seconds));
  }
}

}  // namespace

StorageProfile probe_storage(const DlioWorkload& w, const ProbeOptions& o) {
  StorageProfile p;
  try {
    measure(w, o, p);
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // A file that cannot be read in the middle of the probe: the data is not what the workload
    // says (a smaller --scale generated, a server gone), bad input as a missing folder is.
    if (!stopped(o)) {
      throw InputError(fmt::format("{}: the probe could not read the data folder {}: {}", w.file,
                                   w.dataset.data_folder, e.what()));
    }
    // After Ctrl-C, a read it ended (the reader says "stopped (interrupted)"): the profile keeps
    // what was measured before, and its notes the error, in case it was something else.
    p.notes.push_back(fmt::format("interrupted while reading: {}", e.what()));
  }
  if (stopped(o)) {
    p.complete = false;
    p.notes.push_back("interrupted: the probe's later measurements are missing");
  }
  return p;
}

}  // namespace pipeprof::harness::workload
