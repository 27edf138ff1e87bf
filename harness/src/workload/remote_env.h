// A workload whose dataset lives on remote object storage (pipeprof.remote; EXPERIMENTS.md C2): the
// dataset folder is served by nginx on 127.0.0.1 (ObjectServer) with a time to first byte and a
// bandwidth limit per request, or, for a dataset in S3 (storage.storage_type: s3), read from its
// bucket; the loaders read it in one of three ways:
//
//   copy_first  every training file copied to local disk first (copy_threads requests in flight),
//               timed before the first step; then the run reads the copy
//   direct      every epoch reads every file over HTTP (the loaders' threads: one request each)
//   cached      through a read-through disk cache (RemoteCache), optionally preloading the file
//               list in the background from the start
//
// Per epoch it reports what the seed's argument is about: the epoch's time and AU beside its ideal,
// the bytes fetched from the server, the cache's hit ratio, and the time to the first step.
//
// Ideals, with t_f = latency + (file bytes - the first piece) / rate (a file's request: the server
// sends the first piece, 10 ms at the rate, at once), R = accelerators x read
// threads (requests in flight) and C = the workload's compute per epoch (steps x computation_time):
//   a remote epoch: max(C, sum of t_f / R); a local epoch: C
//   copy_first's copy: sum of t_f / copy_threads; cached with preloading: R + copy_threads in flight
//   time to the first step: ceil(files in a batch / read threads) x the mean t_f (copy_first: the
//   copy); a file over 1 MiB costs two requests (two latencies). With read_threads: autotune, R
//   counts read_threads as written. An S3 store's latency and rate are not known: t_f is 0, and the
//   ideals are the computation's.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/pipelines/remote.h"
#include "pipeprof/results/records.h"
#include "pipeprof/testbed/object_server.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_training.h"

namespace pipeprof::harness::workload {

// The object server of a remote workload: its data folder served with pipeprof.remote's latency
// and rate (started; throws pipelines::RemoteError).
std::unique_ptr<testbed::ObjectServer> start_object_server(const DlioWorkload& w);
// The URLs of local files under the workload's data folder on that server.
std::vector<std::string> object_urls(const testbed::ObjectServer& server, const DlioWorkload& w,
                                     const std::vector<std::string>& files);

class RemoteEnvironment {
 public:
  // Starts the server on the workload's data folder (its training files must be there), then,
  // for copy_first, copies them under <scratch>/remote_copy, and for cached, opens the cache
  // (emptied first unless keep_cache) and starts the preload. Throws InputError or
  // pipelines::RemoteError naming what failed.
  // A dataset in S3 (w.s3) is read from its bucket instead of a server of the run's, with the
  // settings of rank `rank` (its endpoint).
  RemoteEnvironment(const DlioWorkload& w, int64_t accelerators, const std::filesystem::path& scratch,
                    const std::atomic<bool>* stop, int64_t rank = 0);
  // Stops the server; removes the copy (and the cache, unless keep_cache).
  ~RemoteEnvironment();
  RemoteEnvironment(const RemoteEnvironment&) = delete;
  RemoteEnvironment& operator=(const RemoteEnvironment&) = delete;

  // What the loaders read: URLs, or the local copy's paths.
  const std::vector<std::string>& files() const { return files_; }
  // What they read them with: the cache (cached), and the counters every figure comes from.
  const std::shared_ptr<pipelines::StorageContext>& storage() const { return storage_; }
  // Samples the counters at the end of an epoch (rank 0's).
  void epoch_end(int64_t epoch);
  // The "remote" object of results.json: settings, copy, time to first step, per-epoch figures
  // beside their ideals, the cache's counters.
  results::RemoteRecord report(const DlioWorkload& w, const TrainRun& run, const RunMetrics& m,
                               int64_t steps) const;
  // A table of the per-epoch figures for the terminal and the report.
  static std::string table(const results::RemoteRecord& remote);

 private:
  struct Sample {
    pipelines::RemoteCounters remote;
    pipelines::RemoteCacheCounters cache;
  };
  Sample sample() const;
  void remove_files();  // the copy, and the run's own cache folder

  const DlioWorkload& w_;
  RemoteSettings settings_;
  int64_t accelerators_;
  std::filesystem::path scratch_;
  std::unique_ptr<testbed::ObjectServer> server_;  // none for a dataset in S3
  std::string store_;                              // that dataset: its folder and endpoint
  std::shared_ptr<pipelines::RemoteCache> cache_;
  std::shared_ptr<pipelines::StorageContext> storage_;
  std::filesystem::path copy_dir_, cache_dir_;
  std::vector<std::string> files_;
  std::vector<uint64_t> file_bytes_;
  int64_t start_ns_ = 0;  // before the copy (the run's start as a user sees it)
  double copy_s_ = 0;
  int64_t copy_bytes_ = 0;
  std::vector<Sample> samples_;  // [0]: at the start; [k]: at the end of epoch k
};

}  // namespace pipeprof::harness::workload
