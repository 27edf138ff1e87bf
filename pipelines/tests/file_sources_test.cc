// The file sources (list_files, tfrecord, fixed_length_records), the parse_example function and
// the parallel-read pattern list_files -> interleave(tfrecord of the file), from C++ and from specs:
// values, order, per-epoch shuffling, statistics of the reads, and errors naming file and offset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "formats/example.h"
#include "formats/jpeg.h"
#include "formats/tfrecord.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/recorder.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::pipelines {
namespace {

using testing_support::TempDir;

std::string bytes_of(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.data()), t.nbytes()};
}

std::vector<std::string> records_of(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds.collect())
    out.push_back(bytes_of(e.at(0)));
  return out;
}

std::vector<std::string> names_of(const std::vector<Element>& elements) {
  std::vector<std::string> out;
  for (const Element& e : elements)
    out.push_back(file_name(e));
  return out;
}

// Writes `files` TFRecord files "shard-<i>.tfrecord" of `per_file` records "f<i>r<j>".
std::vector<std::string> write_shards(const TempDir& tmp, int files, int per_file,
                                      const std::string& compression = "none") {
  std::vector<std::string> paths;
  for (int i = 0; i < files; ++i) {
    std::string name = "shard-";  // appends: GCC 12 -O3 flags `"..." + std::string&&` (-Wrestrict)
    name += std::to_string(i);
    name += ".tfrecord";
    const std::string path = (tmp / name).string();
    formats::TFRecordWriter w(path, io::parse_compression(compression));
    for (int j = 0; j < per_file; ++j)
      w.write(fmt::format("f{}r{}", i, j));
    w.close();
    paths.push_back(path);
  }
  return paths;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputDataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputDataError";
  return {};
}

// ---- list_files ----

TEST(ListFiles, SortedWithoutShuffle) {
  const TempDir tmp;
  for (const char* n : {"b.tfrecord", "a.tfrecord", "c.txt", "a1.tfrecord"})
    tmp.write(n, "");
  const auto names = names_of(list_files((tmp / "*.tfrecord").string(), {.shuffle = false}).collect());
  EXPECT_EQ(names, (std::vector<std::string>{(tmp / "a.tfrecord").string(),
                                             (tmp / "a1.tfrecord").string(),
                                             (tmp / "b.tfrecord").string()}));
}

TEST(ListFiles, SeededShuffleIsReproducibleAndNewEveryEpoch) {
  const TempDir tmp;
  std::vector<std::string> all;
  for (int i = 0; i < 20; ++i) {
    const std::string name = fmt::format("f{}", 100 + i);  // not "f" + std::string&&: GCC 12 -O3's false -Wrestrict
    tmp.write(name, "");
    all.push_back((tmp / name).string());
  }
  auto epochs = [&](uint64_t seed) {
    const Dataset ds = list_files((tmp / "f*").string(), {.shuffle = true, .seed = seed});
    std::vector<std::vector<std::string>> out;
    for (int e = 0; e < 3; ++e)
      out.push_back(names_of(ds.collect()));
    return out;
  };
  const auto a = epochs(42), b = epochs(42), c = epochs(43);
  EXPECT_EQ(a, b);  // the same seed: the same orders, epoch by epoch
  EXPECT_NE(a, c);
  EXPECT_NE(a[0], a[1]);  // reshuffled every epoch (20! orders: equal by chance ~never)
  EXPECT_NE(a[1], a[2]);
  for (auto order : a) {
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, all);
  }
}

TEST(ListFiles, NewFilesJoinTheNextEpoch) {
  const TempDir tmp;
  tmp.write("a", "");
  const Dataset ds = list_files((tmp / "*").string(), {.shuffle = false});
  EXPECT_EQ(ds.collect().size(), 1U);
  tmp.write("b", "");
  EXPECT_EQ(ds.collect().size(), 2U);
}

TEST(ListFiles, NoMatchIsAnErrorNamingThePattern) {
  const TempDir tmp;
  const std::string pattern = (tmp / "*.nothing").string();
  const std::string msg = error_of([&] { list_files(pattern).collect(); });
  EXPECT_NE(msg.find("list_files"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no file matches the pattern \"" + pattern + "\""), std::string::npos) << msg;
}

