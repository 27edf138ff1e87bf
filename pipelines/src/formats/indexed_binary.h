// Megatron-style indexed binary files (DLIO's indexed_binary and mmap_indexed_binary): a data file
// of samples and, beside it, <file>.off.idx and <file>.sz.idx, each one uint64 per sample
// (little-endian, no header): the sample's offset in the data file and its size in bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof::pipelines {
class StorageContext;
}

namespace pipeprof::pipelines::formats {

struct SampleIndex {
  std::vector<uint64_t> offsets, sizes;
};

// The index files of a data file.
std::string offsets_file_of(const std::string& data_file);
std::string sizes_file_of(const std::string& data_file);

// Reads and checks the index of `data_file`, whose size is `data_bytes`: both files whole numbers
// of uint64, as many offsets as sizes, no empty sample, every sample within the data file.
// Throws FormatError naming the index file and the sample (or io::IoError when a file cannot be
// read); sizes are checked before anything is allocated.
SampleIndex read_sample_index(const std::string& data_file, uint64_t data_bytes,
                              const std::shared_ptr<const StorageContext>& storage = nullptr);

}  // namespace pipeprof::pipelines::formats
