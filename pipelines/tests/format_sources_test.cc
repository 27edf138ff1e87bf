// The npy, npz, hdf5 and indexed_binary sources: files in order, rows, interleave over file-name elements
// ("$element"), spec round trips and errors naming the file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "formats/hdf5.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "pipeprof/pipelines/file_sources.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof_testing/temp_dir.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using pipeprof::testing_support::TempDir;
using testing::spec_dataset;

Tensor iota(int64_t start, Shape shape) {
  Tensor t(DType::kInt64, shape);
  auto v = t.mutable_values<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = start + static_cast<int64_t>(i);
  return t;
}

// Three files of each format in `tmp`: f<i>.npy ([2, 3] from 10 * i), f<i>.npz (x: [2, 3],
// y: [2] from 100 * i), f<i>.h5 (the same datasets); returns the names without extension.
std::vector<std::string> write_files(const TempDir& tmp) {
  std::vector<std::string> stems;
  for (int i = 0; i < 3; ++i) {
    const std::string stem = (tmp / fmt::format("f{}", i)).string();
    formats::write_npy(stem + ".npy", iota(10 * i, {2, 3}));
    const formats::NamedTensors arrays{{"x", iota(10 * i, {2, 3})}, {"y", iota(100 * i, {2})}};
    formats::write_npz(stem + ".npz", arrays, i % 2 == 1);
    formats::write_hdf5(stem + ".h5", arrays);
    stems.push_back(stem);
  }
  return stems;
}

std::vector<std::string> with_ext(const std::vector<std::string>& stems, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& s : stems)
    out.push_back(s + ext);
  return out;
}

nlohmann::json values(const std::vector<Element>& elements) {
  nlohmann::json out = nlohmann::json::array();
  for (const Element& e : elements)
    out.push_back(element_to_json(e));
  return out;
}

TEST(FileSources, OneElementPerFileInOrder) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  EXPECT_EQ(values(npy_files(with_ext(stems, ".npy")).collect()),
            nlohmann::json::parse("[[[0,1,2],[3,4,5]],[[10,11,12],[13,14,15]],[[20,21,22],[23,24,25]]]"));
  const auto npz = npz_files(with_ext(stems, ".npz"), {"y", "x"}).collect();
  ASSERT_EQ(npz.size(), 3U);
  EXPECT_EQ(element_to_json(npz[1]), nlohmann::json::parse("[[100,101],[[10,11,12],[13,14,15]]]"));
  const auto h5 = hdf5_files(with_ext(stems, ".h5")).collect();  // all datasets, by name
  ASSERT_EQ(h5.size(), 3U);
  EXPECT_EQ(element_to_json(h5[2]), nlohmann::json::parse("[[[20,21,22],[23,24,25]],[200,201]]"));
}

TEST(FileSources, RowsYieldTheFirstDimension) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  EXPECT_EQ(values(npy_files(with_ext(stems, ".npy"), true).take(3).collect()),
            nlohmann::json::parse("[[0,1,2],[3,4,5],[10,11,12]]"));
  EXPECT_EQ(values(npz_files(with_ext(stems, ".npz"), {"x", "y"}, true).collect()).size(), 6U);
  EXPECT_EQ(element_to_json(hdf5_files(with_ext(stems, ".h5"), {"y", "x"}, true).collect()[3]),
            nlohmann::json::parse("[101,[13,14,15]]"));
  // Arrays whose first dimensions differ have no common rows.
  formats::write_npz((tmp / "odd.npz").string(), {{"a", iota(0, {2})}, {"b", iota(0, {3})}}, false);
  try {
    npz_files({(tmp / "odd.npz").string()}, {}, true).collect();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("odd.npz"), std::string::npos) << e.what();
  }
}

