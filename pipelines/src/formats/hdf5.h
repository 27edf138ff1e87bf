// HDF5 files through libhdf5: datasets read whole into tensors (integer and float datasets of the
// widths npy.h accepts, and h5py's bool enum), written contiguous or chunked and deflated.
// libhdf5 (Debian's serial build) is not thread-safe: every call here holds one process-wide lock.
// A dataset's declared size is checked before anything is allocated: an unfiltered dataset must
// fit in the file, a deflated one within deflate's largest ratio of its stored bytes.
#pragma once

#include "pipeprof/pipelines/formats.h"  // read_hdf5, write_hdf5

