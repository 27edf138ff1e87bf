#include "formats/file_out.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "formats/format_error.h"

namespace pipeprof::pipelines::formats {

FileOut::FileOut(const std::string& path, Mode mode) : path_(path) {
  const int flags = mode == Mode::kCreate ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
                                          : O_WRONLY | O_CLOEXEC;
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) throw FormatError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
}

FileOut::~FileOut() {
  if (fd_ >= 0) ::close(fd_);
}

void FileOut::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw FormatError(fmt::format("{}: write failed: {}", path_,
                                    n < 0 ? std::strerror(errno) : "no progress"));
    }
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void FileOut::write_at(uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw FormatError(fmt::format("{}: write failed: {}", path_,
                                    n < 0 ? std::strerror(errno) : "no progress"));
    }
    offset += static_cast<uint64_t>(n);
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void FileOut::close() {
  if (fd_ < 0) return;
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw FormatError(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
}

}  // namespace pipeprof::pipelines::formats
