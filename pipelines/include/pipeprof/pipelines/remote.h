// Remote object storage: datasets behind http:// URLs, a local object server to put them there, and
// a read-through disk cache between the two.
//
// - Any file source takes http(s):// URLs where it takes paths (list_files patterns with wildcards
//   in the last part, tfrecord, npy, npz, jpeg, ...): objects are read with ranged GETs (libcurl),
//   with retries and backoff on failures that may pass (see src/io/http.h).
// - ObjectServer runs a real HTTP server (nginx) on 127.0.0.1 serving a folder, with a time to
//   first byte per request and a bandwidth limit per request: the object store of the remote
//   experiments and tests. It is stopped (and its temporary folder removed) by its destructor.
// - RemoteCache keeps whole objects in a local folder up to a byte budget (least recently used
//   evicted first), checks every cached object's CRC-32C when it is opened, reuses the folder across
//   runs and processes, and preloads a list of objects in the background. Installed with
//   ScopedRemoteCache, it serves every http URL the process's file sources open.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::pipelines {

// A remote object or server that failed (the message names the URL or the server and why).
class RemoteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- The object server (nginx) ----

struct ObjectServerOptions {
  std::filesystem::path root;  // the folder served: <root>/a/b is http://127.0.0.1:<port>/a/b
  // Time to first byte added to every request (nginx's echo module, echo_sleep), rounded to whole
  // milliseconds; 0: none.
  std::chrono::microseconds latency{0};
  // Bytes/s per request (nginx's limit_rate); 0: unlimited.
  int64_t rate_bytes_per_second = 0;
  // Fault injection: requests under these path prefixes get this status (e.g. {"/broken/", 500});
  // a key "=/path" matches that path only.
  std::map<std::string, int> fixed_status;
  int port = 0;  // 0: a free port
  std::string nginx;  // the binary; empty: nginx on PATH, else /usr/sbin/nginx
  int workers = 1;
};

class ObjectServer {
 public:
  // Whether nginx (and, for `latency`, its echo module) is installed; `why` says what is missing.
  static bool available(bool with_latency = false, std::string* why = nullptr);

  // Starts nginx and waits until it answers. Throws RemoteError naming what failed (nginx missing,
  // the root not a folder, nginx's own error log).
  explicit ObjectServer(ObjectServerOptions options);
  // Stops the server and removes its temporary folder.
  ~ObjectServer();
  ObjectServer(const ObjectServer&) = delete;
  ObjectServer& operator=(const ObjectServer&) = delete;

  // "http://127.0.0.1:<port>/" (with the trailing slash).
  std::string url() const;
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // the nginx master process; -1 when stopped
  bool running() const { return pid_ > 0; }
  // Whether nginx still runs (reaps it when it has exited: running() is false then).
  bool alive();

  // Stops the server (SIGTERM: nginx's fast shutdown; SIGKILL after 5 s): open transfers are cut.
  void stop();
  // Kills the server at once (SIGKILL to every nginx process): a crash.
  void kill();
  // Starts it again on the same port with the same options.
  void start();

 private:
  void launch();
  void reap(std::chrono::milliseconds grace);

  class Spawner;
  ObjectServerOptions options_;
  std::unique_ptr<Spawner> spawner_;
  std::filesystem::path dir_;  // config, logs, nginx's temporary files
  int port_ = 0;
  pid_t pid_ = -1;
};

// ---- What the process's HTTP reads did ----

struct RemoteCounters {
  int64_t requests = 0;  // GETs sent, retries included
  int64_t retries = 0;
  int64_t bytes = 0;     // body bytes received from servers
  int64_t failures = 0;  // requests that gave up with an error
};
RemoteCounters remote_counters();
void reset_remote_counters();

struct RemoteReadOptions {
  int max_attempts = 5;  // per request, the first included
  std::chrono::milliseconds backoff_initial{100};  // doubled per retry
  std::chrono::milliseconds backoff_max{2000};
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds stall_timeout{10000};  // no byte for this long: a failed attempt
};
// Sets the retry and timeout policy of the process's HTTP reads.
void set_remote_read_options(const RemoteReadOptions& options);
RemoteReadOptions remote_read_options();

// Copies the object at `url` to the file `to` (written under a temporary name, then renamed);
// returns its size. Throws RemoteError naming the URL or the file.
uint64_t download(const std::string& url, const std::filesystem::path& to);

// ---- The disk cache ----

struct RemoteCacheOptions {
  std::filesystem::path dir;  // created when missing; its objects are reused by later runs
  uint64_t budget_bytes = 0;  // > 0
  int preload_threads = 4;    // requests in flight while preloading
  // Objects are known by their URL's path alone, not its host and port: for a server whose
  // address changes from run to run (an ObjectServer on a free port) whose cache is kept.
  bool key_by_path = false;
};

struct RemoteCacheCounters {
  int64_t hits = 0;              // opens served from the cache folder
  int64_t misses = 0;            // opens that fetched the object
  int64_t bytes_fetched = 0;     // object bytes fetched from the server (preloads included)
  int64_t bytes_from_cache = 0;  // object bytes of the hits
  int64_t evictions = 0;         // objects removed for the budget
  int64_t damaged = 0;           // cached objects whose checksum or size was wrong (re-fetched)
  int64_t write_failures = 0;    // objects that could not be written (ENOSPC, ...): served anyway
  int64_t too_large = 0;         // objects larger than the budget: served, not cached
  int64_t preloaded = 0;         // objects the preloader brought in
  int64_t preload_failures = 0;  // objects the preloader could not fetch (opened later, they fail
                                 // with the reason)
};

class RemoteCache {
 public:
  // Throws RemoteError when the folder cannot be created or read, or the budget is 0.
  explicit RemoteCache(RemoteCacheOptions options);
  ~RemoteCache();  // stops a preload in progress
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // Fetches `urls` into the cache in the background, in order, with preload_threads requests in
  // flight, stopping when the next object no longer fits in the budget. An open of an object being
  // preloaded waits for it rather than fetching it twice.
  void preload(std::vector<std::string> urls);
  void wait_for_preload();

  // Removes every object of the cache from its folder (other files stay).
  void clear();

  RemoteCacheCounters counters() const;
  uint64_t bytes_cached() const;  // this process's view of the folder's objects
  const RemoteCacheOptions& options() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- A local sample cache that grows every epoch (EXPERIMENTS.md C3) ----

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

// While alive, every http(s) URL the process's file sources open goes through `cache`.
class ScopedRemoteCache {
 public:
  explicit ScopedRemoteCache(std::shared_ptr<RemoteCache> cache);
  ~ScopedRemoteCache();
  ScopedRemoteCache(const ScopedRemoteCache&) = delete;
  ScopedRemoteCache& operator=(const ScopedRemoteCache&) = delete;

 private:
  std::shared_ptr<RemoteCache> previous_;
};

}  // namespace pipeprof::pipelines
