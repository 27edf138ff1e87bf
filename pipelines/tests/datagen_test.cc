// Data generation in DLIO's layout (formats/datagen.h): names, folders and sizes as DLIO makes
// them; every format read back by pipeprof's own readers (and by numpy, h5py and PIL where
// python3 has them); idempotence, leftover temporary files, interruption and write errors. The
// streaming pieces the generator is built on are in datagen_pieces_test.cc.
#include "pipeprof/pipelines/datagen.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "formats/example.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/random_bytes.h"
#include "formats/tfrecord.h"
#include "io/byte_stream.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof_testing/temp_dir.h"
#include "python_util.h"

namespace pipeprof::pipelines::formats {
namespace {

namespace fs = std::filesystem;
using pipeprof::testing_support::TempDir;

DlioDataset small(const TempDir& tmp, DataFormat format) {
  DlioDataset d;
  d.data_folder = (tmp / "data").string();
  d.format = format;
  d.num_files_train = 4;
  d.num_files_eval = 2;
  d.num_samples_per_file = 3;
  d.record_length = 4096;
  d.record_length_stdev = format == DataFormat::kRaw ? 0 : 1024;
  return d;
}

std::vector<std::string> temporary_files(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().filename().string().ends_with(".tmp")) out.push_back(e.path().string());
  }
  return out;
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::span<const std::byte> view_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// ---- layout ----

TEST(DatagenLayout, NamesPaddingAndSubfoldersAsDlio) {
  DlioDataset d;
  d.data_folder = "/data/unet/";  // DLIO strips the trailing slash
  d.format = DataFormat::kNpz;
  d.num_files_train = 12;
  d.num_files_eval = 3;
  d.num_subfolders_train = 3;
  const auto files = dataset_files(d);
  ASSERT_EQ(files.size(), 15U);
  // i padded to the digits of N; subfolder i % 3 padded to the digits of 3.
  EXPECT_EQ(files[0].path, "/data/unet/train/0/img_00_of_12.npz");
  EXPECT_EQ(files[4].path, "/data/unet/train/1/img_04_of_12.npz");
  EXPECT_EQ(files[11].path, "/data/unet/train/2/img_11_of_12.npz");
  EXPECT_EQ(files[12].path, "/data/unet/valid/img_0_of_3.npz");
  EXPECT_TRUE(files[12].eval);
  EXPECT_EQ(files[12].index, 0);
  EXPECT_EQ(dataset_folders(d),
            (std::vector<std::string>{"/data/unet/train", "/data/unet/valid", "/data/unet/train/0",
                                      "/data/unet/train/1", "/data/unet/train/2"}));

  d.num_files_train = 10;  // "10" has two digits: img_00_of_10 .. img_09_of_10
  d.num_files_eval = 0;
  d.num_subfolders_train = 10;
  d.file_prefix = "sample";
  d.format = DataFormat::kTFRecord;
  const auto ten = dataset_files(d);
  EXPECT_EQ(ten[0].path, "/data/unet/train/00/sample_00_of_10.tfrecord");
  EXPECT_EQ(ten[9].path, "/data/unet/train/09/sample_09_of_10.tfrecord");
  d.num_subfolders_train = 1;  // one subfolder is none
  EXPECT_EQ(dataset_files(d)[3].path, "/data/unet/train/sample_03_of_10.tfrecord");
}

TEST(DatagenLayout, SizesFollowDlioDistribution) {
  DlioDataset d;
  d.data_folder = "/d";
  d.record_length = 10001.5;  // a float, as DLIO allows: int(sqrt) = 100
  d.num_samples_per_file = 2;
  for (const DatasetFile& f : dataset_files(d)) {
    EXPECT_EQ(f.dim1, 100);
    EXPECT_EQ(f.dim2, 100);
    EXPECT_EQ(f.bytes, 2U * 100 * 100);
  }
  // N(sqrt(len), stdev / (2 sqrt(len))): mean 1000, stdev 100 here.
  d.record_length = 1e6;
  d.record_length_stdev = 2e5;
  d.num_files_train = 2000;
  double sum = 0, sq = 0;
  const auto files = dataset_files(d);
  for (const DatasetFile& f : files) {
    for (const double v : {f.dim1, f.dim2}) {
      sum += v;
      sq += v * v;
    }
  }
  const double n = 2.0 * static_cast<double>(files.size());
  const double mean = sum / n;
  const double sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 1000, 8);
  EXPECT_NEAR(sd, 100, 8);
  // Deterministic from the seed; another seed, other sizes.
  EXPECT_EQ(dataset_files(d)[7].dim1, files[7].dim1);
  d.seed = 11;
  const auto other = dataset_files(d);
  EXPECT_FALSE(other[0].dim1 == files[0].dim1 && other[0].dim2 == files[0].dim2 &&
               other[1].dim1 == files[1].dim1);
  // Raw records are record_length bytes exactly.
  d.format = DataFormat::kRaw;
  d.record_length = 1000;
  d.record_length_stdev = 0;
  EXPECT_EQ(dataset_files(d)[0].bytes, 2U * 1000);  // two samples a file
}

