#include "formats/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <new>

#include "formats/format_error.h"
#include "io/filesystem.h"
#include "pipeprof/pipelines/waits.h"
#include "io/storage.h"

namespace pipeprof::pipelines::formats {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* what) {
  throw FormatError(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

// A read's outcome at byte `done` of a file of `size` bytes: the bytes it read (0: interrupted,
// to be tried again). Throws FormatError naming the file on an error, or when the file ends early.
size_t bytes_read(ssize_t n, const std::string& path, uint64_t done, uint64_t size) {
  if (n > 0) {
    note_progress();
    return static_cast<size_t>(n);
  }
  if (n < 0 && errno == EINTR) return 0;
  if (n < 0) fail_errno(path, "cannot read");
  throw FormatError(fmt::format("{}: the file ended at byte {} while it was read ({} bytes when opened)",
                                path, done, size));
}

// A file opened for reading, and its status; closed when it goes.
struct OpenFile {
  explicit OpenFile(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) fail_errno(path, "cannot open");
    if (::fstat(fd, &st) != 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail_errno(path, "cannot stat");
    }
  }
  ~OpenFile() { ::close(fd); }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  int fd;
  struct stat st {};
};

}  // namespace

namespace {

// Page-aligned: what O_DIRECT reads into; the other reads do not mind.
constexpr size_t kBufferAlignment = 4096;

struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{kBufferAlignment}); }
};
using AlignedBytes = std::unique_ptr<std::byte, AlignedFree>;

AlignedBytes allocate_aligned(size_t size) {
  return AlignedBytes(
      static_cast<std::byte*>(::operator new(size, std::align_val_t{kBufferAlignment})));
}

// The whole file with O_DIRECT, in aligned reads of up to 16 MiB into a buffer rounded up to the
// alignment; the last read is short at the end of the file.
std::unique_ptr<const MappedFile> read_direct(const std::string& path, size_t size,
                                              const std::function<MappedFile*(const std::byte*)>& make) {
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } const file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT)};
  if (file.fd < 0 && errno == EINVAL) {
    throw FormatError(fmt::format("{}: the file system does not support O_DIRECT", path));
  }
  if (file.fd < 0) fail_errno(path, "cannot open");
  const size_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  AlignedBytes buffer = allocate_aligned(rounded);
  size_t done = 0;
  while (done < size) {
    const size_t want = std::min<size_t>(rounded - done, size_t{16} << 20);
    const ssize_t n = ::pread(file.fd, buffer.get() + done, want, static_cast<off_t>(done));
    if (n > 0) note_progress();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(path, "cannot read (O_DIRECT)");
    if (n == 0) {
      throw FormatError(fmt::format(
          "{}: the file ended at byte {} while it was read ({} bytes when opened)", path, done, size));
    }
    done += static_cast<size_t>(n);
  }
  std::unique_ptr<const MappedFile> out(make(buffer.get()));
  (void)buffer.release();
  return out;
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, const Storage& storage,
                                                   WholeFile how) {
  if (!io::is_local(path)) {
    // A remote object (through the storage context's cache, if any) is read whole into memory.
    std::unique_ptr<io::RandomAccessFile> remote;
    try {
      remote = io::open_file(path, io::OpenOptions{.storage = storage});
    } catch (const io::IoError& e) {
      throw FormatError(e.what());
    }
    const auto size = static_cast<size_t>(remote->size());
    if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(path, nullptr, 0, false));
    AlignedBytes buffer = allocate_aligned(size);
    size_t done = 0;
    try {
      done = io::read_fully(*remote, 0, std::span<std::byte>(buffer.get(), size));
    } catch (const io::IoError& e) {
      throw FormatError(e.what());
    }
    if (done != size) {
      throw FormatError(fmt::format("{}: the object ended at byte {} of {}", path, done, size));
    }
    std::unique_ptr<const MappedFile> out(new MappedFile(path, buffer.get(), size, false));
    (void)buffer.release();
    return out;
  }
  auto what = [&] { return "reading " + path; };
  WaitScope waiting(what);  // its open, a read or (O_DIRECT) every read
  const OpenFile file(path);
  if (!S_ISREG(file.st.st_mode)) throw FormatError(fmt::format("{}: not a regular file", path));
  const auto size = static_cast<size_t>(file.st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(path, nullptr, 0, false));
  if (how == WholeFile::kDirect) {
    return read_direct(path, size, [&](const std::byte* data) {
      return new MappedFile(path, data, size, false);
    });
  }
  if (size <= kReadBelowBytes || how == WholeFile::kRead) {
    // A small file is read into memory: cheaper than a mapping, whose set-up and tear-down (the
    // process's mapping lock, and an interrupt to every core that ran the process to drop its page
    // table entries) cost more than copying a few hundred KiB from the page cache, and contend
    // when many threads open files at once.
    AlignedBytes buffer = allocate_aligned(size);
    size_t done = 0;
    while (done < size) {
      done += bytes_read(::pread(file.fd, buffer.get() + done, size - done, static_cast<off_t>(done)),
                         path, done, size);
    }
    std::unique_ptr<const MappedFile> out(new MappedFile(path, buffer.get(), size, false));
    (void)buffer.release();  // the MappedFile owns it now
    return out;
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, file.fd, 0);
  if (p == MAP_FAILED) fail_errno(path, "cannot map");
  note_progress();  // opened and mapped (its pages are read as they are touched)
  // Writable but private: a tensor viewing the mapping may be written to (copy on write, page by
  // page); the file never changes.
  io::advise_file_mapping(p, size);
  try {
    return std::unique_ptr<const MappedFile>(
        new MappedFile(path, static_cast<const std::byte*>(p), size, true));
  } catch (...) {
    ::munmap(p, size);
    throw;
  }
}

