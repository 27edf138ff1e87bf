// The `dataset` section of a DLIO workload file (YAML), read into the DlioDataset that data
// generation uses. Keys DLIO reads for generation: data_folder, format, num_files_train,
// num_files_eval, num_samples_per_file, record_length (or record_length_bytes, which DLIO's newer
// files use and which wins when both are present), record_length_stdev / _bytes_stdev,
// record_length_resize / _bytes_resize, num_subfolders_train, num_subfolders_eval, file_prefix.
// Other keys of the section (compression, chunking, keep_files, ...) are accepted and not used.
// Numbers follow DLIO's quirks: record lengths may be floats ("1.5e6"); counts must be whole
// numbers, written as integers or as floats with no fraction ("168.0").
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/pipelines/datagen.h"
#include "workload/dlio_yaml.h"

namespace pipeprof::harness {

struct DlioDatasetSection {
  pipelines::formats::DlioDataset dataset;  // DLIO's defaults where a key is absent
  // The DlioDataset keys the file sets ("record_length"), each with its name in the file
  // ("record_length_bytes").
  std::map<std::string, std::string> keys;
};

// Every key of the section DLIO knows (used here or not).
const std::vector<std::string_view>& dlio_dataset_keys();

// Throws InputError naming the file and the key ("w.yaml: dataset.num_files_train: expected a
// whole number >= 0, got \"ten\"").
DlioDatasetSection read_dlio_dataset(const workload::Section& section);
// The same for a whole file (`root`, the document workload::load_yaml_mapping read from `path`),
// which must have a `dataset` section.
DlioDatasetSection read_dlio_dataset(const std::string& path, const YAML::Node& root);

}  // namespace pipeprof::harness
