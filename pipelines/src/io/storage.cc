#include "io/storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "io/filesystem.h"
#include "pipeprof/pipelines/waits.h"

namespace pipeprof::pipelines::io {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// A file descriptor closed on destruction.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class LocalFile final : public RandomAccessFile {
 public:
  LocalFile(std::string name, const OpenOptions& options)
      : name_(std::move(name)), direct_(options.direct) {
    int flags = O_RDONLY | O_CLOEXEC;
    if (direct_) flags |= O_DIRECT;
    fd_ = ::open(name_.c_str(), flags);
    if (fd_ < 0) {
      const int err = errno;
      if (direct_ && err == EINVAL) {
        throw IoError(fmt::format("{}: the file system does not support O_DIRECT", name_));
      }
      throw IoError(fmt::format("{}: cannot open: {}", name_, errno_text(err)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw IoError(fmt::format("{}: cannot stat: {}", name_, errno_text(err)));
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw IoError(fmt::format("{}: is a directory", name_));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    regular_ = S_ISREG(st.st_mode);
    if (!direct_) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~LocalFile() override { ::close(fd_); }
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  bool direct() const override { return direct_; }

  std::shared_ptr<const FileMapping> map() const override {
    if (direct_ || !regular_ || size_ == 0 || size_ > std::numeric_limits<size_t>::max()) {
      return nullptr;
    }
    const auto bytes = static_cast<size_t>(size_);
    // MAP_NORESERVE: a private writable mapping is otherwise charged in full against the overcommit
    // limit, though only the pages a holder writes to ever take memory of their own.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd_, 0);
    if (p == MAP_FAILED) return nullptr;  // no address space or mappings left: read calls then
    advise_file_mapping(p, bytes);
    return std::make_shared<const FileMapping>(name_, static_cast<std::byte*>(p), bytes);
  }

  size_t read_at(uint64_t offset, std::span<std::byte> out) override {
    if (direct_ && (offset % kDirectAlignment != 0 || out.size() % kDirectAlignment != 0 ||
                    reinterpret_cast<uintptr_t>(out.data()) % kDirectAlignment != 0)) {
      throw IoError(fmt::format("{}: an O_DIRECT read at byte {} of {} bytes is not aligned to {}",
                                name_, offset, out.size(), kDirectAlignment));
    }
    auto what = [&] { return fmt::format("reading {} at byte {}", name_, offset); };
    WaitScope waiting(what);
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                                static_cast<off_t>(offset + done));
      if (n > 0) note_progress();
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: read failed at byte {}: {}", name_, offset + done,
                                  errno_text(errno)));
      }
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
      // O_DIRECT: a short read that is not block-aligned is the end of the file.
      if (direct_ && done % kDirectAlignment != 0) break;
    }
    return done;
  }

 private:
  std::string name_;
  bool direct_;
  bool regular_ = false;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

void advise_file_mapping(void* data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  // Where transparent huge pages are enabled for madvise (or always) and the file system caches
  // large folios, pages this mapping reads from the device come in 2 MiB folios, mapped by one
  // page-table entry each: mapping them (and unmapping them) then costs almost nothing on later
  // reads of the file, through any mapping. Elsewhere it changes nothing.
  (void)::madvise(data, bytes, MADV_HUGEPAGE);
#endif
  // Read front to back: the kernel reads ahead of the pages being mapped in (larger reads kept in
  // flight), as it does for read calls. Measured on cold npz files against fio (docs/storage.md):
  // 0.82-0.91 of fio's bandwidth without it, 0.95-1.03 with it.
  (void)::madvise(data, bytes, MADV_SEQUENTIAL);
}

FileMapping::~FileMapping() {
  ::munmap(data_, size_);
}

