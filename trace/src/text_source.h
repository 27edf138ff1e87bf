// The text of a trace file as it is read, piece by piece: the bytes as they are, or decompressed
// when they are gzip (first bytes 1f 8b: PyTorch's tensorboard_trace_handler with use_gzip, HTA's
// examples; every member of a concatenation) or zstd (28 b5 2f fd), whatever the file's name.
// The one home of trace decompression: the streaming reader and PaddedBuffer::load read through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace pipeprof::trace {

class TextSource {
 public:
  // Throws std::runtime_error naming the file when it cannot be opened or read.
  static std::unique_ptr<TextSource> open(const std::filesystem::path& path);
  virtual ~TextSource() = default;

  // Up to n bytes of text into out; 0 at the end. Throws TraceFormatError (the file and the byte
  // of the compressed data) when compressed data is corrupt or truncated.
  virtual size_t read(char* out, size_t n) = 0;
  // Whether the file is compressed (its text's size is not known before it is read).
  virtual bool compressed() const = 0;
  // The file's size in bytes (compressed or not).
  uint64_t file_size() const { return file_size_; }
  // A file that is not compressed: up to n bytes of it from `offset` (fewer only at its end),
  // without moving read()'s place; several threads may read at once. Throws std::runtime_error
  // naming the file when it cannot be read, std::logic_error when it is compressed.
  size_t read_at(uint64_t offset, char* out, size_t n) const;

 protected:
  TextSource(std::string name, int fd, uint64_t file_size);
  // Up to n bytes of the file as it is; 0 at its end.
  size_t read_raw(char* out, size_t n);
  const std::string& name() const { return name_; }

 private:
  struct Fd {
    int fd = -1;
    ~Fd();
  };
  std::string name_;
  Fd fd_;
  uint64_t file_size_ = 0;
};

}  // namespace pipeprof::trace