TEST(ListFiles, AFailedListingFailsAgainWhenAskedAgain) {
  const TempDir tmp;
  const Dataset ds = list_files((tmp / "*.nothing").string());
  auto it = ds.iterate();
  EXPECT_THROW(it->next(), InputDataError);
  EXPECT_THROW(it->next(), InputDataError);
}

TEST(ListFiles, AnExplicitListInItsOrderOrShuffledEveryEpoch) {
  std::vector<std::string> files;
  for (int i = 0; i < 20; ++i)
    files.push_back("/data/f" + std::to_string(i));  // listed, not opened: need not exist
  EXPECT_EQ(names_of(list_files(files, {.shuffle = false}).collect()), files);
  const Dataset shuffled = list_files(files, {.shuffle = true, .seed = 7});
  const auto a = names_of(shuffled.collect()), b = names_of(shuffled.collect());
  EXPECT_NE(a, files);
  EXPECT_NE(a, b);  // a new order every epoch
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  auto expected = files;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted, expected);
  // The same through a spec, and written back as a list.
  const Dataset spec = parse_pipeline(
      nlohmann::json::parse(R"({"stages": [{"op": "list_files", "files": ["/x/b", "/x/a"],
                                            "shuffle": false}]})"),
      "s.json");
  EXPECT_EQ(names_of(spec.collect()), (std::vector<std::string>{"/x/b", "/x/a"}));
  EXPECT_EQ(spec.to_json()["stages"][0]["files"], nlohmann::json({"/x/b", "/x/a"}));
  EXPECT_FALSE(spec.to_json()["stages"][0].contains("pattern"));
  EXPECT_THROW(list_files(std::vector<std::string>{}), std::invalid_argument);
}

TEST(FileName, RejectsNonFileNameComponents) {
  EXPECT_EQ(file_name(Element{file_name_tensor("/x/y")}), "/x/y");
  EXPECT_THROW(file_name(scalar_element(3)), std::invalid_argument);
  EXPECT_THROW(file_name(Element{}), std::invalid_argument);
}

// ---- tfrecord ----

TEST(TFRecordSource, ReadsFilesInOrderAndCountsTheReads) {
  const TempDir tmp;
  const auto files = write_shards(tmp, 3, 4);
  const Dataset ds = tfrecord(files, {.read = {.buffer_size = 16}});
  auto it = ds.iterate();
  std::vector<std::string> got;
  while (auto e = it->next()) {
    EXPECT_EQ(e->at(0).dtype(), DType::kUInt8);
    got.push_back(bytes_of(e->at(0)));
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      expected.push_back("f" + std::to_string(i) + "r" + std::to_string(j));
  EXPECT_EQ(got, expected);
  int64_t total = 0;
  for (const auto& f : files)
    total += static_cast<int64_t>(std::filesystem::file_size(f));
  const auto snap = it->model().snapshot();
  ASSERT_FALSE(snap.empty());
  EXPECT_EQ(snap[0].op, "tfrecord");
  EXPECT_EQ(snap[0].bytes_read, total);
  EXPECT_EQ(snap[0].files_opened, 3);
  EXPECT_GE(snap[0].read_calls, total / 16);
  EXPECT_GT(snap[0].read_mb_per_s, 0);
  EXPECT_GT(snap[0].mean_first_byte_ns, 0);
}

TEST(TFRecordSource, EveryReadIsATraceSpanNamingTheFileWithItsBytes) {
  const TempDir tmp;
  const auto files = write_shards(tmp, 2, 100);
  trace::Recorder& rec = trace::Recorder::global();
  rec.start();
  EXPECT_EQ(tfrecord(files, {.read = {.buffer_size = 256}}).collect().size(), 200U);
  const trace::Trace t = rec.stop();
  int64_t bytes = 0, file_spans = 0, read_spans = 0;
  for (const auto& lane : t.lanes) {
    for (const auto& span : lane.spans) {
      const std::string& name = t.strings.str(span.name);
      const bool per_file = name == "tfrecord: " + files[0] || name == "tfrecord: " + files[1];
      if (name == "tfrecord: read") ++read_spans;
      if (!per_file) continue;
      ++file_spans;
      ASSERT_NE(span.args, trace::kNoArgs);
      const auto args = nlohmann::json::parse(t.args[span.args]);
      bytes += args.at("bytes").get<int64_t>();
      EXPECT_TRUE(args.contains("offset"));
    }
  }
  int64_t total = 0;
  for (const auto& f : files)
    total += static_cast<int64_t>(std::filesystem::file_size(f));
  EXPECT_EQ(bytes, total);
  EXPECT_EQ(read_spans, file_spans);
  EXPECT_GE(file_spans, total / 256);
}

TEST(TFRecordSource, GzipAndColdAndDirectReadsGiveTheSameRecords) {
  const TempDir tmp;
  const auto plain = write_shards(tmp, 1, 50);
  const auto expected = records_of(tfrecord(plain));
  EXPECT_EQ(expected.size(), 50U);
  EXPECT_EQ(records_of(tfrecord(plain, {.read = {.drop_caches = true}})), expected);
  const std::string gz = (tmp / "g.tfrecord.gz").string();
  formats::TFRecordWriter w(gz, io::Compression::kGzip);
  for (const auto& r : expected)
    w.write(r);
  w.close();
  EXPECT_EQ(records_of(tfrecord({gz}, {.compression = "gzip"})), expected);
  try {
    EXPECT_EQ(records_of(tfrecord(plain, {.read = {.direct = true}})), expected);
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("does not support O_DIRECT"), std::string::npos) << e.what();
  }
}

