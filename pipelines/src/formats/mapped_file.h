// A whole file mapped read-only (mmap), shared by every tensor viewing it: the mapping is released
// when the last owner goes away. An empty file maps to an empty span.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace pipeprof::pipelines::formats {

class MappedFile {
 public:
  // Throws FormatError naming the file when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  // Maps the pages of `range` (a part of bytes()) in one call (MADV_POPULATE_READ) rather than a
  // page fault per few pages as they are first read; a hint: ignored where the kernel lacks it.
  void prefault(std::span<const std::byte> range) const;

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole file (for formats read through a library); throws FormatError.
std::string read_file(const std::string& path);
// Writes `bytes` to `path` (replacing it); throws FormatError.
void write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace pipeprof::pipelines::formats
