#include "formats/indexed_binary.h"

#include <fmt/format.h>

#include <cstring>
#include <span>

#include "formats/format_error.h"
#include "io/storage.h"

namespace pipeprof::pipelines::formats {
namespace {

// One index file as uint64 values (little-endian), at most `max_values` of them.
std::vector<uint64_t> read_index_file(const std::string& name, uint64_t max_values,
                                      const std::shared_ptr<const StorageContext>& storage) {
  const auto file = io::open_file(name, {.storage = storage});
  const uint64_t size = file->size();
  if (size % 8 != 0) {
    throw FormatError(fmt::format("{}: {} bytes, not a whole number of uint64 entries", name, size));
  }
  if (size / 8 > max_values) {
    throw FormatError(fmt::format("{}: {} entries, more than its data file's bytes ({}) hold samples",
                                  name, size / 8, max_values));
  }
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  const size_t got = io::read_fully(*file, 0, bytes);
  if (got != bytes.size()) {
    throw FormatError(fmt::format("{}: truncated at byte {} of {}", name, got, size));
  }
  std::vector<uint64_t> out(bytes.size() / 8);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b)
      v = (v << 8) | static_cast<uint8_t>(bytes[i * 8 + static_cast<size_t>(b)]);
    out[i] = v;
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
  // Samples are at least a byte: the data file bounds how many there can be.
  index.offsets = read_index_file(off, data_bytes, storage);
  index.sizes = read_index_file(sz, data_bytes, storage);
  if (index.offsets.size() != index.sizes.size()) {
    throw FormatError(fmt::format("{}: {} sizes for {} offsets ({})", sz, index.sizes.size(),
                                  index.offsets.size(), off));
  }
  for (size_t k = 0; k < index.offsets.size(); ++k) {
    const uint64_t o = index.offsets[k], n = index.sizes[k];
    if (n == 0) throw FormatError(fmt::format("{}: sample {}: size 0", sz, k));
    if (o > data_bytes || n > data_bytes - o) {
      throw FormatError(fmt::format(
          "{}: sample {} at byte {} of {} bytes runs past the end of {} ({} bytes)", off, k, o, n,
          data_file, data_bytes));
    }
  }
  return index;
}

}  // namespace pipeprof::pipelines::formats