TEST(TFRecordSource, CorruptMissingAndBadOptions) {
  const TempDir tmp;
  const auto files = write_shards(tmp, 1, 3);
  std::string bytes;
  {
    std::ifstream in(files[0], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[16 + 4 + 12 + 1] ^= 0x20;  // inside the second record's data (records are 20 bytes)
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << bytes;
  auto it = tfrecord(files).iterate();
  EXPECT_TRUE(it->next().has_value());  // the first record is intact
  std::string msg;
  try {
    it->next();
  } catch (const InputDataError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("tfrecord: " + files[0] + ": TFRecord record at byte 20: corrupt data"),
            std::string::npos)
      << msg;
  msg = error_of([&] { tfrecord({(tmp / "missing").string()}).collect(); });
  EXPECT_NE(msg.find("missing: cannot open"), std::string::npos) << msg;
  EXPECT_THROW(tfrecord({}), std::invalid_argument);
  EXPECT_THROW(tfrecord(files, {.compression = "zstd"}), std::invalid_argument);
  EXPECT_THROW(tfrecord(files, {.read = {.buffer_size = 0}}), std::invalid_argument);
}

// ---- fixed_length_records ----

TEST(FixedLengthRecords, HeaderRecordsFooter) {
  const TempDir tmp;
  tmp.write("a.bin", "HDRabcdefFT");
  tmp.write("b.bin", "HDRxyzFT");
  const Dataset ds = fixed_length_records({(tmp / "a.bin").string(), (tmp / "b.bin").string()},
                                          {.record_bytes = 3, .header_bytes = 3, .footer_bytes = 2});
  EXPECT_EQ(records_of(ds), (std::vector<std::string>{"abc", "def", "xyz"}));
  tmp.write("empty.bin", "HDRFT");
  EXPECT_TRUE(records_of(fixed_length_records({(tmp / "empty.bin").string()},
                                              {.record_bytes = 3, .header_bytes = 3,
                                               .footer_bytes = 2}))
                  .empty());
}

TEST(FixedLengthRecords, EveryTruncationIsAnErrorUnlessAtARecordBoundary) {
  const TempDir tmp;
  const std::string full = "HDR" "abcd" "efgh" "ijkl" "F";
  const std::string path = (tmp / "t.bin").string();
  for (size_t cut = 0; cut < full.size(); ++cut) {
    // Truncated files keep their footer: the body shrinks.
    std::string bytes = full.substr(0, cut);
    tmp.write("t.bin", bytes);
    const Dataset ds = fixed_length_records({path}, {.record_bytes = 4, .header_bytes = 3,
                                                     .footer_bytes = 1});
    if (cut < 4) {
      const std::string msg = error_of([&] { ds.collect(); });
      EXPECT_NE(msg.find(path + ": " + std::to_string(cut) + " bytes, fewer than the header"),
                std::string::npos) << msg;
    } else if ((cut - 4) % 4 == 0) {
      EXPECT_EQ(ds.collect().size(), (cut - 4) / 4) << cut;
    } else {
      const std::string msg = error_of([&] { ds.collect(); });
      EXPECT_NE(msg.find(path + ": truncated record at byte " +
                         std::to_string(3 + (cut - 4) / 4 * 4)),
                std::string::npos) << cut << ": " << msg;
    }
  }
}

// ---- parse_example ----

TEST(ParseExample, DecodesFeaturesInTheOrderAsked) {
  formats::FeatureValue image{.kind = formats::FeatureKind::kBytes, .bytes = {"pixels"}};
  formats::FeatureValue size{.kind = formats::FeatureKind::kInt64, .int64s = {6}};
  formats::FeatureValue score{.kind = formats::FeatureKind::kFloat, .floats = {0.25F, 1.5F}};
  const std::string ex = formats::encode_example({{"image", image}, {"size", size}, {"score", score}});
  const Function fn = make_function(
      "parse_example",
      nlohmann::json::parse(R"({"features": [{"key": "size", "type": "int64"},
                                             {"key": "image", "type": "bytes"},
                                             {"key": "score", "type": "float"}]})"));
  const Element out = fn.fn(Element{file_name_tensor(ex)});
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0], Tensor::from_vector<int64_t>({6}));
  EXPECT_EQ(bytes_of(out[1]), "pixels");
  EXPECT_EQ(out[2], Tensor::from_vector<float>({0.25F, 1.5F}));

  const Function missing = make_function(
      "parse_example", nlohmann::json::parse(R"({"features": [{"key": "label", "type": "int64"}]})"));
  try {
    missing.fn(Element{file_name_tensor(ex)});
    ADD_FAILURE() << "no error";
  } catch (const InputDataError& e) {  // bad data (exit 2), not a bad spec
    EXPECT_NE(std::string(e.what()).find("feature \"label\" is missing"), std::string::npos);
  }
  const Function wrong = make_function(
      "parse_example", nlohmann::json::parse(R"({"features": [{"key": "size", "type": "float"}]})"));
  EXPECT_THROW(wrong.fn(Element{file_name_tensor(ex)}), InputDataError);
  EXPECT_THROW(wrong.fn(Element{file_name_tensor(ex.substr(0, ex.size() - 3))}), InputDataError);
  EXPECT_THROW(wrong.fn(Element{Tensor::scalar<int64_t>(3)}), std::invalid_argument)
      << "not a record at all: the spec is wrong";
  EXPECT_THROW(make_function("parse_example", nlohmann::json::parse(
                                                  R"({"features": [{"key": "a", "type": "str"}]})")),
               SpecError);
}

