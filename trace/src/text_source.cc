#include "text_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

constexpr size_t kInputBytes = size_t{1} << 20;  // compressed bytes read at a time

class PlainSource final : public TextSource {
 public:
  PlainSource(std::string name, int fd, uint64_t size) : TextSource(std::move(name), fd, size) {}
  size_t read(char* out, size_t n) override { return read_raw(out, n); }
  bool compressed() const override { return false; }
};

// Compressed input read a buffer at a time; offsets of errors are the file's bytes.
class CompressedInput {
 public:
  const unsigned char* data() const { return buffer_.get() + pos_; }
  size_t available() const { return size_ - pos_; }
  void consume(size_t n) { pos_ += n; }
  bool file_ended() const { return ended_; }
  uint64_t offset() const { return start_ + pos_; }  // of data() in the file
  // Moves what is left to the front and reads more behind it; false at the file's end.
  template <typename Read>
  bool refill(Read&& read_raw) {
    if (ended_) return false;
    if (!buffer_) buffer_.reset(new unsigned char[kInputBytes]);
    const size_t left = available();
    std::memmove(buffer_.get(), buffer_.get() + pos_, left);
    start_ += pos_;
    pos_ = 0;
    size_ = left;
    const size_t got = read_raw(reinterpret_cast<char*>(buffer_.get()) + left, kInputBytes - left);
    size_ += got;
    if (got == 0) ended_ = true;
    return got > 0;
  }

 private:
  std::unique_ptr<unsigned char[]> buffer_;
  size_t pos_ = 0, size_ = 0;
  uint64_t start_ = 0;
  bool ended_ = false;
};

// gzip, every member of it (a concatenation of gzip files is one), trailing zeros allowed (some
// writers pad).
class GzipSource final : public TextSource {
 public:
  GzipSource(std::string name, int fd, uint64_t size) : TextSource(std::move(name), fd, size) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
  }
  ~GzipSource() override { inflateEnd(&z_); }
  bool compressed() const override { return true; }

  size_t read(char* out, size_t n) override {
    size_t done = 0;
    auto raw = [this](char* p, size_t k) { return read_raw(p, k); };
    while (done < n && !ended_) {
      if (in_.available() == 0) in_.refill(raw);
      z_.next_in = const_cast<Bytef*>(in_.data());
      z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.available(), 1u << 30));
      z_.next_out = reinterpret_cast<Bytef*>(out + done);
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - done, 1u << 30));
      const uInt in_before = z_.avail_in, out_before = z_.avail_out;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      in_.consume(in_before - z_.avail_in);
      done += out_before - z_.avail_out;
      if (rc == Z_STREAM_END) {
        after_member(raw);
        continue;
      }
      if (rc == Z_BUF_ERROR || (rc == Z_OK && in_before == z_.avail_in && out_before == z_.avail_out)) {
        if (in_.available() == 0 && in_.file_ended())
          throw TraceFormatError(name(), file_size(), "truncated gzip data (the file ends inside the stream)");
        continue;  // more input, or more room
      }
      if (rc != Z_OK) {
        throw TraceFormatError(name(), in_.offset(),
                               std::string("corrupt gzip data: ") + (z_.msg != nullptr ? z_.msg : "inflate failed"));
      }
    }
    return done;
  }

 private:
  // A member ended: another follows, or zeros to the end of the file, or the end.
  template <typename Raw>
  void after_member(Raw& raw) {
    if (in_.available() < 2) in_.refill(raw);
    if (in_.available() >= 2 && in_.data()[0] == 0x1f && in_.data()[1] == 0x8b) {
      inflateReset(&z_);
      return;
    }
    while (true) {
      const unsigned char* p = in_.data();
      const size_t k = in_.available();
      const auto* nonzero = std::find_if(p, p + k, [](unsigned char c) { return c != 0; });
      if (nonzero != p + k) {
        throw TraceFormatError(name(), in_.offset() + static_cast<uint64_t>(nonzero - p),
                               "data after the end of the gzip stream");
      }
      in_.consume(k);
      if (!in_.refill(raw)) break;
    }
    ended_ = true;
  }

  z_stream z_{};
  CompressedInput in_;
  bool ended_ = false;
};

class ZstdSource final : public TextSource {
 public:
  ZstdSource(std::string name, int fd, uint64_t size)
      : TextSource(std::move(name), fd, size), ctx_(ZSTD_createDCtx()) {
    if (ctx_ == nullptr) throw std::bad_alloc();
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }
  bool compressed() const override { return true; }

  size_t read(char* out, size_t n) override {
    ZSTD_outBuffer output{out, n, 0};
    auto raw = [this](char* p, size_t k) { return read_raw(p, k); };
    while (output.pos < n && !ended_) {
      if (in_.available() == 0) in_.refill(raw);
      ZSTD_inBuffer input{in_.data(), in_.available(), 0};
      const size_t before = output.pos;
      const size_t hint = ZSTD_decompressStream(ctx_, &output, &input);
      in_.consume(input.pos);
      if (ZSTD_isError(hint)) {
        throw TraceFormatError(name(), in_.offset(), std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint));
      }
      // 0 once a frame is complete (a call that moved nothing asks for the next frame's header).
      if (input.pos > 0 || output.pos > before) hint_ = hint;
      if (in_.available() == 0 && in_.file_ended() && output.pos == before && output.pos < n) {
        // Nothing more comes out of what was read: the end, unless a frame is unfinished.
        if (hint_ != 0)
          throw TraceFormatError(name(), file_size(), "truncated zstd data (the file ends inside a frame)");
        ended_ = true;
      }
    }
    return output.pos;
  }

 private:
  ZSTD_DCtx* ctx_;
  CompressedInput in_;
  size_t hint_ = 0;
  bool ended_ = false;
};

}  // namespace

TextSource::Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

TextSource::TextSource(std::string name, int fd, uint64_t file_size)
    : name_(std::move(name)), file_size_(file_size) {
  fd_.fd = fd;
}

size_t TextSource::read_raw(char* out, size_t n) {
  while (true) {
    const ssize_t got = ::read(fd_.fd, out, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) throw std::runtime_error(name_ + ": read failed: " + std::strerror(errno));
  }
}

size_t TextSource::read_at(uint64_t offset, char* out, size_t n) const {
  if (compressed()) throw std::logic_error(name_ + ": a compressed file is read from its start");
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_.fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(name_ + ": read failed: " + std::strerror(errno));
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

std::unique_ptr<TextSource> TextSource::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot be opened: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": cannot be read (not a regular file?)");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  unsigned char magic[4] = {};
  const ssize_t got = ::pread(fd, magic, sizeof magic, 0);
  if (got < 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(path.string() + ": read failed: " + std::strerror(err));
  }
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b)
    return std::make_unique<GzipSource>(path.string(), fd, size);
  if (got >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
    return std::make_unique<ZstdSource>(path.string(), fd, size);
  return std::make_unique<PlainSource>(path.string(), fd, size);
}

}  // namespace pipeprof::trace
