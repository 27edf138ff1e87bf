// HDF5 files through libhdf5: datasets read whole into tensors (integer and float datasets of the
// widths npy.h accepts, and h5py's bool enum), written contiguous or chunked and deflated.
// libhdf5 (Debian's serial build) is not thread-safe: every call here holds one process-wide lock.
// A dataset's declared size is checked before anything is allocated: an unfiltered dataset must
// fit in the file, a deflated one within deflate's largest ratio of its stored bytes.
#pragma once

#include "pipeprof/pipelines/formats.h"  // read_hdf5, write_hdf5


#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::pipelines::formats {

// Datasets whose values the caller streams into the file itself (data generation: a file's payload
// made and written a chunk at a time instead of held in memory, and written without the library's
// lock). create_hdf5_layout makes the file with libhdf5: each `streamed` dataset contiguous, its
// space allocated at once and never filled (H5D_ALLOC_TIME_EARLY, H5D_FILL_TIME_NEVER), then the
// `written` tensors through the library; it closes the file and returns where each streamed
// dataset's bytes lie (H5Dget_offset). The caller writes exactly `bytes` bytes at `offset`, in the
// file type's order: little-endian (file_type_of), the host's on x86-64 and arm64.
struct Hdf5StreamedDataset {
  std::string name;
  DType dtype = DType::kUInt8;  // not bool
  Shape shape;
};
struct Hdf5Extent {
  std::string name;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
std::vector<Hdf5Extent> create_hdf5_layout(const std::string& path,
                                           const std::vector<Hdf5StreamedDataset>& streamed,
                                           const NamedTensors& written);

}  // namespace pipeprof::pipelines::formats