// A record whose CRCs hold but whose contents do not decode (written so, or damaged before it was
// framed) is reported with the file it came from and the record's byte offset, however many
// functions later the decode fails.
TEST(ParseExample, ABadRecordIsReportedWithItsFileAndOffset) {
  const TempDir tmp;
  const std::string path = (tmp / "images.tfrecord").string();
  Tensor img(DType::kUInt8, {8, 8, 3});
  auto good = formats::encode_jpeg(img, 90);
  auto bad = good;
  bad.resize(bad.size() / 2);  // a JPEG cut short
  const auto example = [](const std::vector<std::byte>& jpeg) {
    formats::FeatureValue bytes{.kind = formats::FeatureKind::kBytes,
                                .bytes = {std::string(reinterpret_cast<const char*>(jpeg.data()),
                                                      jpeg.size())}};
    return formats::encode_example({{"image", bytes}});
  };
  {
    formats::TFRecordWriter w(path);
    w.write(example(good));
    w.write(example(good));
    w.write(example(bad));
    w.write("not an example");
    w.close();
  }
  std::vector<uint64_t> offsets;
  {
    formats::TFRecordReader r(io::open_stream(path, io::Compression::kNone));
    while (auto rec = r.next())
      offsets.push_back(rec->offset);
  }
  ASSERT_EQ(offsets.size(), 4U);
  const auto pipeline = [&](int64_t skip) {
    return parse_pipeline(nlohmann::json::parse(R"({"stages": [
        {"op": "tfrecord", "files": [")" + path + R"("]},
        {"op": "skip", "count": )" + std::to_string(skip) + R"(},
        {"op": "map", "fn": "chain", "args": {"fns": [
          {"fn": "parse_example", "args": {"features": [{"key": "image", "type": "bytes"}]}},
          {"fn": "decode_jpeg"}]}, "parallelism": 2}]})"),
                          "spec.json");
  };
  const auto error = [&](int64_t skip) {
    try {
      pipeline(skip).collect();
    } catch (const InputDataError& e) {
      return std::string(e.what());
    }
    return std::string("no InputDataError");
  };
  const std::string jpeg = error(0);
  EXPECT_NE(jpeg.find("decode_jpeg: " + path + ", record at byte " + std::to_string(offsets[2])),
            std::string::npos)
      << jpeg;
  const std::string record = error(3);
  EXPECT_NE(record.find("parse_example: " + path + ", record at byte " + std::to_string(offsets[3])),
            std::string::npos)
      << record;
  // The good records decode, their images knowing where they came from.
  const auto images = parse_pipeline(nlohmann::json::parse(R"({"stages": [
        {"op": "tfrecord", "files": [")" + path + R"("]}, {"op": "take", "count": 2},
        {"op": "map", "fn": "chain", "args": {"fns": [
          {"fn": "parse_example", "args": {"features": [{"key": "image", "type": "bytes"}]}},
          {"fn": "decode_jpeg"}]}}]})"), "spec.json").collect();
  ASSERT_EQ(images.size(), 2U);
  EXPECT_EQ(images[1][0].shape(), (Shape{8, 8, 3}));
  EXPECT_EQ(images[1][0].origin(), path + ", record at byte " + std::to_string(offsets[1]));
}