TEST(FileSources, RowsAlongTheLastDimensionAsDlioLaysOutItsSamples) {
  const TempDir tmp;
  // DLIO's npz: x [d1, d2, samples], y [samples].
  const auto file = (tmp / "dlio.npz").string();
  formats::write_npz(file, {{"x", iota(0, {2, 2, 3})}, {"y", iota(100, {3})}}, false);
  const nlohmann::json spec = {{"stages", {{{"op", "npz"}, {"file", file}, {"rows", true},
                                            {"rows_axis", -1}}}}};
  const auto rows = parse_pipeline(spec, "test.json").collect();
  ASSERT_EQ(rows.size(), 3U);
  // Sample 1: x[..., 1] = [[1, 4], [7, 10]], y[1] = 101.
  EXPECT_EQ(element_to_json(rows[1]), nlohmann::json::parse("[[[1,4],[7,10]],101]"));
  EXPECT_EQ(parse_pipeline(spec, "test.json").to_json()["stages"][0]["rows_axis"], -1);
  // rows_axis 1 of x [2, 2, 3]: 2 rows of [2, 3]; y has no dimension 1.
  const nlohmann::json mid = {{"stages", {{{"op", "npz"}, {"file", file}, {"keys", {"x"}},
                                           {"rows", true}, {"rows_axis", 1}}}}};
  EXPECT_EQ(element_to_json(parse_pipeline(mid, "test.json").collect()[1]),
            nlohmann::json::parse("[[3,4,5],[9,10,11]]"));
  const nlohmann::json bad = {{"stages", {{{"op", "npz"}, {"file", file}, {"rows", true},
                                           {"rows_axis", 1}}}}};
  try {
    parse_pipeline(bad, "test.json").collect();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("along dimension 1"), std::string::npos) << e.what();
  }
}

TEST(FileSources, SpecsWithFilesOrOneFileRoundTrip) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  const nlohmann::json files = with_ext(stems, ".npz");
  const nlohmann::json spec = {
      {"stages", {{{"op", "npz"}, {"files", files}, {"keys", {"x"}}, {"rows", true}}}}};
  const Dataset d = parse_pipeline(spec, "test.json");
  EXPECT_EQ(d.collect().size(), 6U);
  EXPECT_EQ(d.to_json(), spec);
  const nlohmann::json one = {{"stages", {{{"op", "hdf5"}, {"file", stems[1] + ".h5"}, {"datasets", {"y"}}}}}};
  EXPECT_EQ(values(parse_pipeline(one, "test.json").collect()), nlohmann::json::parse("[[100,101]]"));
  const nlohmann::json npy = {{"stages", {{{"op", "npy"}, {"files", with_ext(stems, ".npy")}}}}};
  EXPECT_EQ(parse_pipeline(npy, "test.json").to_json(), npy);
}

TEST(FileSources, SpecErrorsNameTheField) {
  auto error_of = [](const std::string& text) {
    try {
      spec_dataset(text);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(R"({"stages": [{"op": "npy"}]})").find("exactly one of \"file\" or \"files\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"op": "npy", "file": "a", "files": ["b"]}]})").find("exactly one"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"op": "npz", "files": []}]})").find("stages[0].files"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"op": "npz", "files": ["a"], "keys": [3]}]})").find("stages[0].keys"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"op": "npy", "file": "$element"}]})").find("only available inside an interleave"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"op": "npy", "files": ["a"], "keys": ["x"]}]})").find("unknown key"),
            std::string::npos);
}

// from_tensor_slices of the file names' bytes (the names have equal lengths) feeding an
// interleave whose pipeline reads "$element".
nlohmann::json interleave_spec(const std::vector<std::string>& files, const nlohmann::json& inner) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json bytes = nlohmann::json::array();
    for (unsigned char c : f)
      bytes.push_back(static_cast<int>(c));
    names.push_back(bytes);
  }
  return {{"stages",
           {{{"op", "from_tensor_slices"}, {"value", names}, {"dtype", "uint8"}},
            {{"op", "interleave"}, {"cycle_length", 2}, {"block_length", 1},
             {"pipeline", {{"stages", {inner}}}}}}}};
}

TEST(FileSources, InterleaveOverFileNameElements) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  const auto npy = parse_pipeline(
      interleave_spec(with_ext(stems, ".npy"), {{"op", "npy"}, {"file", "$element"}, {"rows", true}}),
      "test.json");
  // Two files open at once, one row of each in turn.
  EXPECT_EQ(values(npy.collect()),
            nlohmann::json::parse("[[0,1,2],[10,11,12],[3,4,5],[13,14,15],[20,21,22],[23,24,25]]"));
  const auto npz = parse_pipeline(
      interleave_spec(with_ext(stems, ".npz"), {{"op", "npz"}, {"file", "$element"}, {"keys", {"y"}}}),
      "test.json");
  EXPECT_EQ(values(npz.collect()), nlohmann::json::parse("[[0,1],[100,101],[200,201]]"));
  const auto h5 = parse_pipeline(
      interleave_spec(with_ext(stems, ".h5"), {{"op", "hdf5"}, {"file", "$element[0]"}, {"datasets", {"y"}}}),
      "test.json");
  EXPECT_EQ(values(h5.collect()), nlohmann::json::parse("[[0,1],[100,101],[200,201]]"));
  // The C++ form: a DatasetFn over file_name_element().
  const Dataset names = from_tensor_slices({Tensor::from_vector<int64_t>({2, 0})});
  const Dataset cpp = names.interleave(
      DatasetFn([&](const Element& e) {
        return npy_files({file_name_of(file_name_element(stems[static_cast<size_t>(e[0].as_int64())] + ".npy")[0])});
      }),
      {.cycle_length = 1});
  EXPECT_EQ(values(cpp.collect()), nlohmann::json::parse("[[[20,21,22],[23,24,25]],[[0,1,2],[3,4,5]]]"));
}

