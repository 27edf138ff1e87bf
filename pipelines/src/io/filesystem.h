// The storage layer's one entry point: a URL scheme names a file system, and open_file and
// match_files (storage.h) go to the one registered for it.
//
//   (no scheme), file://   local files (storage.cc: page cache, O_DIRECT, mappings)
//   http://, https://      HTTP object storage (http.cc), through the read-through disk cache
//                          (remote_cache.cc) of the running pipeline's StorageContext when it has
//                          one: the cache decorates the scheme's file system, it is not a scheme
//                          of its own
//   s3://                  S3 object storage (s3.cc): signed requests over the HTTP layer, read
//                          through the same disk cache; listings and writes too
//
// A new scheme implements FileSystem (open an object for ranged reads, list what a pattern
// matches, and create objects where it can write) and registers it once, by name, before the file sources read; nothing else in the
// pipelines knows which schemes exist. The built-in schemes are registered on first use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/storage.h"
#include "pipeprof/pipelines/storage_io.h"

namespace pipeprof::pipelines::io {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Opens a path or URL of this scheme. Throws IoError naming it.
  virtual std::unique_ptr<RandomAccessFile> open(const std::string& name,
                                                 const OpenOptions& options) = 0;
  // The names matching a pattern whose last part may hold wildcards (*, ?, [...]), sorted
  // bytewise, listed with `storage`'s read policy and counted there (nullptr: the defaults).
  // Throws IoError naming the pattern.
  virtual std::vector<std::string> match(const std::string& pattern, const StorageContext* storage) = 0;
  // Creates an object for writing (storage_io.h). By default a scheme is read-only: an IoError
  // naming the object.
  virtual std::unique_ptr<WritableFile> create(const std::string& name, const WriteOptions& options);
};

// The scheme of a name: what stands before "://" ("" for a plain path).
std::string scheme_of(const std::string& name);
// Whether a name is a local file (a plain path or a file:// URL), which can be mapped and stat'ed;
// anything else is an object of another file system, read through open_file.
bool is_local(const std::string& name);

// Registers (or replaces) the file system of `scheme` ("" for plain paths). Thread-safe.
void register_filesystem(const std::string& scheme, std::shared_ptr<FileSystem> fs);

// The file system for `name`'s scheme. Throws IoError naming the name and the schemes known.
std::shared_ptr<FileSystem> filesystem_for(const std::string& name);

// The local file system's own entry points (what "" and "file" are registered as).
std::unique_ptr<RandomAccessFile> open_local(const std::string& path, const OpenOptions& options);
std::vector<std::string> match_local(const std::string& pattern);
std::unique_ptr<WritableFile> create_local(const std::string& path, const WriteOptions& options);

}  // namespace pipeprof::pipelines::io