TEST(DatagenLayout, BadValuesNameTheirKey) {
  auto key_of = [](DlioDataset d) -> std::string {
    try {
      validate(d);
    } catch (const DatasetConfigError& e) {
      return e.key();
    }
    return "";
  };
  DlioDataset ok;
  EXPECT_EQ(key_of(ok), "");
  DlioDataset d = ok;
  d.num_files_train = -1;
  EXPECT_EQ(key_of(d), "num_files_train");
  d = ok;
  d.num_files_train = 0;  // and no eval files: nothing to write
  EXPECT_EQ(key_of(d), "num_files_train");
  d = ok;
  d.num_samples_per_file = 0;
  EXPECT_EQ(key_of(d), "num_samples_per_file");
  d = ok;
  d.record_length = 0.5;
  EXPECT_EQ(key_of(d), "record_length");
  d = ok;
  d.record_length_stdev = -1;
  EXPECT_EQ(key_of(d), "record_length_stdev");
  d = ok;
  d.file_prefix = "a/b";
  EXPECT_EQ(key_of(d), "file_prefix");
  d = ok;
  d.num_subfolders_eval = -2;
  EXPECT_EQ(key_of(d), "num_subfolders_eval");
  d = ok;
  d.format = DataFormat::kRaw;
  d.record_length_stdev = 10;
  EXPECT_EQ(key_of(d), "record_length_stdev");
  d.record_length_stdev = 0;
  d.record_length = 100.5;
  EXPECT_EQ(key_of(d), "record_length");
  EXPECT_EQ(parse_data_format("hdf5"), DataFormat::kHdf5);
  EXPECT_EQ(parse_data_format("png"), DataFormat::kPng);
  EXPECT_EQ(parse_data_format("parquet"), std::nullopt);
  EXPECT_EQ(data_format_names(),
            "tfrecord, npz, npy, hdf5, jpeg, raw, indexed_binary, mmap_indexed_binary, csv, png");
}

// ---- every format, read back ----

class DatagenFormat : public ::testing::TestWithParam<DataFormat> {};

