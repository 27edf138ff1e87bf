#include "padded_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>


#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/huge_pages.h"
#include "text_source.h"

namespace pipeprof::trace {
namespace {

// The most a compressed trace may decompress to in memory: half this machine's memory.
size_t decompressed_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{8} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page) / 2;
}

// All the text of a compressed source.
std::string read_all(TextSource& source, const std::string& name) {
  static const size_t limit = decompressed_limit();
  std::string out;
  size_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (used >= limit) {
        throw TraceFormatError(name, source.file_size(),
                               "decompresses to more than " + std::to_string(limit >> 20) +
                                   " MiB, half this machine's memory");
      }
      out.resize(std::min(limit, std::max(used + (size_t{1} << 20), used * 2)));
    }
    const size_t got = source.read(out.data() + used, out.size() - used);
    if (got == 0) break;
    used += got;
  }
  out.resize(used);
  return out;
}

}  // namespace

void PaddedBuffer::Free::operator()(char* p) const noexcept {
  free_maybe_huge(p, bytes);
}

PaddedBuffer::PaddedBuffer(size_t size) : size_(size) {
  const size_t align = size >= kHugePageBytes ? kHugePageBytes : alignof(std::max_align_t);
  capacity_ = (size + kPadding + align - 1) / align * align;
  char* p = static_cast<char*>(allocate_maybe_huge(capacity_));
  data_ = std::unique_ptr<char[], Free>(p, Free{capacity_});
  std::memset(p + size, 0, capacity_ - size);
}

PaddedBuffer PaddedBuffer::copy_of(std::string_view text) {
  PaddedBuffer b(text.size());
  if (!text.empty()) std::memcpy(b.data_.get(), text.data(), text.size());
  return b;
}

PaddedBuffer PaddedBuffer::load(const std::filesystem::path& path) {
  {
    const std::unique_ptr<TextSource> source = TextSource::open(path);
    if (source->compressed()) return copy_of(read_all(*source, path.string()));
  }
  return read_file(path);
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
