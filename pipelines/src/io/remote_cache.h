// The storage layer's side of remote reads: a StorageContext's counters, the read policy as HTTP
// options, and opening an http(s) URL through the context's disk cache (pipeprof/pipelines/remote.h)
// when it has one, straight from the server otherwise.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "io/http.h"
#include "io/storage.h"
#include "pipeprof/pipelines/remote.h"

namespace pipeprof::pipelines {

struct StorageContext::Counters {
  io::HttpCounters http;  // the context's own reads (misses through its cache included)
  std::mutex mutex;       // guards cache_base
  RemoteCounters cache_base;  // the cache's preload counters when the context was made or reset
};

}  // namespace pipeprof::pipelines

namespace pipeprof::pipelines::io {

HttpOptions http_options_of(const RemoteReadOptions& read);

// How `storage`'s reads are made and counted (the defaults, uncounted, without one).
HttpAccess access_of(const StorageContext* storage);

// Opens an http(s) URL: from the context's cache (a local file on a hit; fetched whole, kept and
// served from memory on a miss) or from the server (ranged reads, counted in the context).
std::unique_ptr<RandomAccessFile> open_remote(const std::string& url,
                                              const std::shared_ptr<const StorageContext>& storage);

}  // namespace pipeprof::pipelines::io
