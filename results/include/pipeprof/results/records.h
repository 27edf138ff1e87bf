// The typed records of results.json: what each kind of entry of "experiments" holds beyond the
// experiment's own figures, with to_json and *_from_json. The harness fills these types and writes
// them through to_json; `report` and `compare` read them back through the *_from_json functions
// (results_file.h does it once per file), never by looking for keys. A new kind of result is a
// record here, its schema definition (results/schema/results.schema.json) and a report section.
//
// The JSON names are those results.json has used since schema 3 (a workload's "dlio" object keeps
// DLIO's own key names). A reader throws ResultsError naming the file and the JSON path of the
// first value that is missing or of the wrong type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/results/json_at.h"
#include "pipeprof/results/results_error.h"

namespace pipeprof::results {

// What an entry of "experiments" is (its "kind" since schema 4; files before it are read by what
// their entries hold).
enum class EntryKind {
  kExperiment,    // a pipeline spec's run (the catalog, `pipeprof run`)
  kWorkload,      // a DLIO workload run by pipeprof (`pipeprof workload`, the suite's storage part)
  kPeer,          // a DLIO workload run by another loader (harness/peers/)
  kGrowingCache,  // the sample cache that grows every epoch (EXPERIMENTS.md C3)
  kScaleout,      // a pipeline over 1, 2, 4 ... ranks (EXPERIMENTS.md C4)
  kLoaderWatch,   // a PyTorch training loop and its DataLoader, watched (pipeprof.watch)
};
const char* entry_kind_name(EntryKind kind);
std::optional<EntryKind> entry_kind_of(std::string_view name);
// Workloads, peers and the growing cache are judged on AU and samples/s, not efficiency.
inline bool is_workload_kind(EntryKind kind) {
  return kind == EntryKind::kWorkload || kind == EntryKind::kPeer || kind == EntryKind::kGrowingCache;
}
// Kinds whose repetitions carry AU and samples/s, so `compare` judges them on those.
inline bool judged_on_au(EntryKind kind) {
  return is_workload_kind(kind) || kind == EntryKind::kLoaderWatch;
}


// ---- ranks (mpirun) ------------------------------------------------------------------------

struct RankRow {
  int rank = 0;
  std::string host;
  double samples_per_second = 0;
  double au_percentage = 0;
  std::optional<std::string> error;
  // Experiments: the rank's medians. Workloads: its accelerators and CPU time.
  std::optional<double> median_wall_ms, wait_mean_ms;
  std::optional<int64_t> elements, accelerators;
  std::optional<double> cpu_ms;
  bool interrupted = false;
};

// The `ranks` object: every rank's row, their total and the slowest.
struct RanksSummary {
  std::vector<RankRow> rows;
  int size = 0;
  std::string cluster;              // "Open MPI 4.1.4, 4 ranks"
  double samples_per_second = 0;    // all ranks
  int64_t samples_per_element = 1;  // experiments: the spec's batch size
  int slowest_rank = -1;
  double slowest_behind_mean_percent = 0;
  std::optional<int64_t> clock_error_ns;
};
nlohmann::json to_json(const RanksSummary& s);
// Reads the workload's older name "throughput_samples_per_second" too.
RanksSummary ranks_from_json(const nlohmann::json& j, const JsonAt& at);

// ---- a DLIO workload -------------------------------------------------------------------------

// DLIO's metric block (summary.json's "metric"), under its own key names.
struct DlioFigures {
  std::vector<double> au_percentage;  // per epoch, mean over accelerators
  std::vector<double> throughput;     // per epoch, samples/s of all accelerators
  double au_mean_percentage = 0, au_stdev_percentage = 0;
  double throughput_mean = 0, throughput_stdev = 0;
  double io_mean_mb_per_s = 0, io_stdev_mb_per_s = 0;  // MiB/s, DLIO's "MB"
  bool meets_au = false;
};

nlohmann::json to_json(const DlioFigures& d);

struct AcceleratorFigures {
  int64_t rank = 0;
  double au_percentage = 0;       // mean over epochs
  double samples_per_second = 0;  // mean over epochs
};

struct WaitFigures {
  double mean_ms = 0, p50_ms = 0, p99_ms = 0;
};

// A remote dataset's epochs (pipeprof.remote: copy first, direct or cached) beside their ideal.
struct CacheCounters {
  int64_t hits = 0, misses = 0, bytes_fetched = 0, evictions = 0, damaged = 0, write_failures = 0,
          too_large = 0, preloaded = 0, preload_failures = 0;
};
struct RemoteEpoch {
  int64_t epoch = 0;
  double seconds = 0, ideal_seconds = 0, au_percentage = 0;
  int64_t remote_bytes = 0, requests = 0, retries = 0;
  std::optional<int64_t> cache_hits, cache_misses;  // cached reads
  std::optional<double> cache_hit_ratio;
};
struct RemoteRecord {
  std::string mode;  // copy_first, direct, cached
  bool preload = false;
  // The user's own object store (an S3 dataset: "s3://bucket/folder at <endpoint>"); absent: the
  // run's object server, with the latency and rate below. A store's latency and rate are not
  // known: they are 0, and the ideals count the computation alone.
  std::optional<std::string> store;
  double latency_ms = 0, rate_mib_s_per_request = 0;
  int64_t requests_in_flight = 0, files = 0, dataset_bytes = 0;
  // copy_first
  std::optional<double> copy_seconds, copy_ideal_seconds;
  std::optional<int64_t> copy_bytes, copy_threads;
  // cached
  std::optional<int64_t> cache_budget_bytes;
  std::optional<CacheCounters> cache;
  std::optional<double> time_to_first_step_seconds;
  double time_to_first_step_ideal_seconds = 0;
  std::vector<RemoteEpoch> epochs;
};

nlohmann::json to_json(const RemoteRecord& r);

// --find-max-accelerators: the probes, and (pipeprof's own search) the storage bound measured
// between them.
struct SearchProbe {
  int64_t accelerators = 0;
  double au_percentage = 0;  // the median of its runs
  std::optional<double> samples_per_second;
  bool meets = false;
  // Every run's AU, when the probe lay close to metric.au and was run again (empty: one run).
  std::vector<double> au_runs;
};
struct StorageBound {
  std::vector<double> samples_mib_per_s;  // in the order measured: before, then after each run of a probe
  double mib_per_s = 0;                   // their mean
  bool cold = false;                      // the files dropped from the page cache first
  std::string served;                     // read through the workload's own server: its set-up
                                          // ("http 5 ms, 32 MiB/s"); empty: the files themselves
  double demand_mib_per_s = 0;            // one accelerator's at AU 100%
  double bound_accelerators = 0;          // mib_per_s / demand_mib_per_s
  // The range of the measures (0 without any).
  double lowest() const;
  double highest() const;
};
// `pipeprof predict`'s answer for the same workload on the same storage, from a probe made just
// before the search (the suite's search entries with "predict"): what the search is set beside.
struct PredictionCheck {
  std::string storage;            // the set-up: "local, cold", "page cache", "http 5 ms, 8 MiB/s"
  int64_t predicted = 0;          // the most accelerators predicted to meet metric.au
  std::string binding;            // the resource the prediction names ("" when none binds)
  bool extrapolated = false;      // the prediction needs more streams than the probe measured
  bool capped = false;            // every count up to the search's limit was predicted to meet it
  double profile_mib_per_s = 0;   // the probe's highest bandwidth on the curve the prediction used
  // (predicted - measured) / measured x 100, against the search's maximum; none when the
  // search found none or stopped at its limit. With `capped`, the prediction is the limit and
  // the error at least this.
  std::optional<double> error_percent;
};

struct AcceleratorSearch {
  int64_t max_accelerators = 0;  // the most that met metric.au (0: not even one)
  int64_t limit = 0;             // the most it tried
  std::vector<SearchProbe> probes;
  std::optional<StorageBound> storage;
  std::optional<PredictionCheck> prediction;
  bool at_limit() const { return limit > 0 && max_accelerators >= limit; }
};

nlohmann::json to_json(const AcceleratorSearch& s);

// --stall-analysis (DS-Analyzer's differential method).
struct StallEpochRecord {
  int64_t epoch = 0;
  double synthetic_s = 0, warm_s = 0, cold_s = 0, fetch_stall_s = 0, prep_stall_s = 0;
};
struct StallRecord {
  std::vector<StallEpochRecord> epochs;
  double synthetic_au_percentage = 0, warm_au_percentage = 0, cold_au_percentage = 0;
};

nlohmann::json to_json(const StallRecord& s);

// DLIO's checkpoints (workflow.checkpoint): the checkpoint's shape and size, and every save and
// load with DLIO's figures (rank 0's duration; the checkpoint's GiB over it) and MLPerf Storage's
// (the slowest rank's duration; the bytes of every rank over it).
struct CheckpointOpRecord {
  std::string kind;  // "save" or "load"
  int64_t epoch = 0, step = 0, index = 0;
  int64_t ranks = 0;
  int64_t bytes = 0;            // every rank's
  double rank0_seconds = 0;     // DLIO's duration
  double slowest_seconds = 0;   // MLPerf's duration
  double dlio_gib_per_s = 0;    // checkpoint size / rank0_seconds
  double gib_per_s = 0;         // bytes / 2^30 / slowest_seconds
};
struct CheckpointRecord {
  std::string model;  // "transformer" or the model's type
  int64_t ranks = 0, tensor = 1, pipeline = 1, data = 1, zero_stage = 0;
  std::string mode;           // default or subset
  int64_t parameters = 0;     // transformers: N
  double size_gib = 0;        // DLIO's checkpoint_size_GB (GiB: model + optimizer state)
  int64_t files = 0;          // per checkpoint, every rank
  int64_t bytes = 0;          // per checkpoint, every rank's files
  std::string folder;
  bool fsync = false, direct = false, cold_reads = true;
  std::vector<CheckpointOpRecord> ops;
  // DLIO's summary figures (summary.json's metric), over the saves and loads.
  std::optional<double> save_duration_mean_s, save_duration_stdev_s, save_io_mean_gib_per_s,
      save_io_stdev_gib_per_s;
  std::optional<double> load_duration_mean_s, load_duration_stdev_s, load_io_mean_gib_per_s,
      load_io_stdev_gib_per_s;
  // MLPerf's: the means of the slowest rank's duration and of the throughput over it.
  std::optional<double> save_slowest_mean_s, save_gib_per_s, load_slowest_mean_s, load_gib_per_s;
  // During training: the seconds the accelerators waited for checkpoints (outside AU's window).
  std::optional<double> training_stall_s;
};
nlohmann::json to_json(const CheckpointRecord& c);

// The growing sample cache's epochs.
struct GrowingEpochRecord {
  int64_t epoch = 0, shards = 0, samples = 0, steps = 0, evicted_shards = 0, bytes = 0;
  double seconds = 0, au_percentage = 0, wait_mean_ms = 0, wait_p99_ms = 0;
  double deserialize_mb_per_s_per_thread = 0;
};
struct GrowingCacheRecord {
  int64_t samplers = 0, shard_samples = 0;
  double latency_ms = 0, rate_mib_s_per_request = 0, budget_mib = 0;
  double time_to_first_step_seconds = 0;
  std::vector<GrowingEpochRecord> epochs;
};

nlohmann::json to_json(const GrowingCacheRecord& g);

// A DLIO workload file's run (the `workload` object of kinds workload, peer and growing_cache).
// The run's DLIO figures are there for workloads and peers; the growing cache has its epochs.
struct WorkloadRecord {
  std::string file, name, format;
  std::string loader;               // pytorch, tensorflow ("" for the growing cache)
  std::optional<std::string> peer;  // the loader that ran it when not pipeprof
  int64_t batch_size = 0;
  std::optional<int64_t> read_threads;  // nullopt: autotuned
  nlohmann::json computation_time;      // the step's distribution, as the workload file gives it
  int64_t accelerators = 0, steps_per_epoch = 0;
  std::optional<double> au_threshold, scale;
  std::optional<DlioFigures> dlio;
  std::vector<AcceleratorFigures> per_accelerator;
  std::optional<WaitFigures> wait;
  std::optional<double> barrier_mean_ms;
  std::optional<int64_t> bytes_read;
  std::vector<int64_t> bytes_read_per_epoch;
  std::optional<std::string> accelerator_priority;  // SCHED_FIFO or normal
  std::vector<std::string> notes;
  std::optional<std::string> page_cache;  // the suite: "warm" (read first) or "as found"
  std::optional<RemoteRecord> remote;
  std::optional<RanksSummary> ranks;
  std::optional<AcceleratorSearch> max_accelerators;
  std::optional<StallRecord> stall_analysis;
  std::optional<GrowingCacheRecord> growing_cache;
  std::optional<CheckpointRecord> checkpoint;
};
nlohmann::json to_json(const WorkloadRecord& w);
WorkloadRecord workload_from_json(const nlohmann::json& j, const JsonAt& at);

// ---- a watched PyTorch DataLoader -----------------------------------------------------------

// The `loader_watch` object of kind loader_watch: the loader's settings and trace::analyze's
// LoaderAnalysis figures over the whole watch (its repetitions are the epochs).
struct LoaderWatchRecord {
  int64_t num_workers = 0, prefetch_factor = 0, batch_size = 0;
  bool pin_memory = false, persistent_workers = false;
  std::string device;  // where the step ran ("" when not said)
  int64_t epochs = 0, batches = 0;
  double input_bound_pct = 0, steady_input_bound_pct = 0, first_wait_ms = 0;
  double wait_p50_ms = 0, wait_p99_ms = 0, ready_pct = 0;
  double workers_busy_pct = 0, pin_memory_busy_pct = 0;
  int64_t worker_starts = 0, restarts = 0, dead_workers = 0;
  std::vector<std::pair<std::string, std::string>> suggestions;  // knob, text
  std::string trace;  // the watch's trace, relative to the results file
};
nlohmann::json to_json(const LoaderWatchRecord& w);
LoaderWatchRecord loader_watch_from_json(const nlohmann::json& j, const JsonAt& at);

// ---- scale-out -------------------------------------------------------------------------------

struct ScaleoutPoint {
  int ranks = 0;
  double images_per_second = 0, images_per_second_per_rank = 0;
  std::optional<double> scaling_efficiency;  // images/s at N / (N x images/s at 1 rank)
  std::vector<double> au_per_rank;
  int slowest_rank = -1;
  std::string trace;  // the run's trace, beside its log
};
struct ScaleoutRecord {
  std::vector<ScaleoutPoint> points;
  std::string spec;  // the spec file run (in OUT/scaleout)
};
nlohmann::json to_json(const ScaleoutRecord& s);
ScaleoutRecord scaleout_from_json(const nlohmann::json& j, const JsonAt& at);

}  // namespace pipeprof::results
