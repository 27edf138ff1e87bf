#include "formats/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "formats/format_error.h"
#include "io/storage.h"

namespace pipeprof::pipelines::formats {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* what) {
  throw FormatError(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail_errno(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(fmt::format("{}: not a regular file", path));
  }
  const auto size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      errno = err;
      fail_errno(path, "cannot map");
    }
    // Writable but private: a tensor viewing the mapping may be written to (copy on write, page by
    // page); the file never changes.
    data = static_cast<const std::byte*>(p);
    io::advise_file_mapping(p, size);
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

void MappedFile::prefault(std::span<const std::byte> range) const {
#if defined(MADV_POPULATE_READ)
  if (range.empty()) return;
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
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
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
