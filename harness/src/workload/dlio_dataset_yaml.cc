#include "workload/dlio_dataset_yaml.h"

#include <fmt/format.h>

#include <functional>
#include <utility>

#include "pipeprof/harness/errors.h"

namespace pipeprof::harness {

using pipelines::formats::DlioDataset;

const std::vector<std::string_view>& dlio_dataset_keys() {
  static const std::vector<std::string_view> kKeys{
      "data_folder", "format", "num_files_train", "num_files_eval", "num_samples_per_file",
      "record_length", "record_length_stdev", "record_length_resize", "record_length_bytes",
      "record_length_bytes_stdev", "record_length_bytes_resize", "num_subfolders_train",
      "num_subfolders_eval", "file_prefix", "keep_files", "enable_chunking", "chunk_size",
      "compression", "compression_level", "generation_buffer_size", "record_element_bytes",
      "record_element_type", "record_dims", "hdf5", "data_gen_method"};
  return kKeys;
}

DlioDatasetSection read_dlio_dataset(const workload::Section& s) {
  DlioDatasetSection out;
  DlioDataset& d = out.dataset;
  // Each key DLIO reads for generation, as (key in the file, reader).
  const std::vector<std::pair<std::string_view, std::function<void(std::string_view)>>> readers{
      {"data_folder", [&](std::string_view k) { d.data_folder = s.text(k, "a folder"); }},
      {"format",
       [&](std::string_view k) {
         const std::string name = s.text(k, "a format name");
         const auto f = pipelines::formats::parse_data_format(name);
         if (!f) {
           s.fail(k, fmt::format("a format pipeprof datagen writes ({})",
                                 pipelines::formats::data_format_names()));
         }
         d.format = *f;
       }},
      {"num_files_train", [&](std::string_view k) { d.num_files_train = s.whole(k, 0); }},
      {"num_files_eval", [&](std::string_view k) { d.num_files_eval = s.whole(k, 0); }},
      {"num_samples_per_file", [&](std::string_view k) { d.num_samples_per_file = s.whole(k, 1); }},
      {"num_subfolders_train", [&](std::string_view k) { d.num_subfolders_train = s.whole(k, 0); }},
      {"num_subfolders_eval", [&](std::string_view k) { d.num_subfolders_eval = s.whole(k, 0); }},
      {"file_prefix", [&](std::string_view k) { d.file_prefix = s.text(k, "a file name prefix"); }},
  };
  for (const auto& [key, read] : readers) {
    if (!s.has(key)) continue;
    read(key);
    out.keys[std::string(key)] = std::string(key);
  }
  // The record lengths: record_length_bytes* (DLIO's current names) over record_length*.
  const std::vector<std::pair<std::string, double*>> lengths{
      {"record_length", &d.record_length},
      {"record_length_stdev", &d.record_length_stdev},
      {"record_length_resize", &d.record_length_resize},
  };
  for (const auto& [key, field] : lengths) {
    const std::string bytes_key =
        fmt::format("record_length_bytes{}", key.substr(std::string("record_length").size()));
    for (const std::string& k : {key, bytes_key}) {
      if (!s.has(k)) continue;
      const std::string expected = "a number of bytes";
      try {
        *field = s.number(k, 0);
      } catch (const InputError&) {
        s.fail(k, expected);
      }
      out.keys[key] = k;
    }
  }
  return out;
}

DlioDatasetSection read_dlio_dataset(const std::string& path, const YAML::Node& root) {
  if (!root["dataset"]) {
    throw InputError(fmt::format("{}: no `dataset` section (a DLIO workload file has one)", path));
  }
  if (!root["dataset"].IsMap()) {
    throw InputError(fmt::format("{}: dataset: expected a mapping of keys to values", path));
  }
  return read_dlio_dataset(workload::Section(path, "dataset", root["dataset"]));
}

}  // namespace pipeprof::harness