TEST(FileSources, BadFilesFailWithADataErrorNamingFileAndOffset) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  const std::string bad("\x93NUMPY\x01\x00\xff\xff{'descr'", 17);
  std::ofstream(tmp / "bad.npy", std::ios::binary) << bad;
  auto it = npy_files({stems[0] + ".npy", (tmp / "bad.npy").string(), stems[1] + ".npy"}).iterate();
  ASSERT_TRUE(it->next().has_value());
  try {
    it->next();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("npy: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("bad.npy: offset 8"), std::string::npos) << msg;
  }
  EXPECT_TRUE(it->next().has_value()) << "the next file is read after a bad one";
  for (const auto& d : {npz_files({(tmp / "missing.npz").string()}), hdf5_files({(tmp / "missing.h5").string()}),
                        npy_files({(tmp / "missing.npy").string()})}) {
    try {
      d.collect();
      FAIL() << "no error";
    } catch (const InputDataError& e) {
      EXPECT_NE(std::string(e.what()).find("missing."), std::string::npos) << e.what();
    }
  }
  // An element that is not a file name.
  const nlohmann::json spec = {{"stages",
                                {{{"op", "range"}, {"stop", 2}},
                                 {{"op", "interleave"},
                                  {"pipeline", {{"stages", {{{"op", "npy"}, {"file", "$element"}}}}}}}}}};
  EXPECT_THROW(parse_pipeline(spec, "test.json").collect(), PipelineError);
}

