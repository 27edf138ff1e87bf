#include "formats/tfrecord.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "formats/crc32c.h"

namespace pipeprof::pipelines::formats {
namespace {

// Records at most this large get their exact buffer at once even when the file's size is unknown.
constexpr uint64_t kEagerAllocation = 16ULL << 20;

uint64_t load_le64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t load_le32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
void store_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xFFU);
}
void store_le32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xFFU);
}

std::shared_ptr<std::byte> allocate(size_t n) {
  // Not zero-filled: the reader overwrites every byte.
  std::shared_ptr<std::byte[]> block = std::make_shared_for_overwrite<std::byte[]>(std::max<size_t>(n, 1));
  return {block, block.get()};
}

}  // namespace

TFRecordReader::TFRecordReader(std::unique_ptr<io::ByteStream> stream, bool verify_crc)
    : stream_(std::move(stream)), verify_crc_(verify_crc) {}

void TFRecordReader::fail(uint64_t offset, const std::string& what) const {
  throw FormatError(
      fmt::format("{}: TFRecord record at byte {}: {}", stream_->name(), offset, what));
}

std::optional<Record> TFRecordReader::next() {
  const uint64_t offset = stream_->position();
  std::array<std::byte, kTFRecordHeaderBytes> header{};
  const size_t got = stream_->read(header);
  if (got == 0) return std::nullopt;
  if (got < header.size()) {
    fail(offset, fmt::format("truncated header ({} of {} bytes)", got, header.size()));
  }
  const uint64_t length = load_le64(header.data());
  if (verify_crc_) {
    const uint32_t expected = load_le32(header.data() + 8);
    const uint32_t actual = mask_crc(crc32c(std::span(header.data(), 8)));
    if (expected != actual) {
      fail(offset, fmt::format("corrupt length field (length {}, CRC {:#010x}, expected {:#010x})",
                               length, expected, actual));
    }
  }
  const auto left = stream_->remaining();
  if (left && (length > *left || *left - length < kTFRecordFooterBytes)) {
    fail(offset, fmt::format("truncated: a length of {} bytes plus its CRC does not fit in the {} "
                             "bytes left in the file",
                             length, *left));
  }
  if (length > static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max())) {
    fail(offset, fmt::format("length {} is too large", length));
  }
  Record record;
  record.offset = offset;
  record.size = static_cast<size_t>(length);
  if (left || length <= kEagerAllocation) {
    io::SharedBytes bytes = stream_->read_shared(record.size);
    if (bytes.size < record.size) {
      fail(offset, fmt::format("truncated data ({} of {} bytes)", bytes.size, record.size));
    }
    record.data = std::move(bytes.data);
  } else {
    // Size unknown in advance: grow with the bytes that actually arrive.
    std::vector<std::byte> grown;
    size_t have = 0;
    while (have < record.size) {
      grown.resize(std::min<size_t>(record.size, std::max<size_t>(2 * have, kEagerAllocation)));
      const size_t n = stream_->read(std::span(grown.data() + have, grown.size() - have));
      have += n;
      if (have < grown.size()) {
        fail(offset, fmt::format("truncated data ({} of {} bytes)", have, record.size));
      }
    }
    record.data = allocate(record.size);
    std::memcpy(record.data.get(), grown.data(), record.size);
  }
  std::array<std::byte, kTFRecordFooterBytes> footer{};
  const size_t f = stream_->read(footer);
  if (f < footer.size()) {
    fail(offset, fmt::format("truncated data CRC ({} of {} bytes)", f, footer.size()));
  }
  if (verify_crc_) {
    const uint32_t expected = load_le32(footer.data());
    const uint32_t actual = mask_crc(crc32c(record.bytes()));
    if (expected != actual) {
      fail(offset, fmt::format("corrupt data ({} bytes, CRC {:#010x}, expected {:#010x})",
                               record.size, expected, actual));
    }
  }
  return record;
}

std::string tfrecord_frame(std::string_view data) {
  std::string out(kTFRecordHeaderBytes + data.size() + kTFRecordFooterBytes, '\0');
  store_le64(out.data(), data.size());
  store_le32(out.data() + 8, mask_crc(crc32c(std::string_view(out.data(), 8))));
  std::memcpy(out.data() + kTFRecordHeaderBytes, data.data(), data.size());
  store_le32(out.data() + kTFRecordHeaderBytes + data.size(), mask_crc(crc32c(data)));
  return out;
}

TFRecordWriter::TFRecordWriter(const std::string& path, io::Compression compression)
    : path_(path), compression_(compression) {
  if (compression_ == io::Compression::kGzip) {
    gz_ = gzopen(path.c_str(), "wb");
    if (gz_ == nullptr) {
      throw io::IoError(fmt::format("{}: cannot be written: {}", path, std::strerror(errno)));
    }
  } else {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) {
      throw io::IoError(fmt::format("{}: cannot be written: {}", path, std::strerror(errno)));
    }
  }
}

TFRecordWriter::~TFRecordWriter() {
  try {
    close();
  } catch (const io::IoError&) {  // NOLINT(bugprone-empty-catch): documented: call close()
  }
}

void TFRecordWriter::put(const void* data, size_t n) {
  if (n == 0) return;
  if (gz_ != nullptr) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(n, 1U << 30));
      if (gzwrite(static_cast<gzFile>(gz_), p, chunk) != static_cast<int>(chunk)) {
        throw io::IoError(fmt::format("{}: write failed", path_));
      }
      p += chunk;
      n -= chunk;
    }
  } else if (file_ == nullptr || std::fwrite(data, 1, n, file_) != n) {
    throw io::IoError(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
}

void TFRecordWriter::write(std::string_view record) {
  char header[kTFRecordHeaderBytes];
  store_le64(header, record.size());
  store_le32(header + 8, mask_crc(crc32c(std::string_view(header, 8))));
  char footer[kTFRecordFooterBytes];
  store_le32(footer, mask_crc(crc32c(record)));
  put(header, sizeof header);
  put(record.data(), record.size());
  put(footer, sizeof footer);
}

void TFRecordWriter::begin_record(uint64_t length) {
  if (in_record_) throw std::logic_error("TFRecordWriter: begin_record inside a record");
  char header[kTFRecordHeaderBytes];
  store_le64(header, length);
  store_le32(header + 8, mask_crc(crc32c(std::string_view(header, 8))));
  put(header, sizeof header);
  in_record_ = true;
  record_left_ = length;
  record_crc_ = 0;
}

void TFRecordWriter::append(std::span<const std::byte> bytes) {
  if (!in_record_ || bytes.size() > record_left_) {
    throw std::logic_error("TFRecordWriter: append beyond the record's length");
  }
  record_crc_ = crc32c(bytes, record_crc_);
  put(bytes.data(), bytes.size());
  record_left_ -= bytes.size();
}

void TFRecordWriter::end_record() {
  if (!in_record_ || record_left_ != 0) {
    throw std::logic_error("TFRecordWriter: end_record before the record's length was appended");
  }
  char footer[kTFRecordFooterBytes];
  store_le32(footer, mask_crc(record_crc_));
  put(footer, sizeof footer);
  in_record_ = false;
}

void TFRecordWriter::close() {
  if (gz_ != nullptr) {
    const int rc = gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
    if (rc != Z_OK) throw io::IoError(fmt::format("{}: closing the gzip stream failed", path_));
  }
  if (file_ != nullptr) {
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) throw io::IoError(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
  }
}

}  // namespace pipeprof::pipelines::formats
