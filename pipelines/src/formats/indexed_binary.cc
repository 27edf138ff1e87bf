#include "formats/indexed_binary.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <span>

#include "formats/format_error.h"
#include "io/storage.h"

namespace pipeprof::pipelines::formats {
namespace {

// The size of an index file, checked: whole uint64 entries, at most `max_values` of them.
uint64_t entries_of(const io::RandomAccessFile& file, uint64_t max_values) {
  const uint64_t size = file.size();
  if (size % 8 != 0) {
    throw FormatError(
        fmt::format("{}: {} bytes, not a whole number of uint64 entries", file.name(), size));
  }
  if (size / 8 > max_values) {
    throw FormatError(fmt::format("{}: {} entries, more than its data file's bytes ({}) hold samples",
                                  file.name(), size / 8, max_values));
  }
  return size / 8;
}

// An index file's entries (little-endian uint64), read straight into them.
std::vector<uint64_t> read_entries(io::RandomAccessFile& file, uint64_t count) {
  std::vector<uint64_t> out(static_cast<size_t>(count));
  const auto bytes = std::as_writable_bytes(std::span(out));
  const size_t got = io::read_fully(file, 0, bytes);
  if (got != bytes.size()) {
    throw FormatError(fmt::format("{}: truncated at byte {} of {}", file.name(), got, bytes.size()));
  }
  if constexpr (std::endian::native == std::endian::big) {
    for (uint64_t& v : out)
      v = __builtin_bswap64(v);
  }
  return out;
}

}  // namespace

std::string offsets_file_of(const std::string& data_file) {
  return data_file + ".off.idx";
}

std::string sizes_file_of(const std::string& data_file) {
  return data_file + ".sz.idx";
}

SampleIndex read_sample_index(const std::string& data_file, uint64_t data_bytes,
                              const std::shared_ptr<const StorageContext>& storage) {
  SampleIndex index;
  const std::string off = offsets_file_of(data_file);
  const std::string sz = sizes_file_of(data_file);
  const auto offsets_file = io::open_file(off, {.storage = storage});
  const auto sizes_file = io::open_file(sz, {.storage = storage});
  // Samples are at least a byte: the data file bounds how many there can be; both files hold as
  // many. Checked before either is read.
  const uint64_t count = entries_of(*offsets_file, data_bytes);
  if (entries_of(*sizes_file, data_bytes) != count) {
    throw FormatError(fmt::format("{}: {} sizes for {} offsets ({})", sz, sizes_file->size() / 8,
                                  count, off));
  }
  index.offsets = read_entries(*offsets_file, count);
  index.sizes = read_entries(*sizes_file, count);
  for (size_t k = 0; k < index.offsets.size(); ++k) {
    const uint64_t o = index.offsets[k], n = index.sizes[k];
    if (n == 0) throw FormatError(fmt::format("{}: sample {}: size 0", sz, k));
    if (o > data_bytes || n > data_bytes - o) {
      throw FormatError(fmt::format(
          "{}: sample {} at byte {} of {} bytes runs past the end of {} ({} bytes)", off, k, o, n,
          data_file, data_bytes));
    }
    // In file order, as Megatron and DLIO write them: a reader then passes over the file once.
    if (k > 0 && o < index.offsets[k - 1] + index.sizes[k - 1]) {
      throw FormatError(fmt::format(
          "{}: sample {} at byte {} starts before the end of sample {} (byte {}): the samples "
          "must lie in order, without overlapping",
          off, k, o, k - 1, index.offsets[k - 1] + index.sizes[k - 1]));
    }
  }
  return index;
}

}  // namespace pipeprof::pipelines::formats