TEST_P(DatagenFormat, WritesTheLayoutAndReadsBack) {
  const TempDir tmp;
  const DlioDataset d = small(tmp, GetParam());
  const GenerateResult r = generate_dataset(d, {.threads = 2});
  EXPECT_EQ(r.files_written, 6);
  EXPECT_EQ(r.files_kept, 0);
  EXPECT_FALSE(r.interrupted);
  EXPECT_TRUE(temporary_files(d.data_folder).empty());
  EXPECT_TRUE(other_files(d).empty());
  const auto files = dataset_files(d);
  uint64_t on_disk = 0;
  std::set<std::string> payloads;
  for (const DatasetFile& f : files) {
    ASSERT_TRUE(fs::is_regular_file(f.path)) << f.path;
    on_disk += fs::file_size(f.path);
    const int64_t n = d.num_samples_per_file;
    switch (d.format) {
      case DataFormat::kTFRecord: {
        TFRecordReader reader(io::open_stream(f.path, io::Compression::kNone));
        std::string rebuilt;
        int64_t records = 0;
        while (auto rec = reader.next()) {
          ++records;
          const auto features = decode_example(rec->bytes(), {"image", "size"});
          ASSERT_EQ(features[0].kind, FeatureKind::kBytes);
          ASSERT_EQ(features[0].bytes.size(), 1U);
          EXPECT_EQ(static_cast<int64_t>(features[0].bytes[0].size()), f.dim1 * f.dim2);
          EXPECT_EQ(features[1].int64s, std::vector<int64_t>{64});  // int(sqrt(4096))
          const auto& img = features[0].bytes[0];
          payloads.insert(std::string(reinterpret_cast<const char*>(img.data()), img.size()));
          rebuilt += tfrecord_frame(encode_example(
              {{"image",
                {.kind = FeatureKind::kBytes,
                 .bytes = {std::string(reinterpret_cast<const char*>(img.data()), img.size())}}},
               {"size", {.kind = FeatureKind::kInt64, .int64s = {64}}}}));
        }
        EXPECT_EQ(records, n);
        // Byte for byte what TFRecordWriter and encode_example write.
        EXPECT_EQ(rebuilt, contents(f.path));
        break;
      }
      case DataFormat::kNpz: {
        const NamedTensors a = read_npz(f.path);
        ASSERT_EQ(a.size(), 2U);
        EXPECT_EQ(a[0].first, "x");
        EXPECT_EQ(a[0].second.dtype(), DType::kUInt8);
        EXPECT_EQ(a[0].second.shape(), (Shape{f.dim1, f.dim2, n}));
        EXPECT_EQ(a[1].first, "y");
        EXPECT_EQ(a[1].second.dtype(), DType::kInt64);
        EXPECT_EQ(a[1].second.shape(), (Shape{n}));
        for (int64_t v : a[1].second.values<int64_t>())
          EXPECT_EQ(v, 0);
        payloads.insert(
            std::string(reinterpret_cast<const char*>(a[0].second.data()), a[0].second.nbytes()));
        break;
      }
      case DataFormat::kNpy: {
        const Tensor t = read_npy(f.path);
        EXPECT_EQ(t.dtype(), DType::kUInt8);
        EXPECT_EQ(t.shape(), (Shape{f.dim1, f.dim2, n}));
        payloads.insert(std::string(reinterpret_cast<const char*>(t.data()), t.nbytes()));
        break;
      }
      case DataFormat::kHdf5: {
        const NamedTensors a = read_hdf5(f.path, {"records", "labels"});
        EXPECT_EQ(a[0].second.dtype(), DType::kUInt8);
        EXPECT_EQ(a[0].second.shape(), (Shape{n, f.dim1, f.dim2}));
        EXPECT_EQ(a[1].second.shape(), (Shape{n}));
        payloads.insert(
            std::string(reinterpret_cast<const char*>(a[0].second.data()), a[0].second.nbytes()));
        break;
      }
      case DataFormat::kJpeg: {
        const std::string bytes = read_file(f.path);
        const Tensor img = decode_jpeg(view_of(bytes), 0, f.path);
        EXPECT_EQ(img.shape(), (Shape{f.dim1, f.dim2, 1}));
        payloads.insert(bytes);
        break;
      }
      case DataFormat::kRaw:
        EXPECT_EQ(fs::file_size(f.path), static_cast<uint64_t>(n * 4096));
        payloads.insert(contents(f.path));
        break;
      case DataFormat::kIndexedBinary:
      case DataFormat::kMmapIndexedBinary: {
        // The samples back to back, read through their index as the source reads them.
        const uint64_t sample = static_cast<uint64_t>(f.dim1 * f.dim2);
        EXPECT_EQ(fs::file_size(f.path), sample * static_cast<uint64_t>(n));
        const auto elements = indexed_binary({f.path}).collect();
        ASSERT_EQ(elements.size(), static_cast<size_t>(n));
        std::string joined;
        for (const auto& e : elements) {
          EXPECT_EQ(e[0].nbytes(), sample);
          joined.append(reinterpret_cast<const char*>(e[0].data()), e[0].nbytes());
        }
        EXPECT_EQ(joined, contents(f.path));
        payloads.insert(joined);
        break;
      }
      case DataFormat::kPng: {
        // An 8-bit grayscale image: its header, and its pixels inflated from the IDAT chunks with
        // zlib (a filter byte and the row's bytes per row).
        const std::string bytes = read_file(f.path);
        ASSERT_GT(bytes.size(), 33U);
        EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
        auto be32 = [&](size_t at) {
          return (uint32_t{static_cast<uint8_t>(bytes[at])} << 24) |
                 (uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 16) |
                 (uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(bytes[at + 3])};
        };
        EXPECT_EQ(bytes.substr(12, 4), "IHDR");
        EXPECT_EQ(be32(16), static_cast<uint32_t>(f.dim2));  // width
        EXPECT_EQ(be32(20), static_cast<uint32_t>(f.dim1));  // height
        EXPECT_EQ(bytes[24], 8);                             // bits
        EXPECT_EQ(bytes[25], 0);                             // grayscale
        std::string idat;
        for (size_t at = 8; at + 12 <= bytes.size();) {
          const uint32_t length = be32(at);
          if (bytes.substr(at + 4, 4) == "IDAT") idat += bytes.substr(at + 8, length);
          at += 12 + length;
        }
        uLongf inflated = static_cast<uLongf>(f.dim1 * (f.dim2 + 1));
        std::string pixels(inflated, '\0');
        ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(pixels.data()), &inflated,
                             reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
                  Z_OK);
        EXPECT_EQ(inflated, static_cast<uLongf>(f.dim1 * (f.dim2 + 1)));
        payloads.insert(bytes);
        break;
      }
      case DataFormat::kCsv: {
        // pandas' layout: ",0,1,...", then "<index>,<value>,..." a sample per row, values 0..255.
        std::istringstream in(read_file(f.path));
        std::string line;
        ASSERT_TRUE(std::getline(in, line));
        EXPECT_EQ(std::count(line.begin(), line.end(), ','), f.dim1 * f.dim2);
        EXPECT_TRUE(line.starts_with(",0,1,2,")) << line.substr(0, 20);
        int64_t rows = 0;
        while (std::getline(in, line)) {
          std::istringstream fields(line);
          std::string field;
          ASSERT_TRUE(std::getline(fields, field, ','));
          EXPECT_EQ(field, std::to_string(rows));
          int64_t values = 0;
          while (std::getline(fields, field, ',')) {
            const int v = std::stoi(field);
            EXPECT_TRUE(v >= 0 && v <= 255) << field;
            ++values;
          }
          EXPECT_EQ(values, f.dim1 * f.dim2);
          ++rows;
        }
        EXPECT_EQ(rows, n);
        payloads.insert(contents(f.path));
        break;
      }
    }
  }
  EXPECT_EQ(r.bytes_written, on_disk);
  // Every file (every sample, for tfrecord) has its own payload.
  EXPECT_EQ(payloads.size(), d.format == DataFormat::kTFRecord ? files.size() * 3 : files.size());
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DatagenFormat,
                         ::testing::Values(DataFormat::kTFRecord, DataFormat::kNpz,
                                           DataFormat::kNpy, DataFormat::kHdf5, DataFormat::kJpeg,
                                           DataFormat::kRaw, DataFormat::kIndexedBinary,
                                           DataFormat::kMmapIndexedBinary, DataFormat::kCsv,
                                           DataFormat::kPng),
                         [](const auto& param_info) {
                           return std::string(data_format_name(param_info.param));
                         });

