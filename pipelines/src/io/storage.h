// Where bytes come from: one interface for reading a file's bytes, whatever holds it. A backend
// opens a path or URL and gives the file's size and ranged reads; local files are the first backend
// (buffered reads through the page cache, or O_DIRECT into aligned buffers), and a URL-based one
// (HTTP object storage) slots in behind the same open() by its scheme. Nothing here knows of
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

namespace pipeprof::pipelines::io {

// A failure to open or read: the message names the file (and the byte offset where it applies).
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OpenOptions {
  // Local files: bypass the page cache (O_DIRECT). Reads must then use offsets, lengths and
  // buffers aligned to kDirectAlignment; FileStream does that for its callers.
  bool direct = false;
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
};

// Opens a local path (or a file:// URL). Other schemes name the missing backend in the IoError.
std::unique_ptr<RandomAccessFile> open_file(const std::string& name, const OpenOptions& options = {});

// Writes the file's dirty pages out (fsync) and asks the kernel to drop its cached pages
// (posix_fadvise POSIX_FADV_DONTNEED): the next read comes from the device. Needs no privileges;
// pages mapped by another process may stay. Throws IoError when the file cannot be opened.
void drop_from_page_cache(const std::string& path);

// The paths matching a shell pattern (glob(3): *, ?, [...]), sorted bytewise. A pattern without
// wildcards matches the existing file of that name. Throws IoError on a read error of a folder.
std::vector<std::string> match_files(const std::string& pattern);

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
