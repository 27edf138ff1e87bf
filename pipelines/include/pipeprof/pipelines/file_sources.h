// Sources that read array files, one file after another, like tf.data's file sources:
//   npy_files   numpy .npy files: one element per file, the array (a zero-copy view of the file's
//               mapping when the layout allows)
//   npz_files   numpy .npz archives (stored or deflated): one element per file, a component per
//               array (`keys`, in that order; all arrays in archive order when empty)
//   hdf5_files  HDF5 files: one element per file, a component per dataset (`datasets`; all of the
//               file's datasets, by name, when empty)
// With `rows`, each file yields the rows of its first dimension instead (every component must have
// the same number of rows), as tf.data's from_tensor_slices over the file would; with `rows_axis`
// (in a spec) the rows of another dimension, -1 being each array's last (DLIO's npz and npy files
// hold their samples there), copied since their bytes are strided. Each file read counts as one
// read of the file's size in the stage's storage statistics (bytes_read, files_opened).
// A file that cannot be read or is malformed fails the pipeline with a InputDataError naming the file
// and where in it (offset, member, dataset). In a spec the files are "files": [...] or "file": one
// name, which inside an interleave's pipeline may be "$element": the outer element's file name (a
// uint8 vector of the name's bytes, as file_name_element() makes).
#pragma once

#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines {

Dataset npy_files(std::vector<std::string> files, bool rows = false);
Dataset npz_files(std::vector<std::string> files, std::vector<std::string> keys = {},
                  bool rows = false);
Dataset hdf5_files(std::vector<std::string> files, std::vector<std::string> datasets = {},
                   bool rows = false);

// A file name as an element (a uint8 vector of its bytes), and back; the latter throws
// std::invalid_argument for anything else.
Element file_name_element(const std::string& name);
std::string file_name_of(const Tensor& tensor);

}  // namespace pipeprof::pipelines
