// numpy .npz archives (pipelines/src/formats/npz.h): stored members read in place from the file's
// mapping, archives (and .npy files) read straight into a caller's memory, the streaming writer, and the corruption battery (truncation, flipped bytes, huge sizes,
// wrong dtypes): every case a FormatError naming the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "formats_test_util.h"
#include "pipeprof_testing/temp_dir.h"
#include "python_util.h"

namespace pipeprof::pipelines::formats {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers
using pipeprof::testing_support::TempDir;
using testing::run_python;

// The file mapped at `p` in this process, from /proc/self/maps ("" when none).
std::string mapped_file_at(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2 || at < lo || at >= hi) continue;
    const size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

TEST(Npz, StoredMembersAreViewsOfTheMappingAndDeflatedOnesAreNot) {
  const TempDir tmp;
  // Over MappedFile::kReadBelowBytes, so mapped.
  const NamedTensors z{{"x", arange(DType::kUInt8, {2048, 1024})},
                       {"y", arange(DType::kInt64, {9})}};
  const auto stored = (tmp / "stored.npz").string();
  const auto deflated = (tmp / "deflated.npz").string();
  write_npz(stored, z, false);
  write_npz(deflated, z, true);
  const NamedTensors s = read_npz(stored);
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].second, z[0].second);
  EXPECT_EQ(s[1].second, z[1].second);
  // uint8 values need no alignment: always a view of the archive's mapping.
  EXPECT_EQ(mapped_file_at(s[0].second.data()), stored);
  const NamedTensors d = read_npz(deflated);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].second, z[0].second);
  EXPECT_EQ(mapped_file_at(d[0].second.data()), "");
  // Writing to a view copies first: the archive is unchanged.
  Tensor w = read_npz(stored, {"x"})[0].second;
  w.mutable_values<uint8_t>()[0] = 99;
  EXPECT_EQ(read_npz(stored, {"x"})[0].second, z[0].second);
}

TEST(Npz, SmallArchivesAreReadIntoMemoryNotMapped) {
  const TempDir tmp;
  const NamedTensors z{{"x", arange(DType::kUInt8, {64, 1024})}, {"y", arange(DType::kInt64, {9})}};
  const auto small = (tmp / "small.npz").string();
  write_npz(small, z, false);
  EXPECT_FALSE(MappedFile::open(small)->mapped());
  const NamedTensors s = read_npz(small);
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].second, z[0].second);
  EXPECT_EQ(s[1].second, z[1].second);
  EXPECT_EQ(mapped_file_at(s[0].second.data()), "");
  EXPECT_EQ(MappedFile::open(small)->size(), std::filesystem::file_size(small));
  const auto big = (tmp / "big.npz").string();
  write_npz(big, {{"x", arange(DType::kUInt8, {2048, 1024})}}, false);
  EXPECT_TRUE(MappedFile::open(big)->mapped());
}

// A destination that hands out fresh memory and remembers what it gave (and keeps it, so that no
// later allocation lands at an address it gave).
struct TestDestination {
  std::vector<std::byte*> given;
  std::vector<Tensor> kept;
  ValuesDestination fn() {
    return [this](DType dtype, const Shape& shape) -> std::optional<ValuesHome> {
      Tensor t = Tensor::uninitialized(dtype, shape);
      std::byte* bytes = t.mutable_data();
      given.push_back(bytes);
      kept.push_back(t);
      return ValuesHome{std::move(t), bytes};
    };
  }
};

