// The readers and writers of pipelines/src/formats/ (npz's own tests in npz_test.cc): round trips,
// files written by numpy, h5py and PIL read by pipeprof and pipeprof's files read by them, and the
// corruption battery (truncation, flipped bytes, wrong magic, huge lengths and shapes, wrong dtype
// strings): every case is a FormatError naming the file, never a crash, a hang or an allocation
// beyond the file's size.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/format_error.h"
#include "formats/hdf5.h"
#include "formats/jpeg.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "formats_test_util.h"
#include "pipeprof_testing/temp_dir.h"
#include "python_util.h"

namespace pipeprof::pipelines::formats {
namespace {

using pipeprof::testing_support::TempDir;
using testing::run_python;

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers

// --- npy ---

TEST(Npy, RoundTripsEveryDtypeVersionAndOrder) {
  for (DType dtype : kDtypes) {
    for (int major : {1, 2, 3}) {
      for (bool fortran : {false, true}) {
        const Tensor t = arange(dtype, {3, 4, 5});
        const auto bytes = encode_npy(t, {.major = major, .fortran_order = fortran});
        EXPECT_EQ(std::to_integer<int>(bytes[6]), major);
        EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0U) << "the header is padded to 64 bytes";
        const Tensor back = decode_npy(bytes, "x.npy");
        EXPECT_EQ(back, t) << dtype_name(dtype) << " v" << major << " fortran " << fortran;
      }
    }
  }
  const Tensor scalar = Tensor::scalar<double>(2.5);
  EXPECT_EQ(decode_npy(encode_npy(scalar), "s.npy"), scalar);
  const Tensor empty(DType::kFloat32, {0, 3});
  EXPECT_EQ(decode_npy(encode_npy(empty), "e.npy"), empty);
}

TEST(Npy, CContiguousFilesAreZeroCopyViewsOfTheMapping) {
  const TempDir tmp;
  const auto path = (tmp / "x.npy").string();
  write_npy(path, arange(DType::kFloat32, {16, 16}));
  const auto file = MappedFile::open(path);
  const Tensor t = decode_npy(file->bytes(), path, file);
  EXPECT_GE(t.data(), file->bytes().data());
  EXPECT_LT(t.data(), file->bytes().data() + file->size());
  EXPECT_EQ(t, arange(DType::kFloat32, {16, 16}));
  // Fortran order needs a conversion: a tensor of its own.
  write_npy(path, arange(DType::kFloat32, {16, 16}), {.fortran_order = true});
  const auto file2 = MappedFile::open(path);
  const Tensor f = decode_npy(file2->bytes(), path, file2);
  EXPECT_TRUE(f.data() < file2->bytes().data() || f.data() >= file2->bytes().data() + file2->size());
  EXPECT_EQ(f, arange(DType::kFloat32, {16, 16}));
  // Writing to a view copies first: the file is unchanged.
  Tensor w = read_npy(path);
  w.mutable_values<float>()[0] = 99;
  EXPECT_EQ(read_npy(path), arange(DType::kFloat32, {16, 16}));
}

constexpr const char* kNumpyWrites = R"PY(
import json, sys
import numpy as np
d = sys.argv[1]
cases = {
  'f4': np.arange(12, dtype='<f4').reshape(3, 4) / 3,
  'f8be': np.arange(6, dtype='>f8').reshape(2, 3) * 1.5,
  'i2': np.arange(-5, 5, dtype='<i2'),
  'i1': np.array([-128, 0, 127], dtype='i1'),
  'u1': np.arange(20, dtype='|u1'),
  'u2': np.array([0, 65535, 7], dtype='<u2'),
  'u4': np.array([0, 4000000000, 7], dtype='<u4'),
  'b1': np.array([True, False, True]),
  'f2': np.array([0.5, -2.25, 1024, 6.1e-5], dtype='<f2'),
  'i4be': np.arange(-3, 3, dtype='>i4'),
  'i8': np.arange(10, dtype='<i8').reshape(2, 5) * 1000000007,
  'fortran2d': np.asfortranarray(np.arange(12, dtype='<f4').reshape(3, 4)),
  'fortran3d': np.asfortranarray(np.arange(24, dtype='<i8').reshape(2, 3, 4)),
  'scalar': np.array(3.5),
  'empty': np.zeros((0, 3), dtype='<f4'),
}
expected = {}
def note(name, a):
  expected[name] = {'shape': list(a.shape), 'values': np.ascontiguousarray(a).astype('f8').ravel().tolist()}
for name, a in cases.items():
  np.save(f'{d}/{name}.npy', a)
  note(name, a)
a = np.arange(30, dtype='<f8').reshape(5, 6)
for v in [(1, 0), (2, 0), (3, 0)]:
  with open(f'{d}/v{v[0]}.npy', 'wb') as f:
    np.lib.format.write_array(f, a, version=v)
  note(f'v{v[0]}', a)
z = {'x': np.arange(7, dtype='<i4'), 'y': np.asfortranarray(np.arange(6, dtype='<f8').reshape(2, 3))}
np.savez(f'{d}/stored.npz', **z)
np.savez_compressed(f'{d}/deflated.npz', **z)
for k, v in z.items():
  note('npz_' + k, v)
json.dump(expected, open(f'{d}/expected.json', 'w'))
)PY";