void FileMapping::populate(uint64_t offset, size_t bytes) const {
#if defined(MADV_POPULATE_READ)
  if (bytes == 0 || offset >= size_) return;
  bytes = static_cast<size_t>(std::min<uint64_t>(bytes, size_ - offset));
  static const auto kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / kPage * kPage;
  while (::madvise(data_ + begin, offset + bytes - begin, MADV_POPULATE_READ) != 0) {
    const int err = errno;
    if (err == EINTR || err == EAGAIN) continue;
    if (err == EINVAL || err == ENOSYS) return;  // a kernel without it
    throw IoError(
        fmt::format("{}: bytes {} to {} cannot be read: {}", name_, offset, offset + bytes,
                    err == EFAULT ? "the file is shorter than when it was opened, or a read failed"
                                  : errno_text(err)));
  }
  note_progress();  // a window of the file read (the watchdog's sign of life, as a pread's)
#else
  (void)offset;
  (void)bytes;
#endif
}

size_t read_fully(RandomAccessFile& file, uint64_t offset, std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size()) {
    const size_t n = file.read_at(offset + done, out.subspan(done));
    if (n == 0) break;
    done += n;
  }
  return done;
}

std::unique_ptr<RandomAccessFile> open_local(const std::string& path, const OpenOptions& options) {
  return std::make_unique<LocalFile>(path, options);
}

void drop_from_page_cache(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw IoError(fmt::format("{}: cannot open: {}", path, errno_text(errno)));
  // Dirty pages would stay cached: write them out first. sync_file_range writes and waits for the
  // file's dirty pages without fsync's flush of the device's cache, which costs about 100 us even
  // for a file with nothing to write (0.8 s for 8192 clean files here, against 0.03 s).
#if defined(SYNC_FILE_RANGE_WRITE)
  if (::sync_file_range(fd.get(), 0, 0,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER) != 0 &&
      errno != EINVAL && errno != ESPIPE) {
    throw IoError(fmt::format("{}: sync_file_range failed: {}", path, errno_text(errno)));
  }
#else
  if (::fsync(fd.get()) != 0 && errno != EINVAL && errno != EROFS) {  // no write access needed
    throw IoError(fmt::format("{}: fsync failed: {}", path, errno_text(errno)));
  }
#endif
  if (const int err = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED); err != 0) {
    throw IoError(fmt::format("{}: posix_fadvise(DONTNEED) failed: {}", path, errno_text(err)));
  }
}

namespace {

// The folder glob could not read, and why (glob's error callback has no argument of its own).
thread_local std::string t_glob_folder;
thread_local int t_glob_errno = 0;

int note_glob_error(const char* folder, int error) {
  if (t_glob_folder.empty()) {
    t_glob_folder = folder;
    t_glob_errno = error;
  }
  return 1;  // stop (GLOB_ERR does too)
}

}  // namespace

std::vector<std::string> match_local(const std::string& pattern) {
  glob_t g{};
  t_glob_folder.clear();
  t_glob_errno = 0;
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT | GLOB_ERR, note_glob_error, &g);
  std::vector<std::string> out;
  if (rc == 0) {
    out.reserve(g.gl_pathc);
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  if (rc == GLOB_ABORTED) {
    if (t_glob_folder.empty()) throw IoError(fmt::format("{}: a folder could not be read", pattern));
    throw IoError(fmt::format("{}: {} (a folder of the pattern {})", t_glob_folder,
                              std::strerror(t_glob_errno), pattern));
  }
  if (rc == GLOB_NOSPACE) throw IoError(fmt::format("{}: out of memory while matching", pattern));
  std::sort(out.begin(), out.end());  // bytewise, whatever the locale
  return out;
}

AlignedBuffer::AlignedBuffer(size_t bytes) : size(bytes) {
  void* p = nullptr;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kDirectAlignment - 1) / kDirectAlignment *
                         kDirectAlignment;
  if (::posix_memalign(&p, kDirectAlignment, rounded) != 0) throw std::bad_alloc();
  data.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const noexcept {
  std::free(p);  // NOLINT(cppcoreguidelines-no-malloc): posix_memalign's memory
}

}  // namespace pipeprof::pipelines::io
