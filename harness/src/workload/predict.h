// How many accelerators a storage system can feed on a workload, before buying them
// (`pipeprof predict`): a storage profile (what the storage and this client measured) and a model
// of the workload's loaders over it.
//
// The profile (`StorageProfile`, a JSON file: docs/predict.md) holds the storage's aggregate read
// bandwidth at 1, 2, 4, ... concurrent streams, each stream reading the workload's files front to
// back in the reader's request size (cold: dropped from the page cache first; warm: from it), the
// time to the first byte of an object, small requests per second, and this client's CPU time per
// sample of the workload's loader, its cores and memory.
//
// The model. A simulated accelerator demands d = batch / computation_time samples/s (AU 100%).
// Each of its read_threads reader threads loops over files: reading one costs the storage time of a
// stream among k = N x read_threads streams, t(k) = k x file_bytes / B(k), plus, per sample, the
// client's CPU time and DLIO's preprocess_time. So N accelerators receive at most
//   S(N) = min( N x threads x samples_per_file / (t(k) + samples_per_file x (cpu + preprocess)),
//               clients x cores / cpu )
// samples/s and their AU is min(1, S / (N x d)) (mean over epochs: when a client's share of the
// dataset fits in its memory, epochs after the first read the warm curve). The largest N whose AU
// meets metric.au is the prediction; the term that sets S names the binding resource: storage
// bandwidth (B(k) at its measured plateau), requests in flight x latency (B(k) still rising with
// streams: more read_threads would help), the reader threads (their CPU and preprocess time), the
// client CPU (its cores), or the page cache (warm epochs).
//
// The start. A run's loaders start together, and DLIO's AU leaves out the first step's own time
// but not the barrier after it, where every accelerator waits for the last one's first batch. The
// probe measures that wait at each stream count (BandwidthPoint::start_wait_ms); the model adds
// it to the first epoch's AU window: AU_1 = C / (C / AU + wait), C the window's compute (steps
// less the excluded ones, times computation_time). Short runs (a search's probes) feel it; full
// epochs of a real dataset do not. Where it alone takes AU under metric.au, it is the binding
// resource ("the loaders' start").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {

inline constexpr int kStorageProfileVersion = 1;

struct BandwidthPoint {
  int64_t streams = 0;
  double mib_per_s = 0;
  double cpu_us_per_mib = 0;  // the process's CPU time per MiB in that pass (0: not measured)
  // The pass's loaders started together, as a run's accelerators do: how long each waited, on the
  // mean, from its own first batch to the last loader's (0: one loader, or not measured). DLIO's
  // barrier after the first step costs each accelerator that wait, and its AU counts it.
  double start_wait_ms = 0;
};

// A curve's highest MiB/s (0 when empty).
double peak(const std::vector<BandwidthPoint>& c);
// The process's CPU per MiB at k streams, piecewise linear in log2(streams) between the points
// that have it (below the first and beyond the last, their figure); 0 when none has it.
double cpu_per_mib_at(const std::vector<BandwidthPoint>& c, double k);

struct StorageProfile {
  std::string source;  // where it was read from (for messages); empty when measured here
  std::string target;  // what was measured: the data folder (a path or URL)
  std::string measured_utc;
  std::string host;
  // The workload it was measured for: a profile of one format's files predicts only that format.
  std::string format;
  std::string loader;
  double file_bytes = 0;     // the mean file measured
  double request_bytes = 0;  // bytes per read request
  std::vector<BandwidthPoint> cold, warm;  // ascending streams; warm may be empty
  double first_byte_ms = 0;      // open + first small read of an object, one stream, cold
  double requests_per_s = 0;     // small (4 KiB) reads of objects, 16 streams
  double cpu_us_per_sample = 0;  // what a sample costs the client's cores, warm (the loop's or the loader's)
  // Of that, the process's own CPU time (the loop's cores were not all busy where it fell behind:
  // a cold read's extra work fills the idle ones first); 0: all of cpu_us_per_sample.
  double cpu_busy_us_per_sample = 0;
  int64_t cores = 0;
  double memory_bytes = 0;
  std::vector<std::string> notes;  // what the probe could not measure, and why
  bool complete = true;            // false: the probe was cut short (Ctrl-C): figures are missing
};

// Warnings about using `p` for `w` (a profile cut short, files of another size or another
// loader): one line each, empty when none.
std::vector<std::string> profile_warnings(const StorageProfile& p, const DlioWorkload& w);

nlohmann::ordered_json to_json(const StorageProfile& p);
// Throws InputError naming `source` and the key of a bad or missing value.
StorageProfile storage_profile_from_json(const nlohmann::json& doc, const std::string& source);
StorageProfile read_storage_profile(const std::string& file);
// Exit 2 (InputError) when the profile was measured for another format, naming the file and key.
void check_profile_matches(const StorageProfile& p, const DlioWorkload& w);