TEST(Datagen, RawRecordsReadByFixedLengthRecords) {
  const TempDir tmp;
  DlioDataset d = small(tmp, DataFormat::kRaw);
  d.record_length = 1000;
  generate_dataset(d);
  std::vector<std::string> names;
  for (const DatasetFile& f : dataset_files(d))
    names.push_back(f.path);
  const auto records = fixed_length_records(names, {.record_bytes = 1000}).collect();
  ASSERT_EQ(records.size(), 6U * 3);
  for (const Element& e : records)
    EXPECT_EQ(e[0].shape(), (Shape{1000}));
}

TEST(Datagen, PayloadLooksUniform) {
  const TempDir tmp;
  DlioDataset d = small(tmp, DataFormat::kRaw);
  d.num_files_train = 1;
  d.num_files_eval = 0;
  d.num_samples_per_file = 1;
  d.record_length = 1 << 20;
  generate_dataset(d);
  const std::string s = contents(dataset_files(d)[0].path);
  std::vector<double> count(256);
  for (unsigned char c : s)
    count[c] += 1;
  const double expected = static_cast<double>(s.size()) / 256;
  double chi2 = 0;
  for (double c : count)
    chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 400) << "255 degrees of freedom";  // p < 1e-7 for a uniform source
}

TEST(Datagen, PythonReadsEveryFormat) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  PIPEPROF_REQUIRE_PYTHON_MODULE("h5py");
  PIPEPROF_REQUIRE_PYTHON_MODULE("PIL");
  const TempDir tmp;
  for (const DataFormat f : {DataFormat::kNpz, DataFormat::kNpy, DataFormat::kHdf5, DataFormat::kJpeg,
                            DataFormat::kCsv, DataFormat::kPng}) {
    DlioDataset d = small(tmp, f);
    d.data_folder = (tmp / std::string(data_format_name(f))).string();
    generate_dataset(d);
  }
  // Each file's shape as numpy / h5py / PIL see it, against the sizes of the layout.
  const auto r = testing::run_python(R"PY(
import glob, os, sys
import numpy as np, h5py
from PIL import Image
root = sys.argv[1]
for path in sorted(glob.glob(root + "/*/*/*.*")):
    fmt = path.rsplit(".", 1)[1]
    if fmt == "npz":
        import zipfile
        with zipfile.ZipFile(path) as archive:
            assert archive.testzip() is None  # every member's CRC-32
        z = np.load(path)
        assert sorted(z.files) == ["x", "y"], z.files
        assert z["x"].dtype == np.uint8 and z["y"].tolist() == [0, 0, 0]
        shape = z["x"].shape
    elif fmt == "npy":
        a = np.load(path)
        assert a.dtype == np.uint8
        shape = a.shape
    elif fmt == "hdf5":
        with h5py.File(path, "r") as h:
            assert h["records"].dtype == np.uint8 and list(h["labels"][:]) == [0, 0, 0]
            n, d1, d2 = h["records"].shape
            shape = (d1, d2, n)
    elif fmt == "jpeg" or fmt == "png":
        im = Image.open(path)
        assert im.mode == "L", im.mode
        im.load()  # every pixel decoded
        shape = (im.size[1], im.size[0], 1)
    elif fmt == "csv":
        # pandas' layout: a header row, then an index column and the values of each sample.
        rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
        assert rows[:, 0].tolist() == list(range(rows.shape[0])), rows[:, 0]
        assert rows[:, 1:].min() >= 0 and rows[:, 1:].max() <= 255
        with open(path) as f:
            assert f.readline().rstrip("\n") == "," + ",".join(str(i) for i in range(rows.shape[1] - 1))
        shape = (rows.shape[1] - 1, rows.shape[0])
    print(os.path.relpath(path, root), *shape)
)PY",
                                     tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  std::string expected;
  std::vector<std::pair<std::string, std::string>> lines;
  for (const DataFormat f : {DataFormat::kNpz, DataFormat::kNpy, DataFormat::kHdf5, DataFormat::kJpeg,
                            DataFormat::kCsv, DataFormat::kPng}) {
    DlioDataset d = small(tmp, f);
    d.data_folder = (tmp / std::string(data_format_name(f))).string();
    for (const DatasetFile& file : dataset_files(d)) {
      lines.emplace_back(
          fs::path(file.path).lexically_relative(tmp.path()).string(),
          f == DataFormat::kCsv
              ? fmt::format("{} {}", file.dim1 * file.dim2, 3)
              : fmt::format("{} {} {}", file.dim1, file.dim2,
                            f == DataFormat::kJpeg || f == DataFormat::kPng ? 1 : 3));
    }
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& [path, shape] : lines)
    expected += path + " " + shape + "\n";
  EXPECT_EQ(r.out, expected);
}