TEST(Npy, ReadsWhatNumpyWrites) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  const TempDir tmp;
  const auto r = run_python(kNumpyWrites, tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto expected = nlohmann::json::parse(read_file((tmp / "expected.json").string()));
  for (const auto& [name, want] : expected.items()) {
    if (name.starts_with("npz_")) continue;
    SCOPED_TRACE(name);
    const Tensor t = read_npy((tmp / (name + ".npy")).string());
    EXPECT_EQ(t.shape(), shape_of(want["shape"]));
    EXPECT_EQ(as_doubles(t), want["values"].get<std::vector<double>>());
  }
  EXPECT_EQ(read_npy((tmp / "u4.npy").string()).dtype(), DType::kInt64);
  EXPECT_EQ(read_npy((tmp / "b1.npy").string()).dtype(), DType::kBool);
  EXPECT_EQ(read_npy((tmp / "f2.npy").string()).dtype(), DType::kFloat32);
  for (const char* archive : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(archive);
    const NamedTensors arrays = read_npz((tmp / archive).string());
    ASSERT_EQ(arrays.size(), 2U);
    EXPECT_EQ(arrays[0].first, "x");
    EXPECT_EQ(arrays[1].first, "y");
    for (const auto& [key, t] : arrays) {
      EXPECT_EQ(t.shape(), shape_of(expected["npz_" + key]["shape"]));
      EXPECT_EQ(as_doubles(t), expected["npz_" + key]["values"].get<std::vector<double>>());
    }
    const NamedTensors y = read_npz((tmp / archive).string(), {"y"});
    ASSERT_EQ(y.size(), 1U);
    EXPECT_EQ(y[0].first, "y");
  }
}

constexpr const char* kNumpyReads = R"PY(
import json, os, sys, zipfile
import numpy as np
d = sys.argv[1]
out = {}
for name in sorted(os.listdir(d)):
  if name.endswith('.npy'):
    a = np.load(f'{d}/{name}')
    out[name] = {'descr': a.dtype.str, 'shape': list(a.shape), 'fortran': bool(a.flags.f_contiguous and a.ndim > 1),
                 'values': np.ascontiguousarray(a).astype('f8').ravel().tolist()}
  elif name.endswith('.npz'):
    z = np.load(f'{d}/{name}')
    methods = sorted({i.compress_type for i in zipfile.ZipFile(f'{d}/{name}').infolist()})
    out[name] = {'keys': list(z.keys()), 'methods': methods,
                 'values': {k: np.ascontiguousarray(z[k]).astype('f8').ravel().tolist() for k in z.keys()},
                 'shapes': {k: list(z[k].shape) for k in z.keys()}}
json.dump(out, open(f'{d}/read.json', 'w'))
)PY";

