// A read-only text buffer with the zeroed padding simdjson needs after the end; from 2 MiB on, in
// huge pages (huge_pages.h): on virtual machines, first-touch page faults of 4 KiB pages cost more
// than parsing the text (a 50 MB trace: ~140 ms of faults for a plain copy, ~10 ms with huge
// pages).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>

namespace pipeprof::trace {

class PaddedBuffer {
 public:
  static constexpr size_t kPadding = 64;  // >= SIMDJSON_PADDING

  // A copy of `text`.
  static PaddedBuffer copy_of(std::string_view text);
  // The contents of a file, decompressed when they are gzip (first bytes 1f 8b: PyTorch's
  // tensorboard_trace_handler with use_gzip, HTA's examples) or zstd (28 b5 2f fd), whatever the
  // file's name. Throws std::runtime_error naming the file when it cannot be read, and
  // TraceFormatError (file and byte of the compressed data) when the compressed data is corrupt or
  // truncated or would decompress to more than half this machine's memory.
  static PaddedBuffer load(const std::filesystem::path& path);

  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }  // size() + padding, at least

 private:
  static PaddedBuffer read_file(const std::filesystem::path& path);  // the bytes as they are
  struct Free {
    size_t bytes;  // as allocated (allocate_maybe_huge)
    void operator()(char* p) const noexcept;
  };
  explicit PaddedBuffer(size_t size);
  std::unique_ptr<char[], Free> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace pipeprof::trace
