// --find-max-accelerators: the search for the most simulated accelerators whose AU meets the
// workload's metric.au (the MLPerf Storage result), its probes and the storage bound measured
// between them, and its record in results.json.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/results/records.h"
#include "workload/dlio_workload.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {

// One run of the workload's epochs at some count of accelerators.
struct ProbeRun {
  double au_percentage = 0;
  double throughput = 0;  // samples/s, all accelerators
  bool measured = true;   // at least one epoch measured (DLIO's meets_au needs one)
  bool interrupted = false;  // stopped by Ctrl-C: its figures are not used
};

struct Probe {
  int64_t accelerators = 0;
  double au_percentage = 0;  // the median of its complete runs (of two: their mean)
  double throughput = 0;     // samples/s, all accelerators: of the same run (of two: the mean)
  std::vector<double> au_runs;  // every complete run's AU, in order (empty: none, or too few samples)
  bool meets = false;
  bool interrupted = false;
};

// A probe whose AU lies within this many points of metric.au (on either side) is run again: one
// noisy epoch on a shared machine would otherwise move the bisection's bound for good. So is one
// at more accelerators than any run before it that does not meet metric.au: its first run is the
// process's first with that many loaders, whose buffers are memory never touched before (on a
// VM, first touches cost several points of AU). 0: every probe runs once.
inline constexpr double kRecheckAuPoints = 2.0;

// The search over counts, given how to measure one (`run`; nullopt: too few samples at that count
// to measure AU, which does not meet it). A probe within `recheck_points` of `threshold_percentage`
// (or, with `recheck_points` > 0, the first run at a new highest count that does not meet it) is
// decided by the median of three runs: the second run is made, and the third only when the
// first two disagree (two that agree decide the median's side whatever the third gives). A run
// that comes back interrupted ends the probe (not met) and the search, and its figures are left
// out. `on_probe` sees each probe once it is decided.
struct SearchSteps {
  std::vector<Probe> probes;
  int64_t max_accelerators = 0;
  bool interrupted = false;
};
SearchSteps search_max_accelerators(int64_t limit, double threshold_percentage,
                                    double recheck_points,
                                    const std::function<std::optional<ProbeRun>(int64_t)>& run,
                                    const std::function<void(const Probe&)>& on_probe);

struct MaxAcceleratorSearch {
  std::vector<Probe> probes;
  int64_t max_accelerators = 0;  // the most that met metric.au (0: not even one)
  // The storage's bandwidth is measured before the search and again after every run of a probe (a shared
  // device's bandwidth moves from minute to minute): the bound uses the mean of those measures,
  // taken over the same minutes as the probes.
  // A workload that serves its own files (pipeprof.remote) is measured through a server of its
  // own settings, with as many streams as the search's limit can open (at most 512); an S3
  // dataset in its bucket.
  std::vector<double> storage_samples;  // MiB/s, in the order measured
  double storage_mib_per_s = 0;         // their mean
  std::string served;                   // the server's set-up ("http 5 ms, 32 MiB/s"); empty: none
  double demand_mib_per_s = 0;  // per accelerator
  double bound = 0;             // storage_mib_per_s / demand_mib_per_s
  bool interrupted = false;
};

// Doubles N from 1 while AU meets the threshold (then tries `limit` itself, when every doubling
// met it), and bisects between the last N that met it and the first that did not. Each probe is
// a full run of the workload's epochs; one within `recheck_points` of metric.au is run again
// (search_max_accelerators).
MaxAcceleratorSearch find_max_accelerators(const DlioWorkload& w, const WorkloadOptions& options,
                                           int64_t limit,
                                           const std::function<void(const Probe&)>& on_probe,
                                           double recheck_points = kRecheckAuPoints);

// A max-accelerator search as results.json holds it (`workload.max_accelerators`): the probes,
// the storage's measures, the demand and the bound. `cold`: the files were dropped before every
// epoch and measure; `limit`: the most it tried.
results::AcceleratorSearch search_record(const MaxAcceleratorSearch& s, bool cold, int64_t limit);

// One decided probe as a progress line: "  24 accelerator(s): AU  93.90%  3935.8 samples/s  ok",
// with every run's AU when it was run again.
std::string probe_text(const Probe& p);

// Where the search's storage bandwidth was measured, as its lines say it: "from a server of the
// workload's settings, http 5 ms, 32 MiB/s", "cold, from the device" or "warm, page cache".
std::string storage_source_text(const MaxAcceleratorSearch& s, bool cold);
// The measured maximum as a share of the storage bound, in % (0 without a bound).
double storage_bound_reached_percent(const MaxAcceleratorSearch& s);

}  // namespace pipeprof::harness::workload