// ---- idempotence, leftovers, interruption, errors ----

TEST(Datagen, SecondRunKeepsCompleteFilesAndReplacesALeftover) {
  const TempDir tmp;
  const DlioDataset d = small(tmp, DataFormat::kNpy);
  generate_dataset(d);
  const auto files = dataset_files(d);
  std::vector<std::string> before;
  for (const DatasetFile& f : files)
    before.push_back(contents(f.path));
  const auto mtime = fs::last_write_time(files[0].path);

  GenerateResult again = generate_dataset(d);
  EXPECT_EQ(again.files_written, 0);
  EXPECT_EQ(again.files_kept, 6);
  EXPECT_EQ(again.bytes_written, 0U);
  EXPECT_EQ(fs::last_write_time(files[0].path), mtime);

  // A run killed while writing file 2 left its temporary file; file 4 is complete but a stale
  // temporary lies beside it.
  fs::remove(files[2].path);
  std::ofstream(temporary_name(files[2].path)) << "partial";
  std::ofstream(temporary_name(files[4].path)) << "stale";
  EXPECT_TRUE(other_files(d).empty());  // temporaries are the dataset's own
  again = generate_dataset(d);
  EXPECT_EQ(again.files_written, 1);
  EXPECT_EQ(again.files_kept, 5);
  EXPECT_TRUE(temporary_files(d.data_folder).empty());
  for (size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(contents(files[i].path), before[i]) << files[i].path;  // same seed, same bytes

  again = generate_dataset(d, {.overwrite = true});
  EXPECT_EQ(again.files_written, 6);
  EXPECT_EQ(contents(files[3].path), before[3]);
}

// A file under its final name is kept only when it is what the layout writes: cut, emptied or
// written with another record length, it is written again (once "kept 4 complete", exit 0, and a
// workload with generate_data never repaired them).
TEST(Datagen, FilesThatDoNotMatchTheLayoutAreWrittenAgain) {
  for (const DataFormat format : {DataFormat::kNpz, DataFormat::kNpy, DataFormat::kTFRecord,
                                  DataFormat::kRaw, DataFormat::kHdf5, DataFormat::kJpeg}) {
    const std::string name(data_format_name(format));
    const TempDir tmp(name);
    DlioDataset d = small(tmp, format);
    generate_dataset(d);
    const auto files = dataset_files(d);
    const std::string whole = contents(files[1].path);
    std::ofstream(files[0].path, std::ios::trunc);  // 0 bytes
    std::ofstream(files[1].path, std::ios::trunc | std::ios::binary) << whole.substr(0, whole.size() / 2);
    GenerateResult r = generate_dataset(d);
    EXPECT_EQ(r.files_rewritten, 2) << name;
    EXPECT_EQ(r.files_written, 2) << name;
    EXPECT_EQ(r.files_kept, static_cast<int64_t>(files.size()) - 2) << name;
    EXPECT_NE(r.first_rewritten.find(files[0].path + ": "), std::string::npos) << name << ": " << r.first_rewritten;
    EXPECT_EQ(contents(files[1].path), whole) << name;  // hdf5 too: its objects carry no time
    // A second run finds every file as the layout writes it.
    r = generate_dataset(d);
    EXPECT_EQ(r.files_rewritten, 0) << name << ": " << r.first_rewritten;
    EXPECT_EQ(r.files_kept, static_cast<int64_t>(files.size())) << name;
    if (format == DataFormat::kJpeg) continue;  // the encoder's size: another length may fit
    // Another record length: every file's size differs.
    d.record_length *= 2;
    r = generate_dataset(d);
    EXPECT_EQ(r.files_rewritten, static_cast<int64_t>(files.size())) << name;
    EXPECT_NE(r.first_rewritten.find(" where this layout writes "), std::string::npos)
        << name << ": " << r.first_rewritten;
  }
}

TEST(Datagen, OtherFilesAreListed) {
  const TempDir tmp;
  const DlioDataset d = small(tmp, DataFormat::kRaw);
  EXPECT_TRUE(other_files(d).empty());  // no folder yet
  generate_dataset(d);
  EXPECT_TRUE(other_files(d).empty());
  std::ofstream(tmp / "data" / "notes.txt") << "x";
  fs::create_directories(tmp / "data" / "index" / "train");
  std::ofstream(tmp / "data" / "train" / "img_9_of_9.raw") << "x";
  EXPECT_EQ(other_files(d),
            (std::vector<std::string>{"index", "notes.txt", "train/img_9_of_9.raw"}));
  EXPECT_EQ(other_files(d, 1).size(), 1U);
}

// DLIO's index/ files for tfrecord, checked against the records' offsets as the reader finds them
// (DALI's tfrecord2idx: "<offset> <framed length>" per record).
TEST(Datagen, TFRecordIndexFilesMatchTheRecords) {
  const TempDir tmp;
  DlioDataset d = small(tmp, DataFormat::kTFRecord);
  d.num_files_eval = 1;
  generate_dataset(d);
  EXPECT_TRUE(other_files(d).empty());
  const auto files = dataset_files(d);
  for (const DatasetFile& f : files) {
    ASSERT_EQ(index_files_of(d, f).size(), 1U);
    const std::string index = index_files_of(d, f)[0];
    EXPECT_EQ(index, (tmp / "data" / "index" / (f.eval ? "valid" : "train") /
                      (fs::path(f.path).filename().string() + ".idx"))
                         .string());
    std::string expected;
    TFRecordReader reader(io::open_stream(f.path, io::Compression::kNone));
    std::vector<uint64_t> offsets;
    while (auto r = reader.next())
      offsets.push_back(r->offset);
    offsets.push_back(fs::file_size(f.path));
    ASSERT_EQ(offsets.size(), static_cast<size_t>(d.num_samples_per_file) + 1);
    for (size_t i = 0; i + 1 < offsets.size(); ++i)
      expected += fmt::format("{} {}\n", offsets[i], offsets[i + 1] - offsets[i]);
    EXPECT_EQ(contents(index), expected) << index;
  }
  EXPECT_TRUE(index_files_of(small(tmp, DataFormat::kNpz), files[0]).empty());
  // A complete file whose index went missing gets it back; the file itself is kept.
  fs::remove(index_files_of(d, files[1])[0]);
  const std::string data_before = contents(files[1].path);
  const GenerateResult again = generate_dataset(d);
  EXPECT_EQ(again.files_written, 0);
  EXPECT_TRUE(fs::is_regular_file(index_files_of(d, files[1])[0]));
  EXPECT_EQ(contents(files[1].path), data_before);
}

// indexed_binary: an index that went missing or short beside a complete data file is written again
// (the data file kept); the index files are not "other files" of the folder.
TEST(Datagen, IndexedBinaryIndexesAreRepairedBesideCompleteFiles) {
  const TempDir tmp;
  const DlioDataset d = small(tmp, DataFormat::kIndexedBinary);
  generate_dataset(d);
  EXPECT_TRUE(other_files(d).empty());
  const auto files = dataset_files(d);
  const std::vector<std::string> index = index_files_of(d, files[0]);
  ASSERT_EQ(index.size(), 2U);
  EXPECT_EQ(index[0], files[0].path + ".off.idx");
  EXPECT_EQ(index[1], files[0].path + ".sz.idx");
  const std::string offsets = contents(index[0]);
  fs::remove(index[0]);
  fs::resize_file(index[1], 8);
  const GenerateResult again = generate_dataset(d);
  EXPECT_EQ(again.files_written, 0);
  EXPECT_EQ(contents(index[0]), offsets);
  EXPECT_EQ(fs::file_size(index[1]), 8 * static_cast<uint64_t>(d.num_samples_per_file));
}

TEST(Datagen, StopLeavesNoPartialFile) {
  const TempDir tmp;
  DlioDataset d = small(tmp, DataFormat::kTFRecord);
  d.num_files_train = 8;
  d.num_samples_per_file = 8;
  d.record_length = 8 << 20;  // 64 MiB a file: long enough to be stopped in the middle
  d.record_length_stdev = 0;
  std::atomic<bool> stop{false};
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop = true;
  });
  const GenerateResult r = generate_dataset(d, {.threads = 2, .stop = &stop});
  EXPECT_TRUE(r.interrupted);
  EXPECT_LT(r.files_written, 10);
  EXPECT_TRUE(temporary_files(d.data_folder).empty());
  for (const DatasetFile& f : dataset_files(d)) {  // the files that are there are whole
    if (!fs::exists(f.path)) continue;
    TFRecordReader reader(io::open_stream(f.path, io::Compression::kNone));
    int records = 0;
    while (reader.next())
      ++records;
    EXPECT_EQ(records, 8) << f.path;
  }
}

TEST(Datagen, AWriteErrorNamesTheFileAndLeavesNothing) {
  const TempDir tmp;
  const DlioDataset d = small(tmp, DataFormat::kRaw);
  const auto files = dataset_files(d);
  fs::create_directories(fs::path(files[1].path).parent_path());
  fs::create_directories(files[1].path + "/in_the_way");  // the final name is a folder
  try {
    generate_dataset(d, {.threads = 1});
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(files[1].path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(temporary_files(d.data_folder).empty());
}

}  // namespace
}  // namespace pipeprof::pipelines::formats
