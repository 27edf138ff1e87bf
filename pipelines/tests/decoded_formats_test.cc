// The formats read by decoding a whole file, DLIO's png and csv beside jpeg: decode_png (libpng)
// against what PIL reads from the same files, decode_csv on pandas' to_csv layout, their damaged
// inputs, and the jpeg, png and csv sources (one element a file, a csv's rows, errors naming the
// file).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/format_error.h"
#include "formats/jpeg.h"
#include "formats/mapped_file.h"
#include "formats_test_util.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof_testing/temp_dir.h"
#include "python_util.h"
#include "test_util.h"

namespace pipeprof::pipelines::formats {
namespace {

using pipeprof::testing_support::TempDir;
using testing::run_python;

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers

Tensor pattern(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, c == 0 ? Shape{h, w} : Shape{h, w, c});
  auto v = t.mutable_values<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>((i * 37 + i / 11) % 256);
  return t;
}

std::vector<std::byte> text_bytes(const std::string& s) {
  return bytes_of(s);
}

// ---- PNG ----

TEST(Png, DecodesWhatItEncodesLosslessly) {
  for (const int64_t c : {0, 1, 2, 3, 4}) {
    SCOPED_TRACE(c);
    const Tensor image = pattern(19, 23, c);
    const Tensor back = decode_png(encode_png(image), "img.png");
    EXPECT_EQ(back.shape(), (Shape{19, 23, c == 0 ? 1 : c}));
    EXPECT_TRUE(std::equal(back.values<uint8_t>().begin(), back.values<uint8_t>().end(),
                           image.values<uint8_t>().begin()));
  }
}

TEST(Png, AgreesWithPilOn16BitPaletteAndAlphaImages) {
  PIPEPROF_REQUIRE_PYTHON_MODULE("PIL");
  PIPEPROF_REQUIRE_PYTHON_MODULE("numpy");
  const TempDir tmp;
  const auto r = run_python(R"PY(
import json, sys
import numpy as np
from PIL import Image
d = sys.argv[1]
y, x = np.mgrid[0:21, 0:34]
rgb = np.stack([(x * 7) % 256, (y * 11) % 256, (x + y) % 256], axis=-1).astype('u1')
Image.fromarray(rgb).save(f'{d}/rgb.png')
Image.fromarray(rgb[:, :, 0]).save(f'{d}/gray.png')
Image.fromarray(np.dstack([rgb, rgb[:, :, :1]])).save(f'{d}/rgba.png')
Image.fromarray(rgb).convert('P', palette=Image.ADAPTIVE, colors=16).save(f'{d}/palette.png')
Image.fromarray((x * 1000 + y).astype('u2')).save(f'{d}/gray16.png')
out = {}
for name in ['rgb.png', 'gray.png', 'rgba.png', 'palette.png']:
  im = Image.open(f'{d}/{name}')
  if im.mode == 'P':
    im = im.convert('RGB')
  a = np.asarray(im)
  out[name] = {'shape': list(a.shape), 'values': a.ravel().tolist()}
a16 = np.asarray(Image.open(f'{d}/gray16.png')).astype('u4')
out['gray16.png'] = {'shape': list(a16.shape), 'values': a16.ravel().tolist()}
json.dump(out, open(f'{d}/decoded.json', 'w'))
)PY", tmp.path());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto decoded = nlohmann::json::parse(read_file((tmp / "decoded.json").string()));
  for (const auto& [name, want] : decoded.items()) {
    SCOPED_TRACE(name);
    const Tensor ours = decode_png(file_bytes(tmp / name), name);
    const auto shape = want["shape"].get<std::vector<int64_t>>();
    EXPECT_EQ(ours.shape()[0], shape[0]);
    EXPECT_EQ(ours.shape()[1], shape[1]);
    EXPECT_EQ(ours.shape()[2], shape.size() == 3 ? shape[2] : 1);
    const auto values = want["values"].get<std::vector<int>>();
    ASSERT_EQ(static_cast<size_t>(ours.num_elements()), values.size());
    if (name == "gray16.png") {
      EXPECT_EQ(ours.dtype(), DType::kInt32) << "16-bit values, widened";
      EXPECT_EQ(ours, Tensor::from_vector<int32_t>({values.begin(), values.end()}, ours.shape()));
      continue;
    }
    EXPECT_EQ(ours, Tensor::from_vector<uint8_t>({values.begin(), values.end()}, ours.shape()));
  }
}

TEST(PngCorruption, TruncatedFlippedForeignAndImplausibleImagesAreErrors) {
  const auto good = encode_png(pattern(40, 40, 3));
  // (The last 16 bytes are the image data's CRC and the end chunk, which libpng does not need.)
  for (size_t cut : {size_t{0}, size_t{7}, size_t{20}, good.size() / 2, good.size() - 20}) {
    const std::vector<std::byte> bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { decode_png(bytes, "img.png"); }, {"img.png"},
                        "truncated at " + std::to_string(cut));
  }
  expect_format_error([&] { decode_png(encode_jpeg(pattern(8, 8, 3)), "img.png"); },
                      {"img.png", "offset 0", "not a PNG"}, "a JPEG");
  int errors = 0;
  for (size_t i = 8; i < good.size(); i += 3) {
    auto bad = good;
    bad[i] ^= std::byte{0x5A};
    try {
      const Tensor t = decode_png(bad, "img.png");
      EXPECT_EQ(t.shape(), (Shape{40, 40, 3}));
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("img.png"), std::string::npos) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  // A header claiming 100000 x 100000 pixels, its CRC made to match: refused before decoding.
  auto huge = good;
  for (size_t at : {size_t{16}, size_t{20}}) {  // IHDR's width and height, big-endian
    huge[at] = std::byte{0};
    huge[at + 1] = std::byte{0x01};
    huge[at + 2] = std::byte{0x86};
    huge[at + 3] = std::byte{0xA0};
  }
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(huge.data() + 12), 17);
  for (int k = 0; k < 4; ++k)
    huge[29 + static_cast<size_t>(k)] = std::byte(static_cast<uint8_t>(crc >> (24 - 8 * k)));
  expect_format_error([&] { decode_png(huge, "huge.png"); },
                      {"huge.png", "100000x100000", "implausible"}, "huge");
  // Fewer pixels, but 16 bits of 4 channels each: 2 GB of rows from a few KB.
  for (size_t at : {size_t{16}, size_t{20}}) {  // 16000
    huge[at] = std::byte{0};
    huge[at + 1] = std::byte{0};
    huge[at + 2] = std::byte{0x3E};
    huge[at + 3] = std::byte{0x80};
  }
  huge[24] = std::byte{16};  // bit depth
  huge[25] = std::byte{6};   // RGBA
  const uLong crc16 = crc32(0, reinterpret_cast<const Bytef*>(huge.data() + 12), 17);
  for (int k = 0; k < 4; ++k)
    huge[29 + static_cast<size_t>(k)] = std::byte(static_cast<uint8_t>(crc16 >> (24 - 8 * k)));
  expect_format_error([&] { decode_png(huge, "deep.png"); },
                      {"deep.png", "16000x16000", "implausible"}, "16-bit RGBA");
}