// ---- specs: the parallel-read pattern ----

TEST(FileSourceSpecs, ListFilesInterleaveTFRecordParseExample) {
  const TempDir tmp;
  for (int i = 0; i < 4; ++i) {
    formats::TFRecordWriter w((tmp / ("s" + std::to_string(i) + ".tfrecord")).string());
    for (int j = 0; j < 5; ++j) {
      formats::FeatureValue label{.kind = formats::FeatureKind::kInt64, .int64s = {10 * i + j}};
      w.write(formats::encode_example({{"label", label}}));
    }
    w.close();
  }
  const nlohmann::json doc = nlohmann::json::parse(R"({"stages": [
      {"op": "list_files", "pattern": ")" + (tmp / "*.tfrecord").string() + R"(", "shuffle": false},
      {"op": "interleave", "cycle_length": 2, "parallelism": "autotune",
       "pipeline": {"stages": [{"op": "tfrecord", "files": "$element", "buffer_size": 64}]}},
      {"op": "map", "fn": "parse_example", "args": {"features": [{"key": "label", "type": "int64"}]},
       "parallelism": 2},
      {"op": "prefetch", "buffer_size": 2}]})");
  const Dataset ds = parse_pipeline(doc, "spec.json");
  std::vector<int64_t> labels;
  for (const Element& e : ds.collect())
    labels.push_back(e.at(0).values<int64_t>()[0]);
  // cycle_length 2, block 1, deterministic: files 0 and 1 alternate, then 2 and 3.
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 20, 30, 21, 31, 22, 32,
                                          23, 33, 24, 34}));
  // Written back and read again: the same pipeline.
  const nlohmann::json written = ds.to_json();
  EXPECT_EQ(parse_pipeline(written, "written").to_json(), written);
  EXPECT_EQ(written["stages"][0]["op"], "list_files");
}

TEST(FileSourceSpecs, FieldErrorsNameThePath) {
  auto fails = [](const std::string& stage, const std::string& part) {
    try {
      parse_pipeline(nlohmann::json::parse(R"({"stages": [)" + stage + "]}"), "s.json");
      ADD_FAILURE() << "no error for " << stage;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  fails(R"({"op": "tfrecord", "files": []})", "s.json: stages[0].files: expected a file name");
  fails(R"({"op": "tfrecord", "files": 3})", "stages[0].files: expected a file name");
  fails(R"({"op": "tfrecord", "files": "$element"})", "only available inside an interleave");
  fails(R"({"op": "tfrecord", "files": "a", "compression": "lz4"})",
        "stages[0].compression: expected \"none\" or \"gzip\"");
  fails(R"({"op": "fixed_length_records", "files": "a"})", "stages[0].record_bytes");
  fails(R"({"op": "list_files"})", "stages[0]: expected exactly one of \"pattern\" or \"files\"");
  fails(R"({"op": "list_files", "pattern": "*", "files": ["a"]})", "exactly one of");
  fails(R"({"op": "list_files", "files": []})", "stages[0].files: expected a non-empty list");
  fails(R"({"op": "list_files", "files": ["a", 3]})", "stages[0].files: expected a non-empty list");
}

}  // namespace
}  // namespace pipeprof::pipelines
