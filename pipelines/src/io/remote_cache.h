// The read-through disk cache's side inside io: opening an http(s) URL goes through the installed
// RemoteCache (pipeprof/pipelines/remote.h) when there is one, straight to the server otherwise.
#pragma once

#include <memory>
#include <string>

#include "io/storage.h"

namespace pipeprof::pipelines {
class RemoteCache;
}

namespace pipeprof::pipelines::io {

// The cache installed by ScopedRemoteCache, or nullptr.
std::shared_ptr<RemoteCache> installed_remote_cache();

// Opens an http(s) URL: from the installed cache (a local file on a hit; fetched whole, kept and
// served from memory on a miss) or from the server (ranged reads).
std::unique_ptr<RandomAccessFile> open_remote(const std::string& url);

}  // namespace pipeprof::pipelines::io