// ---- CSV ----

TEST(Csv, ReadsPandasLayoutAsIntegersOrReals) {
  // pd.DataFrame([[5, 255, 7], [0, -3, 9]]).to_csv(): the index column first, as read_csv keeps it.
  const Tensor ints = decode_csv(text_bytes(",0,1,2\n0,5,255,7\n1,0,-3,+9\n"), "a.csv");
  EXPECT_EQ(ints.dtype(), DType::kInt64);
  EXPECT_EQ(ints.shape(), (Shape{2, 4}));
  EXPECT_EQ(ints, Tensor::from_vector<int64_t>({0, 5, 255, 7, 1, 0, -3, 9}, {2, 4}));
  // Windows line ends, blank lines, a real number after integers (the table turns float64) and
  // an empty value (NaN, as pandas reads it).
  const Tensor reals = decode_csv(text_bytes("a,b\r\n\r\n1,2.5\r\n3,\r\n"), "b.csv");
  EXPECT_EQ(reals.dtype(), DType::kFloat64);
  ASSERT_EQ(reals.shape(), (Shape{2, 2}));
  const auto v = reals.values<double>();
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2.5);
  EXPECT_EQ(v[2], 3);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(decode_csv(text_bytes("x,y\n"), "c.csv").shape(), (Shape{0, 2})) << "a header alone";
}

