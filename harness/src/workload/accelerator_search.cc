#include "workload/accelerator_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "workload/dlio_training.h"
#include "workload/prediction_check.h"
#include "workload/remote_env.h"

namespace pipeprof::harness::workload {

SearchSteps search_max_accelerators(int64_t limit, double threshold_percentage,
                                    double recheck_points,
                                    const std::function<std::optional<ProbeRun>(int64_t)>& run,
                                    const std::function<void(const Probe&)>& on_probe) {
  SearchSteps s;
  int64_t highest = 0;  // the most accelerators run so far
  auto probe = [&](int64_t n) {
    Probe p;
    p.accelerators = n;
    const bool new_high = n > highest;
    std::vector<ProbeRun> runs;  // complete runs only: one that was stopped is left out
    auto decided = [&] {
      if (runs.size() == 1) {
        const double au = runs[0].au_percentage;
        const bool close = std::abs(au - threshold_percentage) <= recheck_points;
        const bool first_at_new_high_failed = new_high && au < threshold_percentage;
        return recheck_points <= 0 || !(close || first_at_new_high_failed);
      }
      const bool first = runs[0].au_percentage >= threshold_percentage;
      const bool second = runs[1].au_percentage >= threshold_percentage;
      return runs.size() == 3 || first == second;
    };
    do {
      const std::optional<ProbeRun> r = run(n);
      if (!r) break;
      if (r->interrupted) {
        p.interrupted = true;
        break;
      }
      runs.push_back(*r);
      highest = std::max(highest, n);
    } while (!decided());
    for (const ProbeRun& r : runs)
      p.au_runs.push_back(r.au_percentage);
    if (!runs.empty()) {
      // The median run; of two runs (which agree), their mean.
      std::vector<ProbeRun> by_au = runs;
      std::sort(by_au.begin(), by_au.end(),
                [](const ProbeRun& a, const ProbeRun& b) { return a.au_percentage < b.au_percentage; });
      if (by_au.size() == 2) {
        p.au_percentage = (by_au[0].au_percentage + by_au[1].au_percentage) / 2;
        p.throughput = (by_au[0].throughput + by_au[1].throughput) / 2;
      } else {
        p.au_percentage = by_au[by_au.size() / 2].au_percentage;
        p.throughput = by_au[by_au.size() / 2].throughput;
      }
    }
    p.meets = !runs.empty() && !p.interrupted && p.au_percentage >= threshold_percentage &&
              std::all_of(runs.begin(), runs.end(), [](const ProbeRun& r) { return r.measured; });
    s.probes.push_back(p);
    if (on_probe) on_probe(p);
    s.interrupted = s.interrupted || p.interrupted;
    return p.meets;
  };
  int64_t lo = 0, hi = 0;
  for (int64_t n = 1; n <= limit && !s.interrupted; n *= 2) {
    if (!probe(n)) {
      hi = n;
      break;
    }
    lo = n;
  }
  // Every doubling met it: the limit itself, then what lies between.
  if (hi == 0 && lo < limit && !s.interrupted) {
    if (probe(limit)) {
      lo = limit;
    } else {
      hi = limit;
    }
  }
  while (hi > lo + 1 && !s.interrupted) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (probe(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  s.max_accelerators = lo;
  return s;
}

MaxAcceleratorSearch find_max_accelerators(const DlioWorkload& w, const WorkloadOptions& options,
                                           int64_t limit,
                                           const std::function<void(const Probe&)>& on_probe,
                                           double recheck_points) {
  MaxAcceleratorSearch s;
  const std::vector<std::string> files = training_files(w);
  // What the runs read: a workload that serves its own files is measured through a server of its
  // settings (the runs start their own), not in its folder.
  const ProbedStorage storage = storage_as_runs_read(w, options.stop);
  s.served = storage.storage;
  // Enough reads in flight to find what the storage gives (the loaders of many accelerators keep
  // many in flight): 16 threads, or more with more cores; through a server, as many streams as
  // the limit's accelerators open (a server with a rate per request gives more to more).
  int64_t streams = std::max<int64_t>(
      {int64_t{16}, w.read_threads, 4 * static_cast<int64_t>(std::thread::hardware_concurrency())});
  if (storage.server) streams = std::clamp<int64_t>(limit * w.read_threads, streams, 512);
  const int threads = static_cast<int>(streams);
  // Each measure reads at most about 2 GiB, files taken evenly across the dataset, so that one
  // between every two probes stays short on a large dataset.
  const std::vector<std::string> local = spread_files(files, int64_t{2} << 30);
  const std::vector<std::string> measured =
      storage.server ? object_urls(*storage.server, w, local) : local;
  auto measure_storage = [&] {
    const double mib_per_s = measure_storage_mib_per_s(measured, threads, options.drop_caches,
                                                       options.stop, storage.context);
    if (options.stop == nullptr || !options.stop->load()) s.storage_samples.push_back(mib_per_s);
  };
  // Warm: a first pass puts the files in the page cache (they may not be there yet; a server's
  // too, read in its folder), the second is measured.
  if (!options.drop_caches && !w.s3) (void)measure_storage_mib_per_s(local, threads, false, options.stop);
  measure_storage();
  s.demand_mib_per_s = demand_mib_per_s(w, mean_sample_bytes(w, files));

  const SearchSteps steps = search_max_accelerators(
      limit, w.au * 100, recheck_points,
      [&](int64_t n) -> std::optional<ProbeRun> {
        if (steps_per_epoch(w, n) < 2) return std::nullopt;  // too few samples to measure AU
        // Stopped (Ctrl-C) since the last run: no run is started to be cut short at once.
        if (options.stop != nullptr && options.stop->load()) return ProbeRun{.interrupted = true};
        WorkloadOptions o = options;
        o.accelerators = n;
        o.trace = false;
        o.checkpoints = false;
        const WorkloadResult r = run_workload(w, o);
        if (!r.run.interrupted) measure_storage();
        return ProbeRun{.au_percentage = r.metrics.au_mean_percentage,
                        .throughput = r.metrics.throughput_mean,
                        .measured = !r.metrics.au_percentage.empty(),
                        .interrupted = r.run.interrupted};
      },
      on_probe);
  s.probes = steps.probes;
  s.interrupted = steps.interrupted;
  s.max_accelerators = steps.max_accelerators;
  // Stopped during the last measure: the search's figures stand, but the caller stops too.
  if (options.stop != nullptr && options.stop->load()) s.interrupted = true;
  if (const auto& v = s.storage_samples; !v.empty())
    s.storage_mib_per_s = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.bound = s.demand_mib_per_s > 0 ? s.storage_mib_per_s / s.demand_mib_per_s : 0;
  return s;
}

results::AcceleratorSearch search_record(const MaxAcceleratorSearch& s, bool cold, int64_t limit) {
  results::AcceleratorSearch out{.max_accelerators = s.max_accelerators, .limit = limit};
  for (const Probe& p : s.probes) {
    out.probes.push_back({.accelerators = p.accelerators,
                          .au_percentage = p.au_percentage,
                          .samples_per_second = p.throughput,
                          .meets = p.meets,
                          .au_runs = p.au_runs.size() > 1 ? p.au_runs : std::vector<double>{}});
  }
  out.storage = results::StorageBound{.samples_mib_per_s = s.storage_samples,
                                      .mib_per_s = s.storage_mib_per_s,
                                      .cold = cold,
                                      .served = s.served,
                                      .demand_mib_per_s = s.demand_mib_per_s,
                                      .bound_accelerators = s.bound};
  return out;
}

std::string probe_text(const Probe& p) {
  std::string runs;
  if (p.au_runs.size() > 1)
    runs = fmt::format("  (run {} times: {:.2f}%; the {})", p.au_runs.size(),
                       fmt::join(p.au_runs, "%, "), p.au_runs.size() == 2 ? "mean" : "median");
  return fmt::format("{:>4} accelerator(s): AU {:6.2f}%  {:10.1f} samples/s  {}{}", p.accelerators,
                     p.au_percentage, p.throughput,
                     p.interrupted ? "interrupted" : p.meets ? "ok" : "below", runs);
}

std::string storage_source_text(const MaxAcceleratorSearch& s, bool cold) {
  if (!s.served.empty()) return "from a server of the workload's settings, " + s.served;
  return cold ? "cold, from the device" : "warm, page cache";
}

double storage_bound_reached_percent(const MaxAcceleratorSearch& s) {
  return s.bound > 0 ? 100.0 * static_cast<double>(s.max_accelerators) / s.bound : 0.0;
}

}  // namespace pipeprof::harness::workload
