#include "padded_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include <zlib.h>
#include <zstd.h>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

bool starts_with(const PaddedBuffer& b, std::initializer_list<unsigned char> magic) {
  if (b.size() < magic.size()) return false;
  size_t i = 0;
  for (const unsigned char m : magic)
    if (static_cast<unsigned char>(b.data()[i++]) != m) return false;
  return true;
}

// The most a compressed trace may decompress to: half this machine's memory.
size_t decompressed_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{8} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page) / 2;
}

// Grows `out` for the next piece of output: at least 1 MiB more, doubling, up to the limit.
void grow(std::string& out, size_t used, const std::string& source, uint64_t at) {
  static const size_t limit = decompressed_limit();
  if (used >= limit) {
    throw TraceFormatError(source, at,
                           "decompresses to more than " + std::to_string(limit >> 20) +
                               " MiB, half this machine's memory");
  }
  out.resize(std::min(limit, std::max(used + (size_t{1} << 20), used * 2)));
}

// gzip, every member of it (a concatenation of gzip files is one).
std::string gunzip(const PaddedBuffer& in, const std::string& source) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::string out;
  size_t used = 0;
  grow(out, 0, source, 0);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t left = in.size();
  while (true) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    z.avail_in = chunk;
    if (used == out.size()) grow(out, used, source, z.total_in);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, 1u << 30));
    const uInt out_before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    used += out_before - z.avail_out;
    left -= chunk - z.avail_in;
    if (rc == Z_STREAM_END) {
      // Another member follows, or trailing zeros (some writers pad), or the end.
      const auto* rest = reinterpret_cast<const unsigned char*>(z.next_in);
      if (left >= 2 && rest[0] == 0x1f && rest[1] == 0x8b) {
        inflateReset(&z);
        continue;
      }
      size_t zeros = 0;
      while (zeros < left && rest[zeros] == 0)
        ++zeros;
      if (zeros != left)
        throw TraceFormatError(source, in.size() - left, "data after the end of the gzip stream");
      break;
    }
    if (rc == Z_BUF_ERROR && left == 0)
      throw TraceFormatError(source, in.size(), "truncated gzip data (the file ends inside the stream)");
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw TraceFormatError(source, in.size() - left,
                             std::string("corrupt gzip data: ") + (z.msg != nullptr ? z.msg : "inflate failed"));
    }
  }
  out.resize(used);
  return out;
}

std::string unzstd(const PaddedBuffer& in, const std::string& source) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (ctx == nullptr) throw std::bad_alloc();
  struct Free {
    ZSTD_DCtx* c;
    ~Free() { ZSTD_freeDCtx(c); }
  } free_ctx{ctx};
  std::string out;
  size_t used = 0;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t hint = 1;
  while (input.pos < input.size) {
    if (used == out.size()) grow(out, used, source, input.pos);
    ZSTD_outBuffer output{out.data() + used, out.size() - used, 0};
    hint = ZSTD_decompressStream(ctx, &output, &input);
    used += output.pos;
    if (ZSTD_isError(hint)) {
      throw TraceFormatError(source, input.pos,
                             std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint));
    }
  }
  // Flush what the decoder still holds.
  while (hint != 0) {
    if (used == out.size()) grow(out, used, source, input.pos);
    ZSTD_outBuffer output{out.data() + used, out.size() - used, 0};
    const size_t before = used;
    hint = ZSTD_decompressStream(ctx, &output, &input);
    if (ZSTD_isError(hint)) {
      throw TraceFormatError(source, input.pos, std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint));
    }
    used += output.pos;
    if (used == before && hint != 0)
      throw TraceFormatError(source, in.size(), "truncated zstd data (the file ends inside a frame)");
  }
  out.resize(used);
  return out;
}

}  // namespace

void PaddedBuffer::Free::operator()(char* p) const noexcept {
  std::free(p);
}

PaddedBuffer::PaddedBuffer(size_t size) : size_(size) {
  const bool huge = size >= kHugePage;
  const size_t align = huge ? kHugePage : alignof(std::max_align_t);
  capacity_ = (size + kPadding + align - 1) / align * align;
  char* p = static_cast<char*>(std::aligned_alloc(align, capacity_));
  if (p == nullptr) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  if (huge) (void)madvise(p, capacity_, MADV_HUGEPAGE);  // advice only: fine if refused
#endif
  data_.reset(p);
  std::memset(p + size, 0, capacity_ - size);
}

PaddedBuffer PaddedBuffer::copy_of(std::string_view text) {
  PaddedBuffer b(text.size());
  if (!text.empty()) std::memcpy(b.data_.get(), text.data(), text.size());
  return b;
}

PaddedBuffer PaddedBuffer::load(const std::filesystem::path& path) {
  PaddedBuffer raw = read_file(path);
  if (starts_with(raw, {0x1f, 0x8b})) return copy_of(gunzip(raw, path.string()));
  if (starts_with(raw, {0x28, 0xb5, 0x2f, 0xfd})) return copy_of(unzstd(raw, path.string()));
  return raw;
}

PaddedBuffer PaddedBuffer::read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(path.string() + ": cannot be opened: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0 || ::lseek(fd, 0, SEEK_SET) < 0)
    throw std::runtime_error(path.string() + ": cannot be read (not a regular file?)");
  PaddedBuffer b(static_cast<size_t>(end));
  size_t done = 0;
  while (done < b.size_) {
    const ssize_t n = ::read(fd, b.data_.get() + done, b.size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(path.string() + ": read failed: " + std::strerror(errno));
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  if (done < b.size_) {
    b.size_ = done;
    std::memset(b.data_.get() + done, 0, b.capacity_ - done);
  }
  return b;
}

}  // namespace pipeprof::trace