TEST(CsvCorruption, ValuesThatAreNotNumbersAndRaggedRowsNameTheLineAndColumn) {
  expect_format_error([&] { decode_csv(text_bytes(",0,1\n0,1,2\n1,x7,3\n"), "d.csv"); },
                      {"d.csv", "line 3, column 2", "not a number", "\"x7\""}, "a word");
  expect_format_error([&] { decode_csv(text_bytes(",0,1\n0,1,2\n1,2\n"), "d.csv"); },
                      {"d.csv", "line 3", "2 values, the header has 3"}, "short row");
  // A wide header over many short rows would be a table far larger than the file: refused by its
  // first row, before anything is allocated.
  expect_format_error([&] { decode_csv(text_bytes(std::string(100000, ',') + "\n" +
                                                  std::string(200000, '\n') + "1\n"), "w.csv"); },
                      {"w.csv", "line 200002", "1 values, the header has 100001"}, "wide header");
  expect_format_error([&] { decode_csv(text_bytes(",0\n0,1,2\n"), "d.csv"); },
                      {"d.csv", "line 2", "3 values, the header has 2"}, "long row");
  expect_format_error([&] { decode_csv(text_bytes("a\n\"1\"\n"), "d.csv"); },
                      {"line 2, column 1", "not a number"}, "quoted");
  expect_format_error([&] { decode_csv({}, "e.csv"); }, {"e.csv", "empty"}, "empty");
  // Random bytes never crash it: a table or an error naming the file.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string text = ",0,1\n0,1,2\n1,3,4\n";
    for (int k = 0; k < 3; ++k)
      text[rng() % text.size()] = "0123456789,\n\r.-+eE x\""[rng() % 22];
    try {
      const Tensor t = decode_csv(text_bytes(text), "r.csv");
      EXPECT_LE(t.nbytes(), 8 * text.size());
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("r.csv"), std::string::npos) << e.what();
    }
  }
}

// ---- the sources ----

TEST(DecodedSources, JpegPngAndCsvFilesGiveAnElementEachAndCsvRowsOnRequest) {
  const TempDir tmp;
  write_jpeg((tmp / "a.jpeg").string(), pattern(12, 16, 1), 90);
  write_bytes(tmp / "a.png", encode_png(pattern(9, 7, 0)));
  write_bytes(tmp / "a.csv", text_bytes(",0,1\n0,10,11\n1,20,21\n2,30,31\n"));
  const auto one = [&](const std::string& op, const std::string& extra = "") {
    return testing::spec_dataset(R"({"stages": [{"op": ")" + op + R"(", "files": [")" +
                                 (tmp / ("a." + op)).string() + R"("])" + extra + "}]}")
        .collect();
  };
  const auto jpeg = one("jpeg");
  ASSERT_EQ(jpeg.size(), 1U);
  EXPECT_EQ(jpeg[0][0].shape(), (Shape{12, 16, 1}));
  EXPECT_EQ(jpeg[0][0].origin(), (tmp / "a.jpeg").string());
  const auto png = one("png");
  ASSERT_EQ(png.size(), 1U);
  EXPECT_EQ(png[0][0].shape(), (Shape{9, 7, 1}));
  const auto table = one("csv");
  ASSERT_EQ(table.size(), 1U);
  EXPECT_EQ(table[0][0].shape(), (Shape{3, 3}));
  const auto rows = one("csv", R"(, "rows": true)");
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[2][0], Tensor::from_vector<int64_t>({2, 30, 31}));
  EXPECT_THROW(testing::spec_dataset(R"({"stages": [{"op": "png", "file": "a.png", "keys": ["x"]}]})"),
               SpecError);
}

TEST(DecodedSources, ADamagedFileFailsThePipelineNamingIt) {
  const TempDir tmp;
  write_bytes(tmp / "bad.png", text_bytes("not a png at all"));
  write_bytes(tmp / "bad.csv", text_bytes(",0\n0,zz\n"));
  for (const auto& [op, part] : std::vector<std::pair<std::string, std::string>>{
           {"png", "not a PNG"}, {"csv", "line 2, column 2"}, {"jpeg", "cannot open"}}) {
    SCOPED_TRACE(op);
    const std::string file = (tmp / ("bad." + op)).string();
    try {
      testing::spec_dataset(R"({"stages": [{"op": ")" + op + R"(", "file": ")" + file + R"("}]})")
          .collect();
      ADD_FAILURE() << "no error";
    } catch (const InputDataError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pipeprof::pipelines::formats
