#include "padded_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace pipeprof::trace {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

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
