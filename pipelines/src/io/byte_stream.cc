#include "io/byte_stream.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines::io {
namespace {

size_t aligned_size(size_t bytes, bool direct) {
  bytes = std::max<size_t>(bytes, 1);
  if (!direct) return bytes;
  return (bytes + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
}

}  // namespace

// Read buffers that views (read_shared) may keep alive: when the last view of one goes, it comes
// back here (up to kKeep of them) instead of to the allocator, so steady reading reuses memory
// rather than mapping and unmapping it for every buffer. Each buffer's deleter holds the pool, so
// the pool lives until its last buffer is returned.
class ChunkPool : public std::enable_shared_from_this<ChunkPool> {
 public:
  explicit ChunkPool(size_t chunk_size) : chunk_size_(chunk_size) {}
  ~ChunkPool() {
    for (std::byte* p : free_)
      AlignedBuffer::Free{}(p);
  }
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  std::shared_ptr<std::byte> get() {
    std::byte* p = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        p = free_.back();
        free_.pop_back();
      }
    }
    if (p == nullptr) p = AlignedBuffer(chunk_size_).data.release();
    return {p, [pool = shared_from_this()](std::byte* q) { pool->put(q); }};
  }

 private:
  static constexpr size_t kKeep = 16;
  void put(std::byte* p) {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kKeep) {
        free_.push_back(p);
        return;
      }
    }
    AlignedBuffer::Free{}(p);
  }

  size_t chunk_size_;
  std::mutex mu_;
  std::vector<std::byte*> free_;
};

SharedBytes ByteStream::read_shared(size_t n) {
  std::shared_ptr<std::byte[]> block = std::make_shared_for_overwrite<std::byte[]>(std::max<size_t>(n, 1));
  const size_t got = read(std::span(block.get(), n));
  return {std::shared_ptr<std::byte>(block, block.get()), got};
}

FileStream::FileStream(std::unique_ptr<RandomAccessFile> file, size_t buffer_size,
                       ReadObserver observer)
    : file_(std::move(file)),
      chunk_size_(aligned_size(buffer_size, file_->direct())),
      pool_(std::make_shared<ChunkPool>(chunk_size_)),
      chunk_(pool_->get()),
      observer_(std::move(observer)) {}

size_t FileStream::timed_read(uint64_t offset, std::span<std::byte> out) {
  const int64_t start = trace::ticks();
  const size_t n = file_->read_at(offset, out);
  if (observer_) {
    observer_(ReadEvent{file_->name(), offset, n, start, trace::ticks(), first_read_});
  }
  first_read_ = false;
  return n;
}

void FileStream::fill() {
  if (chunk_.use_count() > 1) chunk_ = pool_->get();  // views hold the old one
  const size_t n = timed_read(file_offset_, std::span(chunk_.get(), chunk_size_));
  pos_ = 0;
  end_ = n;
  file_offset_ += n;
  if (n < chunk_size_) eof_ = true;
}

SharedBytes FileStream::read_shared(size_t n) {
  if (n == 0 || n * 4 < chunk_size_ || n > chunk_size_) return ByteStream::read_shared(n);
  if (end_ - pos_ < n && !eof_ && !file_->direct()) {
    // Move the buffered tail to the start of a buffer and fill the rest: the n bytes become
    // contiguous (a copy of the tail only).
    std::shared_ptr<std::byte> next = chunk_.use_count() > 1 ? pool_->get() : chunk_;
    const size_t tail = end_ - pos_;
    if (tail > 0) std::memmove(next.get(), chunk_.get() + pos_, tail);
    chunk_ = std::move(next);
    pos_ = 0;
    end_ = tail;
    const size_t got = timed_read(file_offset_, std::span(chunk_.get() + tail, chunk_size_ - tail));
    file_offset_ += got;
    end_ += got;
    if (got < chunk_size_ - tail) eof_ = true;
  }
  if (end_ - pos_ < n) return ByteStream::read_shared(n);  // O_DIRECT or the end of the file
  SharedBytes out{std::shared_ptr<std::byte>(chunk_, chunk_.get() + pos_), n};
  pos_ += n;
  return out;
}

size_t FileStream::read(std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size()) {
    if (pos_ < end_) {
      const size_t n = std::min(end_ - pos_, out.size() - done);
      std::memcpy(out.data() + done, chunk_.get() + pos_, n);
      pos_ += n;
      done += n;
      continue;
    }
    if (eof_) break;
    const size_t want = out.size() - done;
    if (!file_->direct() && want >= chunk_size_) {
      // A large read goes straight into the caller's memory (one copy fewer).
      const size_t n = timed_read(file_offset_, out.subspan(done));
      file_offset_ += n;
      done += n;
      if (n < want) eof_ = true;
      continue;
    }
    fill();
  }
  return done;
}

// ---- mapped ----

MappedStream::MappedStream(std::unique_ptr<RandomAccessFile> file,
                           std::shared_ptr<const FileMapping> mapping, size_t window_size,
                           ReadObserver observer)
    : file_(std::move(file)),
      mapping_(std::move(mapping)),
      window_size_(std::max<size_t>(window_size, 1)),
      observer_(std::move(observer)) {}

