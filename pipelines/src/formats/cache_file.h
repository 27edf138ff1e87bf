// The file format of cache(filename): elements as written by the first complete pass, read back
// by later ones.
//
//   header:  "PPCACHE1" (8 bytes), u32 version (1), u32 reserved (0)
//   record:  u64 length, u32 CRC-32 (zlib) of the payload, u32 reserved (0), then `length` bytes:
//            the element in the wire format of serialization.h
//   footer:  u64 0xFFFFFFFFFFFFFFFF, u64 number of records, u64 bytes before the footer
//
// All integers little-endian. The writer writes "<filename>.partial" under an exclusive lock on
// "<filename>.lock" (a second writer fails at once, naming the lock) and renames it to <filename>
// only on commit(): a pass that stops early leaves nothing a later pass would read. The reader
// checks everything (magic, version, lengths against the file's size, CRCs, the footer) and throws
// FormatError naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::formats {

class CacheFileWriter {
 public:
  // Takes the lock and creates the partial file; throws FormatError when another writer holds
  // the lock or the file cannot be created.
  explicit CacheFileWriter(std::string filename);
  // Without commit(): removes the partial file (an incomplete pass), then releases the lock.
  ~CacheFileWriter();
  CacheFileWriter(const CacheFileWriter&) = delete;
  CacheFileWriter& operator=(const CacheFileWriter&) = delete;

  void append(const Element& element);
  // Writes the footer, flushes to disk and renames the partial file to the cache's name.
  void commit();

 private:
  void write(const void* data, size_t n);

  std::string filename_;
  std::string partial_;
  std::string lock_;
  int lock_fd_ = -1;
  std::FILE* out_ = nullptr;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
  bool committed_ = false;
};

class CacheFileReader {
 public:
  // Opens and checks the header; throws FormatError.
  explicit CacheFileReader(std::string filename);
  ~CacheFileReader();
  CacheFileReader(const CacheFileReader&) = delete;
  CacheFileReader& operator=(const CacheFileReader&) = delete;

  // The next element, or nullopt after a valid footer; throws FormatError naming the offset.
  std::optional<Element> next();

 private:
  void read(void* data, size_t n, const char* what);

  std::string filename_;
  std::FILE* in_ = nullptr;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  bool ended_ = false;
};

// Whether a committed cache file exists at `filename`.
bool cache_file_exists(const std::string& filename);

}  // namespace pipeprof::pipelines::formats
