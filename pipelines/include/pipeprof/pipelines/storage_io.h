// Whole objects written and read through the storage layer, for callers outside the pipelines'
// file sources (a workload's checkpoints). A name is a local path or a URL; its scheme picks the
// file system (the same registry the file sources read through), so a scheme that can write
// (local files today) takes checkpoints as it takes datasets.
//
//   auto f = create_file("/ckpt/global_step10/layer_0-model_00-model_states.pt",
//                        {.direct = true, .fsync = true});
//   f->append(buffer);   // large, aligned buffers: O_DIRECT writes them as they are
//   f->commit();         // durable (fsync when asked), then under its final name
//
// An object is written under a temporary name and appears under its own only at commit(): one
// dropped before (an error, a full disk, Ctrl-C) is removed, so a reader never takes a partial
// object for a complete one (a writer killed outright leaves its temporary file, which
// remove_abandoned_partials clears). Every failure is an IoError naming the object (and the byte
// offset).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/pipelines/errors.h"

namespace pipeprof::pipelines {

class StorageContext;

// The alignment O_DIRECT wants of buffers, offsets and lengths on local files.
inline constexpr size_t kStorageAlignment = 4096;

struct WriteOptions {
  // Local files: bypass the page cache (O_DIRECT). Appends of aligned buffers whose lengths are
  // multiples of kStorageAlignment go straight to the device; the first one that is not (the tail
  // of an object) and everything after it go through the page cache.
  bool direct = false;
  // commit() returns once the object is on the device: the file's data (fdatasync) and its name
  // (the folder's fsync).
  bool fsync = false;
  std::shared_ptr<const StorageContext> storage;  // remote schemes: their policy and counters
};

class WritableFile {
 public:
  // Without commit(): the partial object is removed (nothing reported).
  virtual ~WritableFile() = default;
  // The name the object will have.
  virtual const std::string& name() const = 0;
  // Writes bytes at the end of what was written. Throws IoError naming the object and the offset
  // (a full disk: "No space left on device").
  virtual void append(std::span<const std::byte> bytes) = 0;
  // The bytes appended so far.
  virtual uint64_t size() const = 0;
  // Makes the object complete under its name (replacing one of that name). Throws IoError.
  virtual void commit() = 0;
};

// Creates an object for writing. Local files: the folders the path needs are created. Throws
// IoError naming the object when it cannot be created, or when its scheme has no writable storage.
std::unique_ptr<WritableFile> create_file(const std::string& name, const WriteOptions& options = {});

struct WholeReadOptions {
  size_t block_bytes = size_t{16} << 20;  // bytes per read call (rounded up to the alignment)
  bool direct = false;                    // local files: O_DIRECT
  std::shared_ptr<const StorageContext> storage;
  const std::atomic<bool>* stop = nullptr;  // set: the read ends after the current block
  uint64_t max_bytes = 0;                   // > 0: the read ends after its first max_bytes bytes
};

// Reads an object front to back in block_bytes reads (into one aligned buffer, the bytes
// discarded) and returns how many bytes it read: the object's size unless `stop` was set or
// `max_bytes` was reached. Throws IoError naming the object when it is missing or cannot be read.
uint64_t read_whole_file(const std::string& name, const WholeReadOptions& options = {});

// Removes, under a local folder, the temporary files of writers on this host that are no longer
// running (a writer killed with SIGKILL, or by the OOM killer, cannot remove its own); returns how
// many. Other hosts' files, and live writers', are left alone.
size_t remove_abandoned_partials(const std::string& folder);

// Creates the bucket of an s3:// name (s3://bucket or any object in it), as `storage`'s S3
// settings say; a bucket this account already has is not an error. Throws IoError naming the
// endpoint and the bucket.
void create_bucket(const std::string& name, const std::shared_ptr<const StorageContext>& storage = nullptr);

// Copies an object (any readable name: a local file, http(s)://, s3://) to a new one (a local file
// or s3://) through a buffer of 8 MiB; returns its size. The copy appears under its name only when
// whole. Throws IoError naming the object that failed; when `stop` is set, the copy is dropped and
// an IoError says it was stopped.
uint64_t copy_file(const std::string& from, const std::string& to, const WriteOptions& options = {},
                   const std::atomic<bool>* stop = nullptr);

// The objects directly in a folder of object storage (s3://bucket/prefix), with their sizes,
// sorted by name. Throws IoError naming the folder (a missing bucket, a folder of another scheme).
std::vector<std::pair<std::string, uint64_t>> list_objects(const std::string& folder,
                                                           const StorageContext* storage = nullptr);

// An object's size in bytes. Throws IoError naming it when it is missing.
uint64_t object_size(const std::string& name,
                     const std::shared_ptr<const StorageContext>& storage = nullptr);

}  // namespace pipeprof::pipelines
