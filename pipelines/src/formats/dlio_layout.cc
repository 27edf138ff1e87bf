// DLIO's dataset layout (pipeprof/pipelines/datagen.h): the checks of a dataset section, the files'
// names and folders, the samples' sizes, and the entries of a folder that are not the dataset's.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <system_error>

#include "pipeprof/pipelines/datagen.h"

namespace pipeprof::pipelines::formats {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::pair<DataFormat, std::string_view>, 10> kFormats{{
    {DataFormat::kTFRecord, "tfrecord"},
    {DataFormat::kNpz, "npz"},
    {DataFormat::kNpy, "npy"},
    {DataFormat::kHdf5, "hdf5"},
    {DataFormat::kJpeg, "jpeg"},
    {DataFormat::kRaw, "raw"},
    {DataFormat::kIndexedBinary, "indexed_binary"},
    {DataFormat::kMmapIndexedBinary, "mmap_indexed_binary"},
    {DataFormat::kCsv, "csv"},
    {DataFormat::kPng, "png"},
}};

// The largest sample a generator holds in memory (npz, hdf5, jpeg build the whole file) and the
// largest record fixed_length_records reads.
constexpr double kMaxRecordLength = 1ULL << 40;
constexpr double kMaxRawRecordLength = 1ULL << 31;
constexpr int64_t kMaxJpegDimension = 65500;

std::string digits_of(int64_t n) {
  return std::to_string(n);
}

// DLIO's add_padding: i as decimal, left-padded with zeros to `width` characters.
std::string padded(int64_t i, size_t width) {
  std::string s = std::to_string(i);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// data_folder without trailing slashes (DLIO strips them too).
fs::path root_of(const DlioDataset& d) {
  std::string s = d.data_folder;
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

std::string split_folder(const DlioDataset& d, bool eval) {
  return (root_of(d) / (eval ? "valid" : "train")).string();
}

// The folder of file i of a split: the split's folder, or its subfolder i % subfolders.
std::string folder_of(const DlioDataset& d, bool eval, int64_t i) {
  const int64_t subfolders = eval ? d.num_subfolders_eval : d.num_subfolders_train;
  const std::string split = split_folder(d, eval);
  if (subfolders <= 1) return split;
  return (fs::path(split) / padded(i % subfolders, digits_of(subfolders).size())).string();
}

// The most files of one split: the layout is planned in memory (a name per file), and the largest
// MLPerf Storage datasets hold a few hundred thousand files.
constexpr int64_t kMaxFiles = 10'000'000;

void check_count(const std::string& key, int64_t v, int64_t min, int64_t max = INT64_MAX) {
  if (v < min)
    throw DatasetConfigError(key, fmt::format("expected an integer >= {}, got {}", min, v));
  if (v > max)
    throw DatasetConfigError(key, fmt::format("expected at most {} files, got {}", max, v));
}

}  // namespace

std::string_view data_format_name(DataFormat format) {
  for (const auto& [f, name] : kFormats) {
    if (f == format) return name;
  }
  return "?";
}

std::optional<DataFormat> parse_data_format(std::string_view name) {
  for (const auto& [f, n] : kFormats) {
    if (n == name) return f;
  }
  return std::nullopt;
}

std::string data_format_names() {
  std::string out;
  for (const auto& [f, name] : kFormats)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

void validate(const DlioDataset& d) {
  if (d.data_folder.empty()) throw DatasetConfigError("data_folder", "expected a folder, got \"\"");
  // A URL never becomes a local folder of that name ("s3:/bucket" in the current directory); an
  // s3:// dataset is S3's (storage.storage_type: s3).
  if (d.data_folder.find("://") != std::string::npos && !d.data_folder.starts_with("s3://")) {
    throw DatasetConfigError("data_folder",
                             "\"" + d.data_folder +
                                 "\" is a URL; datasets are generated and read in local folders or "
                                 "S3 buckets (s3://; a dataset behind an HTTP object server: "
                                 "pipeprof.remote, docs/remote.md)");
  }
  check_count("num_files_train", d.num_files_train, 0, kMaxFiles);
  check_count("num_files_eval", d.num_files_eval, 0, kMaxFiles);
  if (d.num_files_train + d.num_files_eval == 0) {
    throw DatasetConfigError("num_files_train",
                             "no file to write: num_files_train and "
                             "num_files_eval are both 0");
  }
  check_count("num_samples_per_file", d.num_samples_per_file, 1);
  check_count("num_subfolders_train", d.num_subfolders_train, 0);
  check_count("num_subfolders_eval", d.num_subfolders_eval, 0);
  if (!std::isfinite(d.record_length) || d.record_length < 1 ||
      d.record_length > kMaxRecordLength) {
    throw DatasetConfigError(
        "record_length",
        fmt::format("expected a number of bytes from 1 to 2^40, got {}", d.record_length));
  }
  if (!std::isfinite(d.record_length_stdev) || d.record_length_stdev < 0) {
    throw DatasetConfigError("record_length_stdev",
                             fmt::format("expected a number >= 0, got {}", d.record_length_stdev));
  }
  if (!std::isfinite(d.record_length_resize) || d.record_length_resize < 0) {
    throw DatasetConfigError("record_length_resize",
                             fmt::format("expected a number >= 0, got {}", d.record_length_resize));
  }
  if (d.file_prefix.empty() || d.file_prefix.find('/') != std::string::npos) {
    throw DatasetConfigError("file_prefix", fmt::format("expected a file name prefix without '/', "
                                                        "got \"{}\"",
                                                        d.file_prefix));
  }
  if (d.format == DataFormat::kRaw) {
    if (d.record_length != std::floor(d.record_length) || d.record_length > kMaxRawRecordLength) {
      throw DatasetConfigError("record_length",
                               fmt::format("raw records need a whole number of bytes up to 2^31 "
                                           "(fixed_length_records' limit), got {}",
                                           d.record_length));
    }
    if (d.record_length_stdev != 0) {
      throw DatasetConfigError("record_length_stdev",
                               "raw records all have record_length bytes (fixed_length_records' "
                               "layout): expected 0");
    }
  }
  if ((d.format == DataFormat::kJpeg || d.format == DataFormat::kPng) &&
      static_cast<int64_t>(std::sqrt(d.record_length)) > kMaxJpegDimension) {
    throw DatasetConfigError("record_length",
                             fmt::format("an image is at most {} pixels a side; {} bytes make "
                                         "{} x {}",
                                         kMaxJpegDimension, d.record_length,
                                         static_cast<int64_t>(std::sqrt(d.record_length)),
                                         static_cast<int64_t>(std::sqrt(d.record_length))));
  }
}

std::vector<DatasetFile> dataset_files(const DlioDataset& d) {
  validate(d);
  // DLIO: dimension = int(sqrt(record_length)), dimension_stdev = stdev / 2 / sqrt(record_length);
  // with a stdev, each file's (d1, d2) = max(int(normal(dimension, dimension_stdev)), 1).
  const double root = std::sqrt(d.record_length);
  const auto dimension = static_cast<int64_t>(root);
  const double dimension_stdev = d.record_length_stdev / 2.0 / root;
  std::mt19937_64 rng(d.seed);
  std::normal_distribution<double> normal(static_cast<double>(dimension), dimension_stdev);
  auto draw = [&]() -> int64_t {
    if (dimension_stdev <= 0) return dimension;
    const double v = normal(rng);
    const bool image = d.format == DataFormat::kJpeg || d.format == DataFormat::kPng;
    const int64_t clamp = image ? kMaxJpegDimension : int64_t{1} << 31;
    return std::clamp<int64_t>(static_cast<int64_t>(std::min(v, 1e15)), 1, clamp);
  };

  std::vector<DatasetFile> files;
  files.reserve(static_cast<size_t>(d.num_files_train + d.num_files_eval));
  const std::string ext(data_format_name(d.format));
  for (const bool eval : {false, true}) {
    const int64_t n = eval ? d.num_files_eval : d.num_files_train;
    const size_t width = digits_of(n).size();
    for (int64_t i = 0; i < n; ++i) {
      DatasetFile f;
      f.path = (fs::path(folder_of(d, eval, i)) /
                fmt::format("{}_{}_of_{}.{}", d.file_prefix, padded(i, width), n, ext))
                   .string();
      f.index = i;
      f.eval = eval;
      f.dim1 = draw();
      f.dim2 = draw();
      const auto samples =
          static_cast<uint64_t>(d.format == DataFormat::kJpeg || d.format == DataFormat::kPng
                                    ? 1
                                    : d.num_samples_per_file);
      f.bytes = d.format == DataFormat::kRaw
                    ? samples * static_cast<uint64_t>(d.record_length)
                    : samples * static_cast<uint64_t>(f.dim1) * static_cast<uint64_t>(f.dim2);
      files.push_back(std::move(f));
    }
  }
  return files;
}

std::vector<std::string> dataset_folders(const DlioDataset& d) {
  validate(d);
  std::vector<std::string> out{split_folder(d, false), split_folder(d, true)};
  if (d.format == DataFormat::kTFRecord) {
    out.push_back((root_of(d) / "index").string());
    out.push_back((root_of(d) / "index" / "train").string());
    out.push_back((root_of(d) / "index" / "valid").string());
  }
  for (const bool eval : {false, true}) {
    const int64_t subfolders = eval ? d.num_subfolders_eval : d.num_subfolders_train;
    if (subfolders <= 1) continue;
    for (int64_t i = 0; i < subfolders; ++i)
      out.push_back(folder_of(d, eval, i));
  }
  return out;
}

bool is_indexed_binary(DataFormat format) {
  return format == DataFormat::kIndexedBinary || format == DataFormat::kMmapIndexedBinary;
}

std::vector<std::string> index_files_of(const DlioDataset& d, const DatasetFile& f) {
  if (is_indexed_binary(d.format)) return {f.path + ".off.idx", f.path + ".sz.idx"};
  if (d.format != DataFormat::kTFRecord) return {};
  std::string name = fs::path(f.path).filename().string();
  name += ".idx";
  return {(root_of(d) / "index" / (f.eval ? "valid" : "train") / name).string()};
}

std::string temporary_name(const std::string& path) {
  const fs::path p(path);
  // Built by appends: GCC 12 at -O3 misreads `"." + std::string&&` as an overlapping copy
  // (-Wrestrict), which fails a -Werror release build.
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp";
  return (p.parent_path() / name).string();
}

std::vector<std::string> other_files(const DlioDataset& d, size_t limit) {
  const fs::path root = root_of(d);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  auto rel = [&](const std::string& p) { return fs::path(p).lexically_relative(root).string(); };
  std::set<std::string> known;
  for (const std::string& folder : dataset_folders(d))
    known.insert(rel(folder));
  for (const DatasetFile& f : dataset_files(d)) {
    known.insert(rel(f.path));
    known.insert(rel(temporary_name(f.path)));
    for (const std::string& index : index_files_of(d, f)) {
      known.insert(rel(index));
      known.insert(rel(temporary_name(index)));
    }
  }
  std::vector<std::string> other;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().lexically_relative(root).string();
    if (known.count(name) != 0) continue;
    other.push_back(name);
    if (it->is_directory(ec)) it.disable_recursion_pending();  // one entry for a whole folder
    if (other.size() >= limit) break;
  }
  std::sort(other.begin(), other.end());
  return other;
}

}  // namespace pipeprof::pipelines::formats