void MappedFile::prefault(std::span<const std::byte> range) const {
#if defined(MADV_POPULATE_READ)
  if (range.empty() || !mapped_) return;
  static const auto kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(range.data()) & ~(kPage - 1);
  const auto end = reinterpret_cast<uintptr_t>(range.data() + range.size());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a page-aligned address inside the mapping
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
#else
  (void)range;
#endif
}

MappedFile::~MappedFile() {
  if (data_ == nullptr) return;
  if (mapped_) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  } else {
    ::operator delete(const_cast<std::byte*>(data_), std::align_val_t{kBufferAlignment});
  }
}

std::optional<SplitFile> read_split(const std::string& path, uint64_t size, uint64_t at,
                                    std::span<std::byte> into) {
  if (at > size || into.size() > size - at) return std::nullopt;
  auto what = [&] { return "reading " + path; };
  WaitScope waiting(what);
  const OpenFile file(path);
  if (!S_ISREG(file.st.st_mode) || static_cast<uint64_t>(file.st.st_size) != size) return std::nullopt;
  SplitFile out;
  out.head.resize(static_cast<size_t>(at));
  out.tail.resize(static_cast<size_t>(size - at - into.size()));
  std::array<iovec, 3> iov{iovec{out.head.data(), out.head.size()},
                           iovec{into.data(), into.size()},
                           iovec{out.tail.data(), out.tail.size()}};
  // One call for the three pieces; a short read resumes where it stopped.
  size_t first = 0;
  uint64_t done = 0;
  while (done < size) {
    while (iov[first].iov_len == 0)
      ++first;
    const size_t n = bytes_read(::preadv(file.fd, iov.data() + first,
                                         static_cast<int>(iov.size() - first), static_cast<off_t>(done)),
                                path, done, size);
    done += n;
    for (size_t left = n; left > 0;) {
      const size_t step = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      left -= step;
      if (iov[first].iov_len == 0 && first + 1 < iov.size()) ++first;
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  const auto file = MappedFile::open(path);
  return {reinterpret_cast<const char*>(file->bytes().data()), file->size()};
}

void write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw FormatError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw FormatError(fmt::format("{}: write failed", path));
}

}  // namespace pipeprof::pipelines::formats
