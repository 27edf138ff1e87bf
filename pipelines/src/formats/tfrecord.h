// TFRecord files, byte for byte as TensorFlow writes them. Each record is
//
//   uint64 length (little-endian) | uint32 masked_crc32c(length) | length bytes of data |
//   uint32 masked_crc32c(data)
//
// and a file is records back to back, optionally compressed as one gzip stream. The reader checks
// both CRCs (unless told not to) and reports a corrupt or truncated record naming the file and the
// record's byte offset (in the uncompressed stream); a length field larger than the bytes left in
// the file is an error before anything is allocated, and in a compressed file (whose size is not
// known in advance) a record's buffer grows only as its bytes arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "formats/format_error.h"
#include "io/byte_stream.h"

namespace pipeprof::pipelines::formats {

inline constexpr size_t kTFRecordHeaderBytes = 12;  // length + its CRC
inline constexpr size_t kTFRecordFooterBytes = 4;   // the data's CRC

// One record's bytes (not zero-initialised memory, filled by the reader).
struct Record {
  std::shared_ptr<std::byte> data;
  size_t size = 0;
  uint64_t offset = 0;  // of its header in the (uncompressed) stream
  std::span<const std::byte> bytes() const { return {data.get(), size}; }
};

class TFRecordReader {
 public:
  explicit TFRecordReader(std::unique_ptr<io::ByteStream> stream, bool verify_crc = true);

  // The next record, or nullopt at the end of the file. Throws FormatError or io::IoError.
  std::optional<Record> next();

 private:
  [[noreturn]] void fail(uint64_t offset, const std::string& what) const;

  std::unique_ptr<io::ByteStream> stream_;
  bool verify_crc_;
};

// The bytes of one record as it appears in a TFRecord file.
std::string tfrecord_frame(std::string_view data);

// Writes a TFRecord file (uncompressed, or gzip-compressed like TensorFlow's "GZIP" option).
class TFRecordWriter {
 public:
  TFRecordWriter(const std::string& path, io::Compression compression = io::Compression::kNone);
  ~TFRecordWriter();  // closes; errors at this point are lost: call close() to see them
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record);
  void write(std::span<const std::byte> record) {
    write(std::string_view(reinterpret_cast<const char*>(record.data()), record.size()));
  }
  // One record written in pieces, for records too large to hold in memory at once: begin_record
  // with the record's length, append exactly that many bytes, end_record (which writes the CRC of
  // the data and throws std::logic_error when the bytes appended do not add up to the length).
  void begin_record(uint64_t length);
  void append(std::span<const std::byte> bytes);
  void end_record();
  // Flushes and closes the file; throws io::IoError naming it when a write failed.
  void close();

 private:
  void put(const void* data, size_t n);

  std::string path_;
  io::Compression compression_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;        // gzFile
  uint64_t record_left_ = 0;  // bytes still to append to the record begun
  uint32_t record_crc_ = 0;
  bool in_record_ = false;
};

}  // namespace pipeprof::pipelines::formats