size_t MappedStream::ensure(size_t n) {
  const uint64_t size = mapping_->size();
  const uint64_t want = pos_ + std::min<uint64_t>(n, size - pos_);
  while (mapped_ < want) {
    const auto window = static_cast<size_t>(std::min<uint64_t>(window_size_, size - mapped_));
    const int64_t start = trace::ticks();
    mapping_->populate(mapped_, window);
    if (observer_) {
      observer_(ReadEvent{file_->name(), mapped_, window, start, trace::ticks(), mapped_ == 0});
    }
    mapped_ += window;
  }
  return static_cast<size_t>(want - pos_);
}

size_t MappedStream::read(std::span<std::byte> out) {
  const size_t n = ensure(out.size());
  if (n > 0) std::memcpy(out.data(), mapping_->data() + pos_, n);
  pos_ += n;
  return n;
}

SharedBytes MappedStream::read_shared(size_t n) {
  n = ensure(n);
  SharedBytes out{std::shared_ptr<std::byte>(mapping_, mapping_->data() + pos_), n};
  pos_ += n;
  return out;
}

// ---- gzip ----

struct GzipStream::State {
  z_stream z{};
  std::vector<std::byte> in = std::vector<std::byte>(64 * 1024);
  uint64_t consumed = 0;  // compressed bytes fed to inflate
  bool input_done = false;
  bool stream_end = false;  // the last member ended and no input follows
  bool started = false;

  // Feeds inflate the next compressed chunk; marks the input done at its end.
  void refill(ByteStream& compressed) {
    const size_t n = compressed.read(in);
    if (n == 0) {
      input_done = true;
    } else {
      z.next_in = reinterpret_cast<Bytef*>(in.data());
      z.avail_in = static_cast<uInt>(n);
    }
  }
};

GzipStream::GzipStream(std::unique_ptr<ByteStream> compressed)
    : compressed_(std::move(compressed)), state_(std::make_unique<State>()) {
  // 16 + MAX_WBITS: a gzip header and trailer (with its CRC-32 and length checked by zlib).
  if (inflateInit2(&state_->z, 16 + MAX_WBITS) != Z_OK) {
    throw IoError(fmt::format("{}: zlib could not be initialised", name()));
  }
}

GzipStream::~GzipStream() {
  inflateEnd(&state_->z);
}

size_t GzipStream::read(std::span<std::byte> out) {
  State& s = *state_;
  size_t done = 0;
  while (done < out.size() && !s.stream_end) {
    if (s.z.avail_in == 0 && !s.input_done) s.refill(*compressed_);
    if (s.z.avail_in == 0 && s.input_done) {
      if (!s.started) {  // an empty file is an empty stream
        s.stream_end = true;
        break;
      }
      throw IoError(fmt::format("{}: gzip stream truncated at compressed byte {}", name(),
                                s.consumed));
    }
    s.started = true;
    const uInt avail_before = s.z.avail_in;
    s.z.next_out = reinterpret_cast<Bytef*>(out.data() + done);
    s.z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - done, 1U << 30));
    const uInt out_before = s.z.avail_out;
    const int rc = inflate(&s.z, Z_NO_FLUSH);
    s.consumed += avail_before - s.z.avail_in;
    done += out_before - s.z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow (concatenated gzip files are one stream).
      if (s.z.avail_in == 0 && !s.input_done) s.refill(*compressed_);
      if (s.z.avail_in == 0) {
        s.stream_end = true;
      } else {
        inflateReset(&s.z);
        s.started = false;
      }
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw IoError(fmt::format("{}: gzip data corrupt at compressed byte {}: {}", name(),
                                s.consumed, s.z.msg != nullptr ? s.z.msg : zError(rc)));
    }
  }
  position_ += done;
  return done;
}

Compression parse_compression(const std::string& name) {
  if (name.empty() || name == "none") return Compression::kNone;
  if (name == "gzip") return Compression::kGzip;
  throw std::invalid_argument("compression must be \"none\" or \"gzip\", got \"" + name + "\"");
}

std::string_view compression_name(Compression c) {
  return c == Compression::kGzip ? "gzip" : "none";
}

std::unique_ptr<ByteStream> open_stream(const std::string& name, Compression compression,
                                        const OpenOptions& options, size_t buffer_size,
                                        ReadObserver observer) {
  auto file = open_file(name, options);
  if (compression == Compression::kNone && options.map) {
    if (auto mapping = file->map()) {
      return std::make_unique<MappedStream>(std::move(file), std::move(mapping), buffer_size,
                                            std::move(observer));
    }
  }
  auto stream = std::make_unique<FileStream>(std::move(file), buffer_size, std::move(observer));
  if (compression == Compression::kNone) return stream;
  return std::make_unique<GzipStream>(std::move(stream));
}

}  // namespace pipeprof::pipelines::io
