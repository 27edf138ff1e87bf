// A whole file in memory, shared by every tensor viewing it: mapped (mmap, private) when larger than
// kReadBelowBytes, read into an aligned buffer otherwise (see open()); released when the last owner
// goes away. An empty file is an empty span.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipeprof/pipelines/formats.h"

namespace pipeprof::pipelines::formats {

class MappedFile {
 public:
  // Files up to this size are read rather than mapped.
  static constexpr size_t kReadBelowBytes = size_t{1} << 20;

  // Throws FormatError naming the file when it cannot be opened, read or mapped. `how`: see
  // WholeFile (formats.h).
  static std::shared_ptr<const MappedFile> open(const std::string& path, const Storage& storage = nullptr,
                                                WholeFile how = WholeFile::kAuto);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  bool mapped() const { return mapped_; }  // false: read into memory
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  // Maps the pages of `range` (a part of bytes()) in one call (MADV_POPULATE_READ) rather than a
  // page fault per few pages as they are first read; a hint: ignored where the kernel lacks it.
  void prefault(std::span<const std::byte> range) const;

 private:
  MappedFile(std::string path, const std::byte* data, size_t size, bool mapped)
      : path_(std::move(path)), data_(data), size_(size), mapped_(mapped) {}
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

// A local file read in three pieces, its bytes [at, at + into.size()) straight into `into` (a
// batch's row, for a reader that expects a file's values there because the last file of this size
// had them there; the reader then checks the guess), the bytes before into `head`, the rest into
// `tail`. nullopt when the file is not `size` bytes long (nothing is read then). Throws
// FormatError naming the file when it cannot be opened or read.
struct SplitFile {
  std::vector<std::byte> head, tail;
};
std::optional<SplitFile> read_split(const std::string& path, uint64_t size, uint64_t at,
                                    std::span<std::byte> into);

// Reads a whole file (for formats read through a library); throws FormatError.
std::string read_file(const std::string& path);
// Writes `bytes` to `path` (replacing it); throws FormatError.
void write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace pipeprof::pipelines::formats