// mmap off (read calls) and direct (O_DIRECT) read the same arrays as the default, for files below
// and above the size that is mapped.
TEST(FileSources, ReadCallsAndODirectReadTheSameArrays) {
  const TempDir tmp;
  const auto stems = write_files(tmp);
  Tensor big(DType::kInt64, {300'000});  // 2.4 MB: mapped by default
  auto v = big.mutable_values<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int64_t>(i * 7);
  formats::write_npy((tmp / "big.npy").string(), big);
  formats::write_npz((tmp / "big.npz").string(), {{"x", big}}, false);
  formats::write_hdf5((tmp / "big.h5").string(), {{"x", big}});
  for (const std::string ext : {"npy", "npz", "h5"}) {
    std::vector<std::string> files = with_ext(stems, "." + ext);
    files.push_back((tmp / ("big." + ext)).string());
    const std::string op = ext == "h5" ? "hdf5" : ext;
    auto run = [&](const std::string& extra) {
      return parse_pipeline(nlohmann::json::parse(
                                R"({"stages": [{"op": ")" + op + R"(", "files": )" +
                                nlohmann::json(files).dump() + extra + "}]}"),
                            "test.json")
          .collect();
    };
    const auto plain = run("");
    ASSERT_EQ(plain.size(), 4U) << ext;
    const auto read = run(R"(, "mmap": false)");
    EXPECT_EQ(element_to_json(read[3]), element_to_json(plain[3])) << ext;
    EXPECT_EQ(element_to_json(read[1]), element_to_json(plain[1])) << ext;
    try {
      const auto direct = run(R"(, "direct": true)");
      EXPECT_EQ(element_to_json(direct[3]), element_to_json(plain[3])) << ext;
      EXPECT_EQ(element_to_json(direct[0]), element_to_json(plain[0])) << ext;
    } catch (const InputDataError& e) {
      // tmpfs has no O_DIRECT: said so, naming the file.
      EXPECT_NE(std::string(e.what()).find("does not support O_DIRECT"), std::string::npos) << e.what();
    }
  }
}

// ---- indexed_binary ----

void write_u64s(const std::filesystem::path& p, const std::vector<uint64_t>& v) {
  std::string bytes;
  for (uint64_t x : v)
    for (int b = 0; b < 8; ++b)
      bytes.push_back(static_cast<char>((x >> (8 * b)) & 0xFFU));
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A data file of `bytes` bytes 0, 1, 2, ... (mod 251) with the given index.
std::string indexed_file(const TempDir& tmp, const std::string& name, size_t bytes,
                         const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& sizes) {
  std::string data(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<char>(i % 251);
  const auto path = tmp / name;
  std::ofstream(path, std::ios::binary) << data;
  write_u64s(path.string() + ".off.idx", offsets);
  write_u64s(path.string() + ".sz.idx", sizes);
  return path.string();
}

TEST(IndexedBinary, SamplesInIndexOrderThroughReadCallsOrAMapping) {
  const TempDir tmp;
  // Back to back, then a gap.
  const std::string f = indexed_file(tmp, "a.indexed_binary", 1000, {0, 100, 300, 500}, {100, 200, 7, 20});
  for (const bool mmap : {false, true}) {
    const auto elements = indexed_binary({f, f}, {.mmap = mmap}).collect();
    ASSERT_EQ(elements.size(), 8U) << mmap;
    const std::vector<std::pair<uint64_t, uint64_t>> want{{0, 100}, {100, 200}, {300, 7}, {500, 20}};
    for (size_t k = 0; k < elements.size(); ++k) {
      const Tensor& t = elements[k][0];
      const auto [offset, size] = want[k % 4];
      ASSERT_EQ(t.dtype(), DType::kUInt8);
      ASSERT_EQ(t.shape(), (Shape{static_cast<int64_t>(size)}));
      const auto* b = reinterpret_cast<const uint8_t*>(t.data());
      for (uint64_t i = 0; i < size; ++i)
        ASSERT_EQ(b[i], (offset + i) % 251) << "sample " << k << " byte " << i;
    }
  }
  // As a spec, over file-name elements.
  const nlohmann::json spec = {
      {"stages",
       {{{"op", "list_files"}, {"files", {f}}, {"shuffle", false}},
        {{"op", "interleave"},
         {"pipeline", {{"stages", {{{"op", "indexed_binary"}, {"files", "$element"}, {"mmap", false}}}}}}}}}};
  EXPECT_EQ(parse_pipeline(spec, "test.json").collect().size(), 4U);
}

TEST(IndexedBinary, AnIndexThatDisagreesWithItsFileNamesTheIndexAndTheSample) {
  const TempDir tmp;
  struct Case {
    std::vector<uint64_t> offsets, sizes;
    std::string expect;
  };
  for (const Case& c : {Case{{0, 90}, {50, 20}, "sample 1 at byte 90 of 20 bytes runs past the end"},
                        Case{{0, 10}, {10}, "1 sizes for 2 offsets"},
                        Case{{0}, {0}, "sample 0: size 0"},
                        Case{{~uint64_t{0}}, {2}, "runs past the end"},
                        Case{{0, 50, 20}, {60, 10, 10}, "sample 1 at byte 50 starts before the end of sample 0"}}) {
    const std::string f = indexed_file(tmp, "b.indexed_binary", 100, c.offsets, c.sizes);
    try {
      (void)indexed_binary({f}).collect();
      FAIL() << "no error for " << c.expect;
    } catch (const InputDataError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("b.indexed_binary."), std::string::npos) << e.what();
    }
  }
  // An index file of a partial entry, and a missing one.
  const std::string f = indexed_file(tmp, "c.indexed_binary", 100, {0}, {10});
  std::ofstream(f + ".off.idx", std::ios::binary | std::ios::app) << "xyz";
  try {
    (void)indexed_binary({f}).collect();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("c.indexed_binary.off.idx: 11 bytes, not a whole number"),
              std::string::npos)
        << e.what();
  }
  write_u64s(f + ".off.idx", {0});
  std::filesystem::remove(f + ".sz.idx");
  try {
    (void)indexed_binary({f}).collect();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("c.indexed_binary.sz.idx"), std::string::npos) << e.what();
  }
  // An index claiming more samples than the data file has bytes is refused before it is read.
  const std::string g = indexed_file(tmp, "d.indexed_binary", 4, {0, 1, 2, 3, 0}, {1, 1, 1, 1, 1});
  try {
    (void)indexed_binary({g}).collect();
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("5 entries, more than"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