TEST(Npy, NumpyReadsWhatPipeprofWrites) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  const TempDir tmp;
  std::map<std::string, Tensor> written;
  for (DType dtype : kDtypes) {
    for (int major : {1, 2, 3}) {
      for (bool fortran : {false, true}) {
        const std::string name =
            fmt::format("{}_v{}_{}.npy", dtype_name(dtype), major, fortran ? "f" : "c");
        written[name] = arange(dtype, {2, 3, 4});
        write_npy((tmp / name).string(), written[name], {.major = major, .fortran_order = fortran});
      }
    }
  }
  const NamedTensors z{{"a", arange(DType::kFloat32, {4, 5})}, {"b", arange(DType::kInt64, {3})}};
  write_npz((tmp / "stored.npz").string(), z, false);
  write_npz((tmp / "deflated.npz").string(), z, true);
  const auto r = run_python(kNumpyReads, tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto read = nlohmann::json::parse(read_file((tmp / "read.json").string()));
  for (const auto& [name, t] : written) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(read.contains(name));
    EXPECT_EQ(read[name]["shape"].get<Shape>(), t.shape());
    EXPECT_EQ(read[name]["values"].get<std::vector<double>>(), as_doubles(t));
    EXPECT_EQ(read[name]["fortran"].get<bool>(), name.ends_with("_f.npy"));
  }
  EXPECT_EQ(read["stored.npz"]["methods"], nlohmann::json::array({0}));  // ZIP_STORED
  EXPECT_EQ(read["deflated.npz"]["methods"], nlohmann::json::array({8}));  // ZIP_DEFLATED
  for (const char* archive : {"stored.npz", "deflated.npz"}) {
    EXPECT_EQ(read[archive]["keys"], nlohmann::json::array({"a", "b"}));
    EXPECT_EQ(read[archive]["values"]["a"].get<std::vector<double>>(), as_doubles(z[0].second));
    EXPECT_EQ(read[archive]["values"]["b"].get<std::vector<double>>(), as_doubles(z[1].second));
  }
}

// A .npy file with the given header dict (padded) and payload.
std::vector<std::byte> npy_with_header(const std::string& dict, size_t payload_bytes) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64 != 0)
    h.push_back(' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(h.size() & 0xFF));
  out.push_back(static_cast<char>(h.size() >> 8));
  out += h;
  out.append(payload_bytes, '\x01');
  return bytes_of(out);
}

TEST(NpyCorruption, TruncationWrongMagicAndVersionAreErrorsNamingTheOffset) {
  const auto good = encode_npy(arange(DType::kFloat32, {8, 8}));
  for (size_t cut : {size_t{0}, size_t{5}, size_t{9}, size_t{11}, size_t{40}, size_t{63}, size_t{64},
                     good.size() / 2, good.size() - 1}) {
    const std::vector<std::byte> bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { decode_npy(bytes, "cut.npy"); }, {"cut.npy", "offset"},
                        "truncated at " + std::to_string(cut));
  }
  auto magic = good;
  magic[1] = std::byte{'X'};
  expect_format_error([&] { decode_npy(magic, "m.npy"); }, {"m.npy", "offset 0", "magic"}, "magic");
  auto version = good;
  version[6] = std::byte{4};
  expect_format_error([&] { decode_npy(version, "v.npy"); }, {"offset 6", "version 4.0"}, "version");
  auto length = good;
  length[8] = std::byte{0xFF};
  length[9] = std::byte{0xFF};
  expect_format_error([&] { decode_npy(length, "l.npy"); }, {"offset 8", "header length 65535"},
                      "header length");
}

TEST(NpyCorruption, HugeShapesAreRefusedBeforeAnyAllocation) {
  for (const char* shape : {"(1099511627776,)", "(4294967296, 4294967296, 4294967296)",
                            "(9223372036854775807, 2)", "(3, 100)"}) {
    const auto bytes = npy_with_header(
        fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shape), 64);
    expect_format_error([&] { decode_npy(bytes, "big.npy"); }, {"big.npy: offset "}, shape);
  }
  const auto negative = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 64);
  expect_format_error([&] { decode_npy(negative, "n.npy"); }, {"negative dimension"}, "negative");
}

TEST(NpyCorruption, WrongDtypeStringsAreNamed) {
  for (const char* descr : {"<c8", "|O", "<U10", "<u8", "xyz", "<f16", "<f3", "|V8", "<M8"}) {
    const auto bytes = npy_with_header(
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (2,), }}", descr), 64);
    expect_format_error([&] { decode_npy(bytes, "d.npy"); }, {"d.npy", std::string("'") + descr + "'"},
                        descr);
  }
  const auto record = npy_with_header(
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 64);
  expect_format_error([&] { decode_npy(record, "r.npy"); }, {"structured"}, "record");
  const auto garbage = npy_with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 64);
  expect_format_error([&] { decode_npy(garbage, "g.npy"); }, {"True or False"}, "bool");
}

TEST(NpyCorruption, FlippedHeaderBytesNeverCrash) {
  const auto good = encode_npy(arange(DType::kInt32, {4, 4}));
  int errors = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= std::byte{0xFF};
    try {
      const Tensor t = decode_npy(bad, "f.npy");
      EXPECT_LE(t.nbytes(), bad.size());
    } catch (const FormatError&) {
      ++errors;
    }
  }
  EXPECT_GE(errors, 60);  // every byte of the magic, version, length and most of the dict
}

