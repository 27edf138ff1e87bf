// File sources: list_files (tf.data's Dataset.list_files), tfrecord (TFRecordDataset),
// fixed_length_records (FixedLengthRecordDataset) and indexed_binary (Megatron's indexed files). A file name travels through a pipeline as a
// rank-1 uint8 tensor of the path's bytes (file_name() reads it back), so the parallel-read pattern
// is list_files(...).interleave(tfrecord of the file, cycle_length, parallelism):
//
//   auto ds = list_files("/data/train-*.tfrecord", {.seed = 7})
//                 .interleave(DatasetFn([](const Element& f) { return tfrecord({file_name(f)}); }),
//                             {.cycle_length = 4, .parallelism = kAutotune});
//
// In a spec the nested source takes "files": "$element". Every read of a file is counted in the
// stage's statistics (bytes_read, read_calls, read MB/s, time to first byte per file) and traced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines {

class StorageContext;

inline constexpr int64_t kDefaultReadBufferSize = 256 * 1024;
inline constexpr int64_t kMaxReadBufferSize = int64_t{1} << 30;

struct FileReadOptions {
  int64_t buffer_size = kDefaultReadBufferSize;  // bytes per read call
  bool direct = false;       // O_DIRECT: bypass the page cache (aligned reads and buffer)
  bool drop_caches = false;  // drop each file from the page cache before reading it (a cold read)
  // Read an uncompressed local file through a mapping of it: records are views of the page cache
  // (no copy), its pages mapped buffer_size bytes at a time ahead of the reader. Not with direct.
  bool mmap = true;
};

struct ListFilesOptions {
  bool shuffle = true;                 // a new order every epoch (seeded: reproducible)
  std::optional<uint64_t> seed;        // absent: a new order on every run
};
// The files matching `pattern` (glob: *, ?, [...]), sorted, matched again at the start of every
// epoch (so files added meanwhile join the next epoch); shuffled unless options.shuffle is false.
// No match is an error naming the pattern.
Dataset list_files(std::string pattern, ListFilesOptions options = {});
// The same over a given list of files (in a spec: "files": [...] instead of "pattern"), listed
// once rather than matched: the parallel read of a known shard.
Dataset list_files(std::vector<std::string> files, ListFilesOptions options = {});

struct TFRecordOptions {
  std::string compression = "none";  // "none" or "gzip"
  bool verify_crc = true;            // check both CRCs of every record
  FileReadOptions read;
};
// The records of the files, one after the other, each a rank-1 uint8 tensor of its bytes.
Dataset tfrecord(std::vector<std::string> files, TFRecordOptions options = {});

struct FixedLengthRecordOptions {
  int64_t record_bytes = 0;  // required, > 0
  int64_t header_bytes = 0;  // skipped at the start of each file
  int64_t footer_bytes = 0;  // skipped at the end of each file
  FileReadOptions read;
};
// The fixed-size records of the files, each a rank-1 uint8 tensor of record_bytes bytes. A file
// whose body (size - header - footer) is not a whole number of records is an error naming it.
Dataset fixed_length_records(std::vector<std::string> files, FixedLengthRecordOptions options);

// The samples of Megatron-style indexed binary files (DLIO's indexed_binary and
// mmap_indexed_binary): each found through <file>.off.idx and <file>.sz.idx (one little-endian
// uint64 per sample: its offset and its size), a rank-1 uint8 tensor, in index order. read.mmap:
// samples are views of the mapped file (mmap_indexed_binary); off: read calls (indexed_binary).
Dataset indexed_binary(std::vector<std::string> files, FileReadOptions read = {});

// The paths matching `pattern` (glob: *, ?, [...]), sorted bytewise, as list_files lists them; an
// empty list when none match. URLs are listed through their scheme's storage with `storage`'s
// settings (s3:// listings need its S3 options, or the AWS environment's). Throws InputDataError
// when a folder cannot be read.
std::vector<std::string> matching_files(const std::string& pattern, const StorageContext* storage = nullptr);
// The same for an s3:// pattern, with each object's size from the same listing (a pattern
// without wildcards: that object, when its folder lists it). Throws InputDataError as
// matching_files does, and for a pattern of another scheme.
std::vector<std::pair<std::string, uint64_t>> matching_objects(const std::string& pattern,
                                                               const StorageContext* storage = nullptr);

// Writes a file's dirty pages out and drops its pages from the page cache (sync_file_range +
// posix_fadvise DONTNEED; no privileges needed), so that its next read comes from the device.
// An object of remote storage (a URL) is not in this machine's page cache: nothing is done.
// Throws InputDataError naming the file when it cannot be opened.
void drop_from_page_cache(const std::string& path);

// A file name element component: the path's bytes as a rank-1 uint8 tensor.
Tensor file_name_tensor(std::string_view path);
// The file name held by component `component` of `element` (a rank-1 uint8 tensor); throws
// std::invalid_argument otherwise.
std::string file_name(const Element& element, size_t component = 0);

}  // namespace pipeprof::pipelines
