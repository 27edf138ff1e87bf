// The test bed's growing sample cache (EXPERIMENTS.md C3): sampler processes that fetch a dataset's
// objects over HTTP and write them as TFRecord shards into a local folder that grows while a
// training job reads it. Its failures are pipelines::RemoteError.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pipeprof/pipelines/remote.h"

namespace pipeprof::testbed {

using pipelines::RemoteError;

struct GrowingCacheOptions {
  std::vector<std::string> urls;  // the samples: one object each, split over the samplers
  std::filesystem::path dir;      // where the shards go (created; emptied first)
  int samplers = 2;               // sampler processes
  int64_t shard_samples = 64;     // samples per shard
  uint64_t budget_bytes = 0;      // enforce_budget() keeps the folder under it; 0: no limit
};

// Sampler processes (forked) fetch the samples over HTTP, each its share of `urls` in order, and
// write them as TFRecord shards of tf.Example records (features "image": the object's bytes,
// "label": its index), each shard under a temporary name (".tmp-...") renamed to
// "shard-<sampler>-<n>.tfrecord" when complete (a sampler's last shard may hold fewer samples).
// A trainer lists "*.tfrecord" at the start of each epoch: the training set grows epoch by epoch.
class GrowingSampleCache {
 public:
  // Starts the samplers. Throws RemoteError when the folder cannot be made.
  explicit GrowingSampleCache(GrowingCacheOptions options);
  // Stops the samplers that still run (SIGTERM, then SIGKILL) and reaps them; removes temporary
  // shards. Complete shards stay (the folder is the caller's).
  ~GrowingSampleCache();
  GrowingSampleCache(const GrowingSampleCache&) = delete;
  GrowingSampleCache& operator=(const GrowingSampleCache&) = delete;

  std::string pattern() const;  // <dir>/*.tfrecord

  struct Shards {
    int64_t shards = 0;
    uint64_t bytes = 0;
  };
  // The complete shards now in the folder.
  Shards complete() const;
  // Removes the oldest complete shards (by name order within a sampler, by mtime across) until
  // the folder is under the budget; returns what was removed. Call it between epochs.
  Shards enforce_budget();
  // True when every sampler has exited; throws RemoteError naming a sampler that failed (its exit
  // status, and the last line it wrote to stderr).
  bool samplers_done();
  // Waits until a complete shard exists, a sampler fails (RemoteError) or `stop` is set; returns
  // whether one exists.
  bool wait_for_first_shard(const std::atomic<bool>* stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pipeprof::testbed