// The workload's demand and reading pattern, as the model uses them.
struct WorkloadDemand {
  double sample_bytes = 0;          // mean
  double samples_per_second = 0;    // per accelerator, AU 100%
  double mib_per_second = 0;        // per accelerator, AU 100%
  double file_bytes = 0;
  int64_t samples_per_file = 1;
  double request_bytes = 0;
  int64_t threads = 1;              // read_threads per accelerator
  double preprocess_s = 0;          // per sample
  double dataset_bytes = 0;         // the training files together
  double au = 0.9;                  // metric.au
  int64_t epochs = 1;
  int64_t files = 0;                // dataset.num_files_train
  // The tensorflow loader gives each accelerator its own files, round-robin, while there are as
  // many files as accelerators; beyond that every accelerator reads every file and keeps its
  // share of the records (N times the bytes for the same samples).
  bool files_per_accelerator = false;
  // A run's epochs at N accelerators have steps_at(d, N) steps each: floor(samples / batch / N),
  // at most step_cap (total_training_steps; 0: none). The AU window of an epoch leaves out
  // window_excluded of them (exclude_start_steps + exclude_end_steps). 0 samples: steps unknown
  // (the start's wait is then left out).
  double samples = 0;
  int64_t batch = 1;
  int64_t step_cap = 0;
  int64_t window_excluded = 1;
  double step_s = 0;
};
WorkloadDemand demand_of(const DlioWorkload& w);
int64_t steps_at(const WorkloadDemand& d, int64_t accelerators);

// What-if changes to a profile or the workload's loaders: "bandwidth=x2" (the transfer part of
// every stream's time halved), "bandwidth=5000" (MiB/s: the curve scaled to that plateau),
// "latency_ms=5" (first byte of every request), "cpu_us=40" (per sample), "cores=64",
// "memory_gib=512", "read_threads=8", "clients=4". Throws InputError naming `what` and the key.
struct WhatIf {
  std::string label;  // as given
  std::optional<double> bandwidth_factor, bandwidth_mib_per_s, latency_ms, cpu_us, cores,
      memory_gib, read_threads, clients;
};
WhatIf parse_what_if(const std::string& text, const std::string& what);

struct PredictOptions {
  int64_t clients = 1;
  bool cold = false;  // every epoch cold (the MLPerf rule), whatever fits in memory
  bool warm = false;  // every epoch warm (the dataset already in the page cache); needs a warm curve
  int64_t limit = 1'000'000;  // the most accelerators considered
  // What-ifs: the transfer part of every stream's time divided by this; a request's first byte.
  double bandwidth_factor = 1;
  std::optional<double> latency_ms;
};

struct PredictedPoint {
  int64_t accelerators = 0;
  int64_t streams = 0;
  double au = 0;                    // fraction, mean over epochs
  double samples_per_second = 0;    // what the loaders deliver (all accelerators)
  double storage_mib_per_s = 0;     // B(k) of the curve in use
  std::string limit;                // the binding resource ("" when AU is 100%)
  bool extrapolated = false;        // more streams than the profile measured
};

struct ResourceHeadroom {
  std::string resource;
  double capacity = 0;  // samples/s
  double headroom = 0;  // capacity / what the accelerators take at metric.au
  std::string detail;
};

struct Prediction {
  std::string label;  // the what-if ("" for the profile as it is)
  WorkloadDemand demand;
  bool warm_epochs = false;  // epochs after the first read the page cache
  int64_t max_accelerators = 0;  // the most whose AU meets metric.au (0: not even one)
  PredictedPoint at_max;          // the point at max_accelerators (or at 1 when 0)
  PredictedPoint beyond;          // the first count that misses
  std::string binding;            // what limits the prediction (at `beyond`)
  std::vector<ResourceHeadroom> headroom;  // at max_accelerators
  std::vector<PredictedPoint> curve;       // 1, 2, 4, ... and the points around the maximum
  bool extrapolated = false;               // the maximum needs more streams than measured
  int64_t probed_streams = 0;
  bool capped = false;                     // every count up to PredictOptions::limit met it
  int64_t clients = 1;
};

// The model at one accelerator count.
PredictedPoint predict_at(const StorageProfile& p, const WorkloadDemand& d, int64_t accelerators,
                          const PredictOptions& o);
Prediction predict(const StorageProfile& p, const WorkloadDemand& d, const PredictOptions& o);
// A what-if's changes applied (to copies of the profile, the demand and the options).
void apply_what_if(const WhatIf& change, StorageProfile& p, WorkloadDemand& d, PredictOptions& o);

nlohmann::ordered_json to_json(const Prediction& p);
// The prediction as a terminal table with its binding resource and headroom.
std::string prediction_text(const Prediction& p);
// EXPERIMENTS.md C1's row: format, loader, files x samples, bytes per sample, batch, threads,
// computation time, AU threshold, demand per accelerator.
std::string demand_text(const DlioWorkload& w, const WorkloadDemand& d);

}  // namespace pipeprof::harness::workload
