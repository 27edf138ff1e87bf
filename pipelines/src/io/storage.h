// Where bytes come from: one interface for reading a file's bytes, whatever holds it. A backend
// opens a path or URL and gives the file's size and ranged reads; local files are the first backend
// (buffered reads through the page cache, O_DIRECT into aligned buffers, or a mapping of the whole
// file), and URL-based ones (HTTP object storage) slot in behind the same open() by their scheme
// (io/filesystem.h, the registry of schemes). Nothing here knows of
// datasets: the file sources in ops/ use it and count what it reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeprof/pipelines/errors.h"

namespace pipeprof::pipelines {
class StorageContext;
}

namespace pipeprof::pipelines::io {

// A failure to open, read or write: the message names the file (and the byte offset where it
// applies). The public type (pipeprof/pipelines/errors.h), so that callers of the public storage
// functions (storage_io.h) catch it.
using IoError = pipelines::IoError;

struct OpenOptions {
  // Local files: bypass the page cache (O_DIRECT). Reads must then use offsets, lengths and
  // buffers aligned to kDirectAlignment; FileStream does that for its callers.
  bool direct = false;
  // open_stream: read an uncompressed local file through a mapping of it (see MappedStream).
  bool map = false;
  // Objects of other file systems: what the running pipeline reads them with (its read policy,
  // cache and counters; remote.h). The open file keeps it. nullptr: the defaults.
  std::shared_ptr<const StorageContext> storage;
};

// Advice for a mapping of a file read front to back: huge pages (MADV_HUGEPAGE) and sequential
// read-ahead (MADV_SEQUENTIAL); see storage.cc. Hints only.
void advise_file_mapping(void* data, size_t bytes);

// A whole file in memory (mmap), shared by whoever holds bytes of it: the mapping goes when its
// last holder does. Private and writable: a holder may write to its bytes (copy on write, page by
// page); the file never changes. The bytes are the file's as it is: a file must be replaced (a new
// file renamed over it), not rewritten in place, while it is read; pages cut off by a truncation
// fault (SIGBUS) when touched.
class FileMapping {
 public:
  FileMapping(std::string name, std::byte* data, size_t size)
      : name_(std::move(name)), data_(data), size_(size) {}
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  // Maps the pages of [offset, offset + bytes) in one call (MADV_POPULATE_READ: from the page
  // cache, or read from the device when not cached). Throws IoError naming the file and offset
  // when they cannot be read then (the file shrank, an I/O error); does nothing where the kernel
  // lacks the call (Linux < 5.14: pages then fault in as they are read).
  void populate(uint64_t offset, size_t bytes) const;

 private:
  std::string name_;
  std::byte* data_;
  size_t size_;
};

inline constexpr size_t kDirectAlignment = 4096;

// One open file: its size and reads of any byte range. Safe to use from one thread at a time.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // The path or URL it was opened with.
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Reads up to out.size() bytes starting at `offset` into `out`; returns the number read, which
  // is smaller only at the end of the file. Throws IoError naming the file and offset.
  virtual size_t read_at(uint64_t offset, std::span<std::byte> out) = 0;
  // True when reads bypass the page cache (and must be aligned).
  virtual bool direct() const { return false; }
  // The whole file mapped into memory, where the backend can (a local regular file read through
  // the page cache, and the mapping succeeds); nullptr otherwise.
  virtual std::shared_ptr<const FileMapping> map() const { return nullptr; }
};

// Reads [offset, offset + out.size()) in as many read_at calls as it takes; returns the bytes read,
// fewer only at the end of the file. Throws IoError as read_at does.
size_t read_fully(RandomAccessFile& file, uint64_t offset, std::span<std::byte> out);

// Opens a path or URL through the file system registered for its scheme (io/filesystem.h: local
// paths and file://, http:// and https://). An unknown scheme names the known ones in the IoError.
std::unique_ptr<RandomAccessFile> open_file(const std::string& name, const OpenOptions& options = {});

// Writes the file's dirty pages out (sync_file_range) and asks the kernel to drop its cached pages
// (posix_fadvise POSIX_FADV_DONTNEED): the next read comes from the device. Needs no privileges;
// pages mapped by another process may stay. Throws IoError when the file cannot be opened.
void drop_from_page_cache(const std::string& path);

// The names matching a pattern, through the file system of its scheme: for local paths a shell
// pattern (glob(3): *, ?, [...]), sorted bytewise; a pattern without wildcards matches the existing
// file of that name. Throws IoError on a read error of a folder.
std::vector<std::string> match_files(const std::string& pattern, const StorageContext* storage = nullptr);

// A buffer aligned for O_DIRECT, not zero-filled.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes);
  std::span<std::byte> span() { return {data.get(), size}; }
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, Free> data;
  size_t size = 0;
};

}  // namespace pipeprof::pipelines::io
