#include "dlio_dataset_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeprof/harness/cli.h"

namespace pipeprof::harness {
namespace {

using pipelines::formats::DataFormat;
using pipelines::formats::DlioDataset;

class Section {
 public:
  Section(std::string path, YAML::Node node) : path_(std::move(path)), node_(std::move(node)) {}

  [[noreturn]] void fail(std::string_view key, std::string_view expected) const {
    const YAML::Node v = node_[std::string(key)];
    const std::string got = v.IsScalar()     ? "\"" + v.Scalar() + "\""
                            : v.IsNull()     ? "nothing"
                            : v.IsSequence() ? "a list"
                                             : "a mapping";
    throw InputError(fmt::format("{}: dataset.{}: expected {}, got {}", path_, key, expected, got));
  }

  YAML::Node get(std::string_view key) const { return node_[std::string(key)]; }

  std::string text(std::string_view key, std::string_view expected) const {
    const YAML::Node v = get(key);
    if (!v.IsScalar()) fail(key, expected);
    return v.Scalar();
  }

  double number(std::string_view key, std::string_view expected) const {
    const std::string s = text(key, expected);
    try {
      size_t used = 0;
      const double v = std::stod(s, &used);
      if (used == s.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): reported below
    }
    fail(key, expected);
  }

  int64_t whole(std::string_view key, int64_t min) const {
    const std::string expected = fmt::format("a whole number >= {}", min);
    const double v = number(key, expected);
    if (v != std::floor(v) || v < static_cast<double>(min) || v > 9e15) fail(key, expected);
    return static_cast<int64_t>(v);
  }

 private:
  std::string path_;
  YAML::Node node_;
};

}  // namespace

DlioDatasetSection read_dlio_dataset(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(fmt::format("{}: cannot read the workload file", path));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: not a YAML file: {}", path, e.what()));
  }
  if (!root.IsMap() || !root["dataset"]) {
    throw InputError(fmt::format("{}: no `dataset` section (a DLIO workload file has one)", path));
  }
  if (!root["dataset"].IsMap()) {
    throw InputError(fmt::format("{}: dataset: expected a mapping of keys to values", path));
  }
  const Section s(path, root["dataset"]);
  DlioDatasetSection out;
  DlioDataset& d = out.dataset;
  auto has = [&](std::string_view key) { return static_cast<bool>(s.get(key)); };

  // Each key DLIO reads for generation, as (key in the file, the DlioDataset key, reader).
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
    if (!has(key)) continue;
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
    std::string bytes_key = "record_length_bytes" + key.substr(std::string("record_length").size());
    for (const std::string& k : {key, bytes_key}) {
      if (!has(k)) continue;
      *field = s.number(k, "a number of bytes");
      out.keys[key] = k;
    }
  }
  return out;
}

}  // namespace pipeprof::harness
