// Sequential byte streams over a RandomAccessFile: FileStream reads the file in buffer_size chunks
// (aligned chunks into an aligned buffer under O_DIRECT) and reports every read of the file to an
// observer (bytes, time: the sources turn them into statistics and trace spans); MappedStream reads
// it through a mapping; GzipStream inflates a gzip stream (zlib) read from another stream. Record
// readers (formats/) sit on top.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "io/storage.h"

namespace pipeprof::pipelines::io {

// One read from a file, as its observer sees it.
struct ReadEvent {
  const std::string& file;
  uint64_t offset;
  size_t bytes;
  int64_t start_ticks;  // trace::ticks() around the read call
  int64_t end_ticks;
  bool first;  // the file's first read (its end is the time to first byte)
};
using ReadObserver = std::function<void(const ReadEvent&)>;

// Bytes whose memory is shared with whoever else holds it.
struct SharedBytes {
  std::shared_ptr<std::byte> data;
  size_t size = 0;
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to n bytes (fewer only at the end of the stream) into memory the caller shares. This
  // default copies into a fresh allocation; FileStream hands out a view of its read buffer instead
  // when the bytes are a large enough part of it (no copy).
  virtual SharedBytes read_shared(size_t n);
  // Reads up to out.size() bytes; fewer only at the end of the stream (0: the end).
  virtual size_t read(std::span<std::byte> out) = 0;
  // Bytes delivered so far: the offset of the next byte in the (uncompressed) stream.
  virtual uint64_t position() const = 0;
  // The bytes left, when known in advance (an uncompressed file); nullopt otherwise.
  virtual std::optional<uint64_t> remaining() const = 0;
  // The file it reads, for error messages.
  virtual const std::string& name() const = 0;
};

inline constexpr size_t kDefaultBufferSize = 256 * 1024;

class ChunkPool;  // byte_stream.cc: read buffers recycled once their last view goes

class FileStream final : public ByteStream {
 public:
  // `buffer_size` is rounded up to kDirectAlignment when the file is opened with O_DIRECT.
  FileStream(std::unique_ptr<RandomAccessFile> file, size_t buffer_size = kDefaultBufferSize,
             ReadObserver observer = {});

  size_t read(std::span<std::byte> out) override;
  // A view into the read buffer for reads of at least a quarter of it (the buffer then stays alive
  // with the view; the next fill takes a new one), a copy for smaller ones.
  SharedBytes read_shared(size_t n) override;
  uint64_t position() const override { return file_offset_ - (end_ - pos_); }
  std::optional<uint64_t> remaining() const override { return file_->size() - position(); }
  const std::string& name() const override { return file_->name(); }

 private:
  size_t timed_read(uint64_t offset, std::span<std::byte> out);
  void fill();

  std::unique_ptr<RandomAccessFile> file_;
  size_t chunk_size_;
  std::shared_ptr<ChunkPool> pool_;
  std::shared_ptr<std::byte> chunk_;  // the read buffer (aligned); views may share it
  ReadObserver observer_;
  uint64_t file_offset_ = 0;  // next byte to read from the file
  size_t pos_ = 0, end_ = 0;  // buffered bytes: chunk_[pos_, end_)
  bool eof_ = false;
  bool first_read_ = true;
};

// Reads a file through its mapping (RandomAccessFile::map): read_shared hands out views of the
// mapping itself (no copy at all); read copies. Ahead of the bytes it hands out, it maps the file's
// pages window by window (window_size bytes at a time, each reported to the observer as one read),
// so a file that is not cached is read from the device there, and a file that shrank before a
// window is mapped in is an IoError rather than a SIGBUS. It reads the file's size when it was
// opened.
class MappedStream final : public ByteStream {
 public:
  MappedStream(std::unique_ptr<RandomAccessFile> file, std::shared_ptr<const FileMapping> mapping,
               size_t window_size = kDefaultBufferSize, ReadObserver observer = {});

  size_t read(std::span<std::byte> out) override;
  SharedBytes read_shared(size_t n) override;
  uint64_t position() const override { return pos_; }
  std::optional<uint64_t> remaining() const override { return mapping_->size() - pos_; }
  const std::string& name() const override { return file_->name(); }

 private:
  // Maps the file's pages up to at least pos_ + n (whole windows); returns the bytes available.
  size_t ensure(size_t n);

  std::unique_ptr<RandomAccessFile> file_;
  std::shared_ptr<const FileMapping> mapping_;
  size_t window_size_;
  ReadObserver observer_;
  uint64_t pos_ = 0;
  uint64_t mapped_ = 0;  // the file's bytes [0, mapped_) are mapped in
};

// Inflates a gzip stream (several concatenated members are one stream, as gunzip reads them).
// Errors name the file and the compressed byte offset.
class GzipStream final : public ByteStream {
 public:
  explicit GzipStream(std::unique_ptr<ByteStream> compressed);
  ~GzipStream() override;
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  size_t read(std::span<std::byte> out) override;
  uint64_t position() const override { return position_; }
  std::optional<uint64_t> remaining() const override { return std::nullopt; }
  const std::string& name() const override { return compressed_->name(); }

 private:
  struct State;
  std::unique_ptr<ByteStream> compressed_;
  std::unique_ptr<State> state_;
  uint64_t position_ = 0;
};

enum class Compression { kNone, kGzip };
// "none" / "gzip" (and "" for none); throws std::invalid_argument otherwise.
Compression parse_compression(const std::string& name);
std::string_view compression_name(Compression c);

// Opens `name` as a stream of its (uncompressed) bytes. With `map`, an uncompressed file that can
// be mapped is read through its mapping (MappedStream: records are views of the page cache, no
// copy); otherwise, and for O_DIRECT, through read calls of buffer_size bytes (FileStream).
std::unique_ptr<ByteStream> open_stream(const std::string& name, Compression compression,
                                        const OpenOptions& options = {},
                                        size_t buffer_size = kDefaultBufferSize,
                                        ReadObserver observer = {});

}  // namespace pipeprof::pipelines::io