TEST(Npz, AnArchiveLaidOutAsTheLastIsReadStraightIntoTheDestination) {
  const TempDir tmp;
  const auto path = [&](const std::string& name) { return (tmp / name).string(); };
  Tensor a = arange(DType::kUInt8, {256, 256});
  Tensor b = a;
  b.mutable_data()[1000] = std::byte{0x5A};
  write_npz(path("a.npz"), {{"x", a}}, false);
  write_npz(path("b.npz"), {{"x", b}}, false);
  // The same size, another layout: the values where the guess expects them, the shape not.
  write_npz(path("c.npz"), {{"x", a.reshape({128, 512})}}, false);
  ASSERT_EQ(std::filesystem::file_size(path("a.npz")), std::filesystem::file_size(path("c.npz")));
  // b with a value byte changed after the archive was written: its CRC-32 no longer matches.
  auto bytes = file_bytes(path("b.npz"));
  bytes[bytes.size() / 2] ^= std::byte{0xFF};
  write_bytes(path("d.npz"), bytes);

  TestDestination dest;
  const auto into = dest.fn();
  // Whatever this thread read before, a's read leaves a's layout as the guess.
  NamedTensors got = read_npz(path("a.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].second, a);

  dest.given.clear();
  got = read_npz(path("b.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].first, "x");
  EXPECT_EQ(got[0].second, b);
  ASSERT_EQ(dest.given.size(), 1U);
  EXPECT_EQ(got[0].second.data(), dest.given[0]) << "read straight into the destination";

  // No key asked: the archive's one array, placed as well.
  dest.given.clear();
  got = read_npz(path("a.npz"), {}, nullptr, WholeFile::kAuto, into);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].first, "x");
  EXPECT_EQ(got[0].second, a);
  ASSERT_EQ(dest.given.size(), 1U);
  EXPECT_EQ(got[0].second.data(), dest.given[0]);

  // The guess is checked: c's header says another shape, so c is read as usual.
  dest.given.clear();
  got = read_npz(path("c.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].second, a.reshape({128, 512}));
  ASSERT_EQ(dest.given.size(), 1U);
  EXPECT_NE(got[0].second.data(), dest.given[0]);

  // A damaged archive of the guessed layout is reported as read_npz reports it.
  (void)read_npz(path("a.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  std::string plain, placed;
  try {
    (void)read_npz(path("d.npz"), {"x"});
  } catch (const FormatError& e) {
    plain = e.what();
  }
  try {
    (void)read_npz(path("d.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  } catch (const FormatError& e) {
    placed = e.what();
  }
  EXPECT_THAT(plain, ::testing::HasSubstr("d.npz"));
  EXPECT_EQ(placed, plain);

  // A file of another size is not guessed at; nor is an O_DIRECT read, or two arrays asked for.
  write_npz(path("e.npz"), {{"x", arange(DType::kUInt8, {100, 100})}}, false);
  (void)read_npz(path("a.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  dest.given.clear();
  got = read_npz(path("e.npz"), {"x"}, nullptr, WholeFile::kAuto, into);
  EXPECT_EQ(got[0].second, arange(DType::kUInt8, {100, 100}));
  for (std::byte* p : dest.given)
    EXPECT_NE(got[0].second.data(), p);
}

TEST(Npy, AFileLaidOutAsTheLastIsReadStraightIntoTheDestination) {
  const TempDir tmp;
  const auto path = [&](const std::string& name) { return (tmp / name).string(); };
  const Tensor a = arange(DType::kFloat32, {64, 256});
  Tensor b = a;
  b.mutable_data()[4000] = std::byte{0x5A};
  write_npy(path("a.npy"), a);
  write_npy(path("b.npy"), b);
  // The same size: another dtype of the same width, and another shape.
  write_npy(path("c.npy"), Tensor(DType::kInt32, {64, 256}));
  write_npy(path("d.npy"), a.reshape({256, 64}));
  // Fortran order: the values are converted, so never where the guess expects them.
  write_npy(path("f.npy"), a, NpyWriteOptions{.fortran_order = true});

  TestDestination dest;
  const auto into = dest.fn();
  EXPECT_EQ(read_npy(path("a.npy"), nullptr, WholeFile::kAuto, into), a);
  dest.given.clear();
  Tensor got = read_npy(path("b.npy"), nullptr, WholeFile::kAuto, into);
  EXPECT_EQ(got, b);
  ASSERT_EQ(dest.given.size(), 1U);
  EXPECT_EQ(got.data(), dest.given[0]) << "read straight into the destination";
  for (const std::string name : {"c.npy", "d.npy", "f.npy"}) {
    (void)read_npy(path("a.npy"), nullptr, WholeFile::kAuto, into);
    dest.given.clear();
    got = read_npy(path(name), nullptr, WholeFile::kAuto, into);
    EXPECT_EQ(got, read_npy(path(name))) << name;
    for (std::byte* p : dest.given)
      EXPECT_NE(got.data(), p) << name;
  }
  // A damaged header of the guessed size is reported as read_npy reports it.
  auto bytes = file_bytes(path("a.npy"));
  bytes[20] = std::byte{'!'};
  write_bytes(path("e.npy"), bytes);
  (void)read_npy(path("a.npy"), nullptr, WholeFile::kAuto, into);
  std::string plain, placed;
  try {
    (void)read_npy(path("e.npy"));
  } catch (const FormatError& e) {
    plain = e.what();
  }
  try {
    (void)read_npy(path("e.npy"), nullptr, WholeFile::kAuto, into);
  } catch (const FormatError& e) {
    placed = e.what();
  }
  EXPECT_THAT(plain, ::testing::HasSubstr("e.npy"));
  EXPECT_EQ(placed, plain);
}

TEST(NpzStreamWriter, WritesWhatReadNpzAndLibzipRead) {
  const TempDir tmp;
  const auto path = (tmp / "s.npz").string();
  const Tensor x = arange(DType::kFloat32, {33, 7});
  const Tensor y = arange(DType::kInt64, {5});
  {
    NpzStreamWriter w(path);
    for (const auto& [key, t] : NamedTensors{{"x", x}, {"y", y}}) {
      const auto header = encode_npy_header(t.dtype(), t.shape());
      w.begin(key, header.size() + t.nbytes());
      w.append(header);
      // In uneven pieces, as a generator hands them over.
      const std::span<const std::byte> values(t.data(), t.nbytes());
      for (size_t at = 0; at < values.size(); at += 100)
        w.append(values.subspan(at, std::min<size_t>(100, values.size() - at)));
      w.end();
    }
    w.close();
  }
  const NamedTensors back = read_npz(path);
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[0].first, "x");
  EXPECT_EQ(back[0].second, x);
  EXPECT_EQ(back[1].first, "y");
  EXPECT_EQ(back[1].second, y);
  EXPECT_EQ(npz_keys(path), (std::vector<std::string>{"x", "y"}));
  // Same bytes as libzip's stored archive, less its headers: a damaged byte is caught.
  auto bytes = file_bytes(path);
  bytes[bytes.size() / 2] ^= std::byte{0x01};
  write_bytes(tmp / "bad.npz", bytes);
  expect_format_error([&] { read_npz((tmp / "bad.npz").string()); }, {"bad.npz"}, "flipped");

  NpzStreamWriter misuse((tmp / "m.npz").string());
  misuse.begin("a", 4);
  EXPECT_THROW(misuse.append(std::vector<std::byte>(5)), std::logic_error);
  EXPECT_THROW(misuse.end(), std::logic_error);
  NpzStreamWriter huge((tmp / "h.npz").string());
  expect_format_error([&] { huge.begin("x", uint64_t{5} << 30); }, {"h.npz", "4 GiB"}, "zip64");
}

TEST(NpzCorruption, TruncatedFlippedAndOversizedArchivesAreErrors) {
  const TempDir tmp;
  const NamedTensors z{{"a", arange(DType::kFloat32, {16, 4})}, {"b", arange(DType::kInt64, {9})}};
  for (bool compressed : {false, true}) {
    SCOPED_TRACE(compressed ? "deflated" : "stored");
    const auto path = tmp / "z.npz";
    write_npz(path.string(), z, compressed);
    const auto good = file_bytes(path);
    EXPECT_EQ(read_npz(path.string()).size(), 2U);
    const auto bad_path = tmp / "bad.npz";
    for (size_t cut : {size_t{0}, size_t{3}, good.size() / 3, good.size() / 2, good.size() - 22,
                       good.size() - 1}) {
      write_bytes(bad_path, std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)));
      expect_format_error([&] { read_npz(bad_path.string()); }, {"bad.npz"},
                          "truncated at " + std::to_string(cut));
    }
    // Every byte flipped in turn: an error or the right arrays, never a crash or wrong values
    // without an error (the members' CRC-32s catch damaged data).
    int errors = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      auto bad = good;
      bad[i] ^= std::byte{0xFF};
      write_bytes(bad_path, bad);
      try {
        const NamedTensors back = read_npz(bad_path.string());
        if (back.size() == 2 && back[0].first == "a" && back[1].first == "b") {
          EXPECT_EQ(back[0].second, z[0].second) << "byte " << i;
          EXPECT_EQ(back[1].second, z[1].second) << "byte " << i;
        }
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("bad.npz"), std::string::npos) << e.what();
        ++errors;
      }
    }
    EXPECT_GE(errors, static_cast<int>(good.size() / 2));
    // A central directory entry claiming a huge uncompressed size.
    auto huge = good;
    for (size_t i = 0; i + 4 < huge.size(); ++i) {
      if (huge[i] == std::byte{'P'} && huge[i + 1] == std::byte{'K'} && huge[i + 2] == std::byte{1} &&
          huge[i + 3] == std::byte{2}) {
        for (size_t k = 0; k < 4; ++k)
          huge[i + 24 + k] = std::byte{0x7F};
      }
    }
    write_bytes(bad_path, huge);
    expect_format_error([&] { read_npz(bad_path.string()); }, {"bad.npz"}, "huge size");
  }
  write_bytes(tmp / "text.npz", bytes_of("this is not a zip archive at all, just text"));
  expect_format_error([&] { read_npz((tmp / "text.npz").string()); }, {"text.npz", "zip"}, "magic");
  expect_format_error([&] { read_npz((tmp / "missing.npz").string()); }, {"missing.npz", "cannot open"},
                      "missing");
  write_npz((tmp / "ok.npz").string(), z, true);
  expect_format_error([&] { read_npz((tmp / "ok.npz").string(), {"nope"}); }, {"no array 'nope'"}, "key");
}

TEST(NpzCorruption, AMemberWithAWrongDtypeIsNamed) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  const TempDir tmp;
  const auto r = run_python(R"PY(
import sys
import numpy as np
np.savez(sys.argv[1] + '/c.npz', ok=np.zeros(3), bad=np.zeros(3, dtype='c8'))
)PY", tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  expect_format_error([&] { read_npz((tmp / "c.npz").string()); }, {"c.npz", "member 'bad.npy'", "<c8"},
                      "complex member");
}

}  // namespace
}  // namespace pipeprof::pipelines::formats