// --- hdf5 ---

constexpr const char* kH5pyWrites = R"PY(
import json, sys
import numpy as np, h5py
d = sys.argv[1]
data = {
  'a': np.arange(12, dtype='<f4').reshape(3, 4) / 4,
  'bools': np.array([True, False, True, True]),
  'g/b': np.arange(-4, 4, dtype='<i2'),
  'u': np.arange(10, dtype='u1'),
  'z': np.arange(1000, dtype='<f8').reshape(10, 100) * 0.5,
  'be': np.arange(5, dtype='>i8'),
}
with h5py.File(f'{d}/x.h5', 'w') as f:
  for k, v in data.items():
    if k == 'z':
      f.create_dataset(k, data=v, compression='gzip', chunks=(2, 100))
    else:
      f.create_dataset(k, data=v)
with h5py.File(f'{d}/big.h5', 'w') as f:
  f.create_dataset('big', shape=(2**40,), dtype='f4', chunks=(1024,))
with h5py.File(f'{d}/strings.h5', 'w') as f:
  f.create_dataset('s', data=np.array([b'abc', b'de']))
  f.create_dataset('c', data=np.zeros(3, dtype='c8'))
json.dump({k: {'shape': list(v.shape), 'values': v.astype('f8').ravel().tolist()} for k, v in data.items()},
          open(f'{d}/expected.json', 'w'))
)PY";

TEST(Hdf5, ReadsWhatH5pyWrites) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("h5py");
  const TempDir tmp;
  const auto r = run_python(kH5pyWrites, tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto expected = nlohmann::json::parse(read_file((tmp / "expected.json").string()));
  const NamedTensors all = read_hdf5((tmp / "x.h5").string());
  std::vector<std::string> names;
  for (const auto& [name, t] : all) {
    names.push_back(name);
    SCOPED_TRACE(name);
    ASSERT_TRUE(expected.contains(name));
    EXPECT_EQ(t.shape(), shape_of(expected[name]["shape"]));
    EXPECT_EQ(as_doubles(t), expected[name]["values"].get<std::vector<double>>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "be", "bools", "g/b", "u", "z"}));
  const NamedTensors two = read_hdf5((tmp / "x.h5").string(), {"z", "/bools"});
  ASSERT_EQ(two.size(), 2U);
  EXPECT_EQ(two[1].second.dtype(), DType::kBool);
  EXPECT_EQ(two[0].second.dtype(), DType::kFloat64);
  expect_format_error([&] { read_hdf5((tmp / "big.h5").string()); },
                      {"big.h5", "dataset 'big'", "more than the file"}, "huge shape");
  expect_format_error([&] { read_hdf5((tmp / "strings.h5").string(), {"s"}); },
                      {"strings.h5", "dataset 's'", "no tensor dtype"}, "strings");
  expect_format_error([&] { read_hdf5((tmp / "strings.h5").string(), {"c"}); },
                      {"dataset 'c'", "no tensor dtype"}, "complex");
  expect_format_error([&] { read_hdf5((tmp / "x.h5").string(), {"nope"}); },
                      {"dataset 'nope'", "no such dataset"}, "missing dataset");
}

