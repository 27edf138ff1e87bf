// Remote object storage: datasets behind http:// and s3:// URLs, and a read-through disk cache in
// front of them.
//
// - Any file source takes http(s):// URLs where it takes paths (list_files patterns with wildcards
//   in the last part, tfrecord, npy, npz, jpeg, ...): objects are read with ranged GETs (libcurl),
//   with retries and backoff on failures that may pass (see src/io/http.h).
// - The object server (nginx) and the growing cache's samplers, which put datasets behind URLs for
//   the remote experiments and tests, are the test bed's (pipeprof/testbed/).
// - RemoteCache keeps whole objects in a local folder up to a byte budget (least recently used
//   evicted first), checks every cached object's CRC-32C when it is opened, reuses the folder across
//   runs and processes, and preloads a list of objects in the background.
// - StorageContext is what a running pipeline reads remote objects with: the read policy, the
//   cache (when there is one) and the counters of what its reads did. It travels with the
//   pipeline's iterators (Dataset::iterate(IterateOptions{.storage = ...})): two pipelines in one
//   process each use their own. Nothing about remote reads is process-wide.
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

// ---- What HTTP reads did ----

struct RemoteCounters {
  int64_t requests = 0;  // GETs sent, retries included
  int64_t retries = 0;
  int64_t bytes = 0;     // body bytes received from servers
  int64_t failures = 0;  // requests that gave up with an error
};
struct RemoteReadOptions {
  int max_attempts = 5;  // per request, the first included
  std::chrono::milliseconds backoff_initial{100};  // doubled per retry
  std::chrono::milliseconds backoff_max{2000};
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds stall_timeout{10000};  // no byte for this long: a failed attempt
  // A read of at least two parts' worth of one object (a whole npz, a cache's fetch of an object)
  // is split into parts of part_bytes requested at once, parts_in_flight at a time, by the reading
  // thread (as S3 clients do to go beyond one connection's rate); each part is retried on its own.
  // 1: one request per read. Parts are at least 64 KiB.
  int parts_in_flight = 4;
  uint64_t part_bytes = uint64_t{8} << 20;
  // Once this flag is set (Ctrl-C), a request in progress ends within about a second (libcurl looks
  // at it at least once a second while a server is silent) and no attempt follows: the read fails
  // with "stopped". Not owned; null: never.
  const std::atomic<bool>* stop = nullptr;
};
class StorageContext;

// ---- S3 object storage (s3://bucket/key) ----

// Where and as whom s3:// objects are read and written. An empty field takes the AWS environment's
// value (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION), then the default. Requests are signed
// with AWS Signature Version 4; without a key pair they go unsigned (public buckets).
struct S3Options {
  std::string endpoint_url;  // default: https://s3.<region>.amazonaws.com
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string region;  // default: us-east-1
  // Path-style URLs (<endpoint>/<bucket>/<key>) rather than virtual-hosted ones
  // (<bucket>.<endpoint host>/<key>). Unset: path style for a bucket name with dots,
  // virtual-hosted otherwise. An endpoint given by address (127.0.0.1, [::1], localhost) is
  // always path style.
  std::optional<bool> force_path_style;
  // Objects written larger than this go up as a multipart upload in parts of this size
  // (S3: at least 5 MiB but the last).
  uint64_t part_bytes = uint64_t{16} << 20;
};

// Copies the object at `url` to the file `to` (written under a temporary name, then renamed);
// returns its size. The read follows `storage`'s policy and is counted there (the default policy,
// uncounted, without one). Throws RemoteError naming the URL when the object cannot be fetched (the
// server is gone, the object missing), std::runtime_error naming the file when the copy cannot be
// written.
uint64_t download(const std::string& url, const std::filesystem::path& to,
                  const StorageContext* storage = nullptr);

// ---- The disk cache ----

struct RemoteCacheOptions {
  std::filesystem::path dir;  // created when missing; its objects are reused by later runs
  uint64_t budget_bytes = 0;  // > 0
  int preload_threads = 4;    // requests in flight while preloading
  // Objects are known by their URL's path alone, not its host and port: for a server whose
  // address changes from run to run (an ObjectServer on a free port) whose cache is kept.
  bool key_by_path = false;
  // The policy of the cache's preloads; they are counted by the cache (http_counters()) and by
  // every StorageContext that reads through it. A reader's miss follows the reader's context.
  RemoteReadOptions read;
  // Where the preloads of s3:// objects read from.
  S3Options s3;
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
  // Stops a preload in progress (the objects being fetched are finished) and waits for it.
  void stop_preload();

  // Removes every object of the cache from its folder (other files stay).
  void clear();

  RemoteCacheCounters counters() const;
  // The HTTP requests of the cache's preloads.
  RemoteCounters http_counters() const;
  uint64_t bytes_cached() const;  // this process's view of the folder's objects
  const RemoteCacheOptions& options() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// What a running pipeline reads remote objects with. Made by whoever runs the pipeline and handed
// to Dataset::iterate; every iterator and open file of the pipeline holds it.
class StorageContext {
 public:
  // Without a cache, objects are read from their server with ranged GETs; with one, through it.
  // s3:// objects are read and written with `s3`.
  explicit StorageContext(RemoteReadOptions read = {}, std::shared_ptr<RemoteCache> cache = nullptr,
                          S3Options s3 = {});
  ~StorageContext();
  StorageContext(const StorageContext&) = delete;
  StorageContext& operator=(const StorageContext&) = delete;

  const RemoteReadOptions& read_options() const { return read_; }
  const std::shared_ptr<RemoteCache>& cache() const { return cache_; }
  const S3Options& s3() const { return s3_; }

  // The requests of this context's reads since it was made or reset: its own (a miss of its cache
  // included, fetched with its policy) and its cache's preloads (which count in every context that
  // reads through that cache).
  RemoteCounters counters() const;
  void reset_counters();

  struct Counters;  // the storage layer's (atomics)
  Counters& live_counters() const { return *counters_; }

 private:
  RemoteReadOptions read_;
  std::shared_ptr<RemoteCache> cache_;
  S3Options s3_;
  std::unique_ptr<Counters> counters_;
};

}  // namespace pipeprof::pipelines
