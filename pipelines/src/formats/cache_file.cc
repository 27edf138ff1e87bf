#include "formats/cache_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "formats/format_error.h"
#include "pipeprof/pipelines/serialization.h"

namespace pipeprof::pipelines::formats {
namespace {

constexpr char kMagic[8] = {'P', 'P', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFooterMarker = ~uint64_t{0};
constexpr size_t kHeaderBytes = 16;
constexpr size_t kRecordHeaderBytes = 16;
constexpr size_t kFooterBytes = 24;

void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = std::byte((v >> (8 * i)) & 0xFFU);
}
void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = std::byte((v >> (8 * i)) & 0xFFU);
}
uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}
uint32_t get_u32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | std::to_integer<uint32_t>(p[i]);
  return v;
}

uint32_t crc32_of(const std::byte* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(n, 1U << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

bool cache_file_exists(const std::string& filename) {
  struct stat st {};
  return ::stat(filename.c_str(), &st) == 0;
}

CacheFileWriter::CacheFileWriter(std::string filename)
    : filename_(std::move(filename)), partial_(filename_ + ".partial"), lock_(filename_ + ".lock") {
  lock_fd_ = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw FormatError(fmt::format("{}: cannot create the lock {}: {}", filename_, lock_, errno_text()));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw FormatError(fmt::format(
          "{}: another pass is writing this cache (it holds {}); one writer per cache file",
          filename_, lock_));
    }
    throw FormatError(fmt::format("{}: cannot lock {}: {}", filename_, lock_, std::strerror(err)));
  }
  // The lock file may have been removed by a writer that just finished: then this lock guards
  // nothing, and the cache has been written meanwhile (or is being written by a newer writer).
  struct stat held {}, named {};
  if (::fstat(lock_fd_, &held) != 0 || ::stat(lock_.c_str(), &named) != 0 ||
      held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw FormatError(fmt::format(
        "{}: another pass finished or took over this cache while it was being opened", filename_));
  }
  out_ = std::fopen(partial_.c_str(), "wb");
  if (out_ == nullptr) {
    const std::string why = errno_text();
    ::unlink(lock_.c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw FormatError(fmt::format("{}: cannot create {}: {}", filename_, partial_, why));
  }
  std::byte header[kHeaderBytes]{};
  std::memcpy(header, kMagic, 8);
  put_u32(header + 8, kVersion);
  write(header, sizeof(header));
}

CacheFileWriter::~CacheFileWriter() {
  if (out_ != nullptr) std::fclose(out_);
  if (!committed_) ::unlink(partial_.c_str());
  if (lock_fd_ >= 0) {
    ::unlink(lock_.c_str());
    ::close(lock_fd_);  // releases the lock
  }
}

void CacheFileWriter::write(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, out_) != n)
    throw FormatError(fmt::format("{}: write failed at offset {}: {}", partial_, bytes_, errno_text()));
  bytes_ += n;
}

void CacheFileWriter::append(const Element& element) {
  const std::vector<std::byte> payload = serialize(element);
  std::byte header[kRecordHeaderBytes]{};
  put_u64(header, payload.size());
  put_u32(header + 8, crc32_of(payload.data(), payload.size()));
  write(header, sizeof(header));
  write(payload.data(), payload.size());
  ++records_;
}

void CacheFileWriter::commit() {
  std::byte footer[kFooterBytes]{};
  put_u64(footer, kFooterMarker);
  put_u64(footer + 8, records_);
  put_u64(footer + 16, bytes_);
  write(footer, sizeof(footer));
  if (std::fflush(out_) != 0 || ::fsync(::fileno(out_)) != 0)
    throw FormatError(fmt::format("{}: cannot flush: {}", partial_, errno_text()));
  std::fclose(out_);
  out_ = nullptr;
  if (::rename(partial_.c_str(), filename_.c_str()) != 0)
    throw FormatError(fmt::format("{}: cannot rename {} to it: {}", filename_, partial_, errno_text()));
  committed_ = true;
}

CacheFileReader::CacheFileReader(std::string filename) : filename_(std::move(filename)) {
  in_ = std::fopen(filename_.c_str(), "rb");
  if (in_ == nullptr) throw FormatError(fmt::format("{}: cannot open: {}", filename_, errno_text()));
  struct stat st {};
  if (::fstat(::fileno(in_), &st) != 0) {
    std::fclose(in_);
    in_ = nullptr;
    throw FormatError(fmt::format("{}: cannot stat: {}", filename_, errno_text()));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  std::byte header[kHeaderBytes];
  if (size_ < kHeaderBytes + kFooterBytes) {
    std::fclose(in_);
    in_ = nullptr;
    throw FormatError(fmt::format("{}: offset 0: {} bytes, too short for a cache file (damaged)",
                                  filename_, size_));
  }
  read(header, sizeof(header), "header");
  if (std::memcmp(header, kMagic, 8) != 0 || get_u32(header + 8) != kVersion ||
      get_u32(header + 12) != 0) {
    std::fclose(in_);
    in_ = nullptr;
    throw FormatError(fmt::format("{}: offset 0: not a pipeprof cache file (wrong magic or version)",
                                  filename_));
  }
}

CacheFileReader::~CacheFileReader() {
  if (in_ != nullptr) std::fclose(in_);
}

void CacheFileReader::read(void* data, size_t n, const char* what) {
  if (std::fread(data, 1, n, in_) != n) {
    throw FormatError(fmt::format("{}: offset {}: truncated {} (damaged cache file)", filename_,
                                  offset_, what));
  }
  offset_ += n;
}

std::optional<Element> CacheFileReader::next() {
  if (ended_) return std::nullopt;
  const uint64_t at = offset_;
  std::byte header[kRecordHeaderBytes];
  read(header, 8, "record header");
  const uint64_t length = get_u64(header);
  if (length == kFooterMarker) {
    std::byte footer[16];
    read(footer, sizeof(footer), "footer");
    if (get_u64(footer) != records_ || get_u64(footer + 8) != at || offset_ != size_) {
      throw FormatError(fmt::format(
          "{}: offset {}: the footer does not match the file ({} records read; damaged cache file)",
          filename_, at, records_));
    }
    ended_ = true;
    return std::nullopt;
  }
  read(header + 8, 8, "record header");
  if (get_u32(header + 12) != 0) {
    throw FormatError(fmt::format("{}: offset {}: record {} has a non-zero reserved field (damaged cache file)",
                                  filename_, at + 12, records_));
  }
  if (length > size_ - offset_) {
    throw FormatError(fmt::format("{}: offset {}: record length {} exceeds the file ({} bytes; damaged cache file)",
                                  filename_, at, length, size_));
  }
  std::vector<std::byte> payload(length);
  read(payload.data(), payload.size(), "record");
  if (crc32_of(payload.data(), payload.size()) != get_u32(header + 8)) {
    throw FormatError(
        fmt::format("{}: offset {}: record {} fails its CRC-32 (damaged cache file)", filename_, at, records_));
  }
  try {
    Element e = deserialize(payload);
    ++records_;
    return e;
  } catch (const std::exception& e) {
    throw FormatError(fmt::format("{}: offset {}: record {}: {}", filename_, at + kRecordHeaderBytes,
                                  records_, e.what()));
  }
}

}  // namespace pipeprof::pipelines::formats