TEST(Hdf5, H5pyReadsWhatPipeprofWrites) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("h5py");
  const TempDir tmp;
  NamedTensors data;
  for (DType dtype : kDtypes)
    data.emplace_back(std::string("d_") + std::string(dtype_name(dtype)), arange(dtype, {6, 5}));
  data.emplace_back("group/inner", arange(DType::kFloat32, {7}));
  data.emplace_back("scalar", Tensor::scalar<double>(4.25));
  write_hdf5((tmp / "plain.h5").string(), data);
  write_hdf5((tmp / "deflated.h5").string(), data, {.deflate_level = 6});
  const auto r = run_python(R"PY(
import json, sys
import numpy as np, h5py
d = sys.argv[1]
out = {}
for name in ['plain.h5', 'deflated.h5']:
  with h5py.File(f'{d}/{name}', 'r') as f:
    entries = {}
    def visit(k, obj):
      if isinstance(obj, h5py.Dataset):
        a = obj[()]
        entries[k] = {'dtype': np.asarray(a).dtype.str, 'shape': list(np.shape(a)), 'values': np.asarray(a).astype('f8').ravel().tolist(),
                      'compression': obj.compression}
    f.visititems(visit)
    out[name] = entries
json.dump(out, open(f'{d}/read.json', 'w'))
)PY", tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto read = nlohmann::json::parse(read_file((tmp / "read.json").string()));
  for (const char* file : {"plain.h5", "deflated.h5"}) {
    for (const auto& [name, t] : data) {
      SCOPED_TRACE(std::string(file) + " " + name);
      ASSERT_TRUE(read[file].contains(name));
      EXPECT_EQ(read[file][name]["shape"].get<Shape>(), t.shape());
      EXPECT_EQ(read[file][name]["values"].get<std::vector<double>>(), as_doubles(t));
    }
    EXPECT_EQ(read[file]["d_bool"]["dtype"], "|b1");
    EXPECT_EQ(read[file]["d_float32"]["dtype"], "<f4");
  }
  EXPECT_EQ(read["deflated.h5"]["d_float64"]["compression"], "gzip");
  EXPECT_TRUE(read["plain.h5"]["d_float64"]["compression"].is_null());
  // And pipeprof reads its own files back.
  const NamedTensors back = read_hdf5((tmp / "deflated.h5").string());
  EXPECT_EQ(back.size(), data.size());
}

TEST(Hdf5Corruption, TruncatedFlippedAndForeignFilesAreErrors) {
  const TempDir tmp;
  const auto path = tmp / "x.h5";
  write_hdf5(path.string(), {{"records", arange(DType::kFloat32, {32, 8})}});
  const auto good = file_bytes(path);
  const auto bad_path = tmp / "bad.h5";
  for (size_t cut : {size_t{0}, size_t{8}, size_t{100}, good.size() / 2, good.size() - 1}) {
    write_bytes(bad_path, std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)));
    expect_format_error([&] { read_hdf5(bad_path.string(), {"records"}); }, {"bad.h5"},
                        "truncated at " + std::to_string(cut));
  }
  auto magic = good;
  magic[1] = std::byte{'X'};
  write_bytes(bad_path, magic);
  expect_format_error([&] { read_hdf5(bad_path.string()); }, {"bad.h5", "not an HDF5 file"}, "magic");
  // Flipped bytes in the superblock and object headers: an error or the data, never a crash.
  for (size_t i = 0; i < std::min<size_t>(good.size(), 2048); i += 3) {
    auto bad = good;
    bad[i] ^= std::byte{0xFF};
    write_bytes(bad_path, bad);
    try {
      const NamedTensors back = read_hdf5(bad_path.string(), {"records"});
      EXPECT_LE(back.at(0).second.nbytes(), bad.size());
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.h5"), std::string::npos) << e.what();
    }
  }
  expect_format_error([&] { read_hdf5((tmp / "missing.h5").string()); }, {"missing.h5"}, "missing");
}

// --- jpeg ---

Tensor gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, c == 1 ? Shape{h, w} : Shape{h, w, c});
  auto v = t.mutable_values<uint8_t>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        v[static_cast<size_t>((y * w + x) * c + k)] = static_cast<uint8_t>((x * 5 + y * 3 + k * 60) % 256);
  return t;
}

double mean_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.values<uint8_t>(), y = b.values<uint8_t>();
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sum += std::abs(static_cast<int>(x[i]) - static_cast<int>(y[i]));
  return sum / static_cast<double>(x.size());
}

TEST(Jpeg, EncodesAndDecodesRgbAndGray) {
  const Tensor rgb = gradient(40, 48, 3);
  const Tensor back = decode_jpeg(encode_jpeg(rgb, 95), 0, "rgb");
  EXPECT_EQ(back.shape(), (Shape{40, 48, 3}));
  EXPECT_LT(mean_abs_diff(back, rgb), 10);  // lossy, with 4:2:0 chroma over sharp edges
  const Tensor gray = gradient(17, 23, 1);
  const auto bytes = encode_jpeg(gray, 95);
  EXPECT_EQ(decode_jpeg(bytes, 0, "gray").shape(), (Shape{17, 23, 1}));
  EXPECT_EQ(decode_jpeg(bytes, 3, "gray").shape(), (Shape{17, 23, 3}));
  EXPECT_EQ(decode_jpeg(encode_jpeg(rgb), 1, "rgb").shape(), (Shape{40, 48, 1}));
}

