// The streaming pieces data generation is built on (formats/datagen.cc): TFRecordWriter's
// records written in pieces, encode_example_around, encode_npy_header and RandomBytes, each
// against the whole-value encoder it must agree with.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "formats/example.h"
#include "formats/npy.h"
#include "formats/random_bytes.h"
#include "formats/tfrecord.h"
#include "formats_test_util.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::pipelines::formats {
namespace {

using pipeprof::testing_support::TempDir;
using test::bytes_of;
using test::file_bytes;

TEST(DatagenPieces, ExampleAroundAValueIsEncodeExample) {
  const std::vector<std::pair<std::string, FeatureValue>> rest{
      {"size", {.kind = FeatureKind::kInt64, .int64s = {300}}},
      {"label", {.kind = FeatureKind::kBytes, .bytes = {"cat"}}}};
  for (const size_t n : {0, 1, 127, 128, 16383, 16384, 70000}) {
    const std::string value(n, 'v');
    auto all = rest;
    all.insert(all.begin(), {"image", {.kind = FeatureKind::kBytes, .bytes = {value}}});
    const ExampleFrame f = encode_example_around("image", n, rest);
    EXPECT_EQ(f.head + value + f.tail, encode_example(all)) << n;
  }
}

TEST(DatagenPieces, RecordInPiecesIsTheRecord) {
  const TempDir tmp;
  const std::string data(5000, 'd');
  {
    TFRecordWriter w((tmp / "a").string());
    w.write(data);
    w.close();
  }
  {
    TFRecordWriter w((tmp / "b").string());
    w.begin_record(data.size());
    w.append(bytes_of(data.substr(0, 1234)));
    w.append(bytes_of(data.substr(1234)));
    w.end_record();
    w.close();
  }
  EXPECT_EQ(file_bytes(tmp / "a"), file_bytes(tmp / "b"));
  TFRecordWriter w((tmp / "c").string());
  w.begin_record(10);
  EXPECT_THROW(w.append(bytes_of(std::string(11, 'x'))), std::logic_error);
  EXPECT_THROW(w.end_record(), std::logic_error);
}

TEST(DatagenPieces, NpyHeaderThenValuesIsEncodeNpy) {
  const Tensor t = random_tensor(DType::kUInt8, {3, 5, 2}, 1);
  std::vector<std::byte> joined = encode_npy_header(DType::kUInt8, t.shape());
  joined.insert(joined.end(), t.data(), t.data() + t.nbytes());
  EXPECT_EQ(joined, encode_npy(t));
}

TEST(DatagenPieces, RandomBytesDoNotDependOnHowTheStreamIsSplit) {
  std::vector<std::byte> whole(1000), parts(1000);
  RandomBytes(7).fill(whole);
  RandomBytes r(7);
  size_t at = 0;
  for (const size_t n : {1, 63, 64, 65, 3, 500, 304}) {
    r.fill(std::span(parts).subspan(at, n));
    at += n;
  }
  ASSERT_EQ(at, parts.size());
  EXPECT_EQ(whole, parts);
  std::vector<std::byte> other(1000);
  RandomBytes(8).fill(other);
  EXPECT_NE(whole, other);
}

}  // namespace
}  // namespace pipeprof::pipelines::formats