TEST(Jpeg, AgreesWithPil) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("PIL");
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  const TempDir tmp;
  write_jpeg((tmp / "ours.jpg").string(), gradient(30, 50, 3), 90);
  const auto r = run_python(R"PY(
import json, sys
import numpy as np
from PIL import Image
d = sys.argv[1]
y, x = np.mgrid[0:33, 0:45]
img = np.stack([(x * 5) % 256, (y * 7) % 256, (x + y) % 256], axis=-1).astype('u1')
Image.fromarray(img).save(f'{d}/pil.jpg', quality=92)
Image.fromarray(img[:, :, 0]).save(f'{d}/pil_gray.jpg', quality=92)
out = {}
for name in ['pil.jpg', 'pil_gray.jpg', 'ours.jpg']:
  im = Image.open(f'{d}/{name}')
  a = np.asarray(im)
  out[name] = {'mode': im.mode, 'shape': list(a.shape), 'values': a.ravel().tolist()}
json.dump(out, open(f'{d}/decoded.json', 'w'))
)PY", tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto decoded = nlohmann::json::parse(read_file((tmp / "decoded.json").string()));
  for (const char* name : {"pil.jpg", "pil_gray.jpg", "ours.jpg"}) {
    SCOPED_TRACE(name);
    const Tensor ours = decode_jpeg(file_bytes(tmp / name), 0, name);
    const auto want = decoded[name]["values"].get<std::vector<int>>();
    ASSERT_EQ(static_cast<size_t>(ours.num_elements()), want.size());
    int max_diff = 0;
    for (size_t i = 0; i < want.size(); ++i)
      max_diff = std::max(max_diff, std::abs(ours.values<uint8_t>()[i] - want[i]));
    EXPECT_LE(max_diff, 1) << "PIL and libturbojpeg decode the same stream";
  }
  EXPECT_EQ(decoded["ours.jpg"]["mode"], "RGB");
  EXPECT_EQ(decoded["pil_gray.jpg"]["mode"], "L");
}

TEST(JpegCorruption, TruncatedFlippedAndImplausibleImagesAreErrors) {
  const auto good = encode_jpeg(gradient(64, 64, 3), 90);
  for (size_t cut : {size_t{0}, size_t{2}, size_t{20}, good.size() / 2, good.size() - 2}) {
    const std::vector<std::byte> bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { decode_jpeg(bytes, 0, "img.jpg"); }, {"img.jpg"},
                        "truncated at " + std::to_string(cut));
  }
  auto magic = good;
  magic[0] = std::byte{0};
  expect_format_error([&] { decode_jpeg(magic, 0, "img.jpg"); }, {"img.jpg", "offset 0", "SOI"}, "magic");
  int errors = 0;
  for (size_t i = 0; i < good.size(); i += 2) {
    auto bad = good;
    bad[i] ^= std::byte{0xFF};
    try {
      const Tensor t = decode_jpeg(bad, 0, "img.jpg");
      EXPECT_LE(t.nbytes(), std::max<size_t>(size_t{64} << 20, bad.size() * 1024));
    } catch (const FormatError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  // A frame header claiming 65000 x 65000 pixels over a few hundred bytes.
  auto huge = good;
  for (size_t i = 0; i + 8 < huge.size(); ++i) {
    if (huge[i] == std::byte{0xFF} && huge[i + 1] == std::byte{0xC0}) {
      for (size_t k = 5; k < 9; ++k)
        huge[i + k] = std::byte(k % 2 == 1 ? 0xFD : 0xE8);  // 65000
      break;
    }
  }
  expect_format_error([&] { decode_jpeg(huge, 0, "huge.jpg"); }, {"huge.jpg", "65000x65000", "implausible"}, "huge");
}

TEST(RandomTensor, IsDeterministicAndCoversItsRange) {
  const Tensor a = random_tensor(DType::kFloat32, {100}, 7);
  EXPECT_EQ(a, random_tensor(DType::kFloat32, {100}, 7));
  EXPECT_NE(a, random_tensor(DType::kFloat32, {100}, 8));
  for (float v : a.values<float>()) {
    EXPECT_GE(v, 0.0F);
    EXPECT_LT(v, 1.0F);
  }
  const Tensor b = random_tensor(DType::kUInt8, {1000}, 1);
  const auto vals = b.values<uint8_t>();
  EXPECT_GT(*std::max_element(vals.begin(), vals.end()), 200);
}

}  // namespace
}  // namespace pipeprof::pipelines::formats
