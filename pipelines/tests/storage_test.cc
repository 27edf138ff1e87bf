// The byte-reading layer (io/), CRC-32C and the record formats (formats/): local files, buffered,
// O_DIRECT and mapped streams, gzip, page-cache dropping, TFRecord byte for byte against an
// independent writer, tf.Example, and the corruption battery (every truncation, every flipped byte,
// huge lengths, a wrong gzip magic, through read calls and through a mapping): each a clear error
// naming the file and the byte offset.
#include "io/storage.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "formats/crc32c.h"
#include "formats/example.h"
#include "formats/tfrecord.h"
#include "io/byte_stream.h"
#include "io/filesystem.h"
#include "pipeprof/pipelines/waits.h"
#include "pipeprof_testing/temp_dir.h"
#include "storage_test_util.h"

namespace pipeprof::pipelines {
namespace {

using formats::FormatError;
using io::IoError;
using testing_support::TempDir;
using testing_storage::random_bytes;
using testing_storage::read_all;
using testing_storage::write_all;

std::string to_hex(const std::string& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15U]);
  }
  return out;
}

// Expects `fn` to throw E whose message contains every one of `parts`.
template <typename E, typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nlacks: " << p;
  }
}

std::vector<std::string> read_records(const std::string& file,
                                      io::Compression c = io::Compression::kNone,
                                      size_t buffer = 64, bool verify = true, bool map = false) {
  formats::TFRecordReader reader(io::open_stream(file, c, {.map = map}, buffer), verify);
  std::vector<std::string> out;
  while (auto r = reader.next())
    out.emplace_back(reinterpret_cast<const char*>(r->data.get()), r->size);
  return out;
}

// ---- CRC-32C ----

TEST(Crc32c, StandardTestVector) {
  EXPECT_EQ(formats::crc32c(std::string_view("123456789")), 0xE3069283U)
      << formats::crc32c_implementation();
  EXPECT_EQ(formats::crc32c(std::string_view("")), 0U);
}

TEST(Crc32c, ExtendsAcrossPiecesAndMatchesABitwiseDefinition) {
  const std::string data = random_bytes(10007, 3);
  uint32_t bitwise = 0xFFFFFFFFU;
  for (unsigned char c : data) {
    bitwise ^= c;
    for (int k = 0; k < 8; ++k)
      bitwise = (bitwise & 1U) != 0 ? (bitwise >> 1) ^ 0x82F63B78U : bitwise >> 1;
  }
  bitwise ^= 0xFFFFFFFFU;
  EXPECT_EQ(formats::crc32c(data), bitwise);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, data.size()}) {
    const std::string_view a(data.data(), cut), b(data.data() + cut, data.size() - cut);
    EXPECT_EQ(formats::crc32c(b, formats::crc32c(a)), bitwise) << cut;
  }
}

TEST(Crc32Ieee, StandardTestVectorAndZlibAgree) {
  const auto bytes = [](std::string_view v) { return std::as_bytes(std::span(v.data(), v.size())); };
  EXPECT_EQ(formats::crc32_ieee(bytes("123456789")), 0xCBF43926U);
  EXPECT_EQ(formats::crc32_ieee(bytes("")), 0U);
  const std::string data = random_bytes(100003, 5);
  const uint32_t zlib = static_cast<uint32_t>(
      ::crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
  EXPECT_EQ(formats::crc32_ieee(bytes(data)), zlib);
  const std::string_view a(data.data(), 4097), b(data.data() + 4097, data.size() - 4097);
  EXPECT_EQ(formats::crc32_ieee(bytes(b), formats::crc32_ieee(bytes(a))), zlib);
}

TEST(Crc32c, MaskIsTensorFlows) {
  EXPECT_EQ(formats::mask_crc(0), 0xa282ead8U);
  EXPECT_EQ(formats::mask_crc(0xE3069283U), ((0xE3069283U >> 15) | (0xE3069283U << 17)) + 0xa282ead8U);
}

// ---- local files ----

TEST(LocalFile, SizeAndRangedReads) {
  const TempDir tmp;
  const std::string data = random_bytes(10000, 1);
  write_all(tmp / "f", data);
  auto f = io::open_file((tmp / "f").string());
  EXPECT_EQ(f->size(), data.size());
  std::string buf(100, '\0');
  EXPECT_EQ(f->read_at(9950, std::as_writable_bytes(std::span(buf))), 50U);
  EXPECT_EQ(buf.substr(0, 50), data.substr(9950));
  EXPECT_EQ(f->read_at(123, std::as_writable_bytes(std::span(buf))), 100U);
  EXPECT_EQ(buf, data.substr(123, 100));
  EXPECT_EQ(f->read_at(20000, std::as_writable_bytes(std::span(buf))), 0U);
  auto url = io::open_file("file://" + (tmp / "f").string());
  EXPECT_EQ(url->size(), data.size());
}

TEST(LocalFile, ErrorsNameTheFile) {
  const TempDir tmp;
  expect_error<IoError>([&] { io::open_file((tmp / "missing").string()); },
                        {(tmp / "missing").string(), "cannot open", "No such file"});
  expect_error<IoError>([&] { io::open_file(tmp.path().string()); }, {"is a directory"});
  expect_error<IoError>([&] { io::open_file("gs://bucket/x"); },
                        {"gs://bucket/x", "no storage backend for \"gs://\"", "s3://"});
}

// A scheme plugs in through the registry: open_file and match_files reach it, and with it the file
// sources; nothing else in the storage layer changes.
class MemoryFileSystem final : public io::FileSystem {
 public:
  class File final : public io::RandomAccessFile {
   public:
    File(std::string name, std::string bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
    const std::string& name() const override { return name_; }
    uint64_t size() const override { return bytes_.size(); }
    size_t read_at(uint64_t offset, std::span<std::byte> out) override {
      if (offset >= bytes_.size()) return 0;
      const size_t n = std::min<size_t>(out.size(), bytes_.size() - offset);
      std::memcpy(out.data(), bytes_.data() + offset, n);
      return n;
    }

   private:
    std::string name_, bytes_;
  };
  std::unique_ptr<io::RandomAccessFile> open(const std::string& name,
                                             const io::OpenOptions&) override {
    if (name != "mem://a/b") throw IoError(name + ": no such object");
    return std::make_unique<File>(name, "hello");
  }
  std::vector<std::string> match(const std::string& pattern, const StorageContext*) override {
    return pattern == "mem://a/*" ? std::vector<std::string>{"mem://a/b"} : std::vector<std::string>{};
  }
};

TEST(FileSystems, ASchemeRegisteredByNameServesOpenAndMatch) {
  EXPECT_EQ(io::scheme_of("/a/b"), "");
  EXPECT_EQ(io::scheme_of("file:///a/b"), "file");
  EXPECT_EQ(io::scheme_of("https://h/x"), "https");
  EXPECT_EQ(io::scheme_of("a b://x"), "");  // not a scheme: a path
  expect_error<IoError>([&] { io::open_file("mem://a/b"); },
                        {"no storage backend for \"mem://\"", "http://", "https://"});
  io::register_filesystem("mem", std::make_shared<MemoryFileSystem>());
  auto f = io::open_file("mem://a/b");
  EXPECT_EQ(f->size(), 5U);
  std::string buf(5, '\0');
  EXPECT_EQ(io::read_fully(*f, 0, std::as_writable_bytes(std::span(buf))), 5U);
  EXPECT_EQ(buf, "hello");
  EXPECT_EQ(io::match_files("mem://a/*"), std::vector<std::string>{"mem://a/b"});
  expect_error<IoError>([&] { io::open_file("mem://a/c"); }, {"mem://a/c: no such object"});
  // file:// patterns are local patterns.
  const TempDir tmp;
  write_all(tmp / "x.bin", "1");
  EXPECT_EQ(io::match_files("file://" + (tmp / "*.bin").string()),
            std::vector<std::string>{(tmp / "x.bin").string()});
}

TEST(LocalFile, DirectReadsAreAlignedOrRefused) {
  const TempDir tmp;
  const std::string data = random_bytes(3 * 4096 + 100, 2);
  write_all(tmp / "f", data);
  std::unique_ptr<io::RandomAccessFile> f;
  try {
    f = io::open_file((tmp / "f").string(), {.direct = true});
  } catch (const IoError& e) {
    // tmpfs and some others refuse O_DIRECT: the error says so.
    EXPECT_NE(std::string(e.what()).find("does not support O_DIRECT"), std::string::npos)
        << e.what();
    GTEST_SKIP() << e.what();
  }
  io::AlignedBuffer buf(8192);
  expect_error<IoError>([&] { f->read_at(1, buf.span()); }, {"not aligned"});
  // A stream over it reads everything, aligned, whatever the buffer size asked.
  io::FileStream s(io::open_file((tmp / "f").string(), {.direct = true}), 1000);
  std::string out(data.size() + 10, '\0');
  EXPECT_EQ(s.read(std::as_writable_bytes(std::span(out))), data.size());
  EXPECT_EQ(out.substr(0, data.size()), data);
}

TEST(LocalFile, DropFromPageCache) {
  const TempDir tmp;
  write_all(tmp / "f", random_bytes(1 << 20, 4));
  EXPECT_NO_THROW(io::drop_from_page_cache((tmp / "f").string()));
  expect_error<IoError>([&] { io::drop_from_page_cache((tmp / "missing").string()); },
                        {"missing", "cannot open"});
}

TEST(LocalFile, MatchFilesIsSortedBytewise) {
  const TempDir tmp;
  for (const char* n : {"b.rec", "a.rec", "B.rec", "c.txt", "a10.rec", "a2.rec"})
    write_all(tmp / n, "x");
  const auto files = io::match_files((tmp / "*.rec").string());
  std::vector<std::string> expected;
  for (const char* n : {"B.rec", "a.rec", "a10.rec", "a2.rec", "b.rec"})
    expected.push_back((tmp / n).string());
  EXPECT_EQ(files, expected);
  EXPECT_TRUE(io::match_files((tmp / "*.none").string()).empty());
}

// A folder of the pattern that cannot be read is named, with the reason.
TEST(LocalFile, MatchFilesNamesTheFolderItCannotRead) {
  const TempDir tmp;
  const std::string missing = (tmp / "missing").string();
  expect_error<IoError>([&] { io::match_files(missing + "/*.rec"); },
                        {missing + ": No such file or directory", "missing/*.rec"});
}

// ---- streams ----

TEST(FileStream, ReadsAcrossBufferBoundariesAndReportsEveryRead) {
  const TempDir tmp;
  const std::string data = random_bytes(1000, 5);
  write_all(tmp / "f", data);
  int64_t bytes = 0, calls = 0, firsts = 0;
  io::FileStream s(io::open_file((tmp / "f").string()), 64, [&](const io::ReadEvent& e) {
    bytes += static_cast<int64_t>(e.bytes);
    ++calls;
    firsts += e.first ? 1 : 0;
    EXPECT_LE(e.start_ticks, e.end_ticks);
  });
  std::string out;
  std::array<char, 37> chunk{};
  while (size_t n = s.read(std::as_writable_bytes(std::span(chunk))))
    out.append(chunk.data(), n);
  EXPECT_EQ(out, data);
  EXPECT_EQ(s.position(), data.size());
  EXPECT_EQ(*s.remaining(), 0U);
  EXPECT_EQ(bytes, 1000);
  EXPECT_EQ(firsts, 1);
  EXPECT_GE(calls, 1000 / 64);
  // A read larger than the buffer goes straight to the caller: one call.
  io::FileStream big(io::open_file((tmp / "f").string()), 64, [&](const io::ReadEvent&) { ++calls; });
  calls = 0;
  std::string all(1000, '\0');
  EXPECT_EQ(big.read(std::as_writable_bytes(std::span(all))), 1000U);
  EXPECT_EQ(all, data);
  EXPECT_EQ(calls, 1);
}

TEST(FileStream, SharedReadsAreViewsThatOutliveTheNextFill) {
  const TempDir tmp;
  const std::string data = random_bytes(5000, 8);
  write_all(tmp / "f", data);
  io::FileStream s(io::open_file((tmp / "f").string()), 1024);
  std::vector<io::SharedBytes> parts;
  size_t at = 0;
  // Large parts (a quarter of the buffer or more) are views, small ones copies; all stay valid.
  for (size_t n : {300U, 700U, 10U, 1024U, 900U, 256U, 100U, 2000U, 5000U}) {
    io::SharedBytes b = s.read_shared(n);
    const size_t expect = std::min(n, data.size() - at);
    ASSERT_EQ(b.size, expect) << n;
    parts.push_back(b);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data.get()), b.size),
              data.substr(at, expect)) << n;
    at += expect;
  }
  EXPECT_EQ(at, data.size());
  at = 0;
  for (const auto& b : parts) {  // after every later fill, the earlier parts are unchanged
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data.get()), b.size),
              data.substr(at, b.size));
    at += b.size;
  }
}

TEST(MappedStream, SharedReadsAreViewsOfTheMappingThatOutliveTheStream) {
  const TempDir tmp;
  const std::string data = random_bytes(10000, 11);
  write_all(tmp / "f", data);
  int64_t bytes = 0, calls = 0, firsts = 0;
  uint64_t next_offset = 0;
  auto stream = io::open_stream((tmp / "f").string(), io::Compression::kNone, {.map = true}, 4096,
                                [&](const io::ReadEvent& e) {
                                  EXPECT_EQ(e.offset, next_offset);  // windows, in order
                                  next_offset += e.bytes;
                                  bytes += static_cast<int64_t>(e.bytes);
                                  ++calls;
                                  firsts += e.first ? 1 : 0;
                                });
  ASSERT_NE(dynamic_cast<io::MappedStream*>(stream.get()), nullptr);
  std::vector<io::SharedBytes> parts;
  std::array<std::byte, 7> small{};
  ASSERT_EQ(stream->read(small), small.size());
  for (size_t n : {1U, 5000U, 3000U, 9999U}) {
    parts.push_back(stream->read_shared(n));
    if (parts.size() > 1) {  // consecutive views are consecutive bytes of one mapping
      const auto& prev = parts[parts.size() - 2];
      EXPECT_EQ(parts.back().data.get(), prev.data.get() + prev.size);
    }
  }
  EXPECT_EQ(parts.back().size, 10000U - 7 - 1 - 5000 - 3000);
  EXPECT_EQ(stream->read_shared(10).size, 0U);
  EXPECT_EQ(*stream->remaining(), 0U);
  EXPECT_EQ(bytes, 10000);
  EXPECT_EQ(calls, 3);  // 4096-byte windows
  EXPECT_EQ(firsts, 1);
  stream.reset();  // the views keep the mapping
  std::string joined(reinterpret_cast<const char*>(small.data()), small.size());
  for (auto& p : parts)
    joined.append(reinterpret_cast<const char*>(p.data.get()), p.size);
  EXPECT_EQ(joined, data);
  // A view may be written to: its own copy of the page, never the file.
  parts[1].data.get()[0] = static_cast<std::byte>(~static_cast<unsigned char>(data[8]));
  EXPECT_EQ(read_all(tmp / "f"), data);
}

// Each window mapped in is a read, and the watchdog's sign of life: a reader going through a large
// mapped file is never taken for a stalled one.
TEST(MappedStream, EveryWindowReadCountsAsProgress) {
  const TempDir tmp;
  write_all(tmp / "f", random_bytes(10000, 12));
  auto stream = io::open_stream((tmp / "f").string(), io::Compression::kNone, {.map = true}, 4096, {});
  ASSERT_NE(dynamic_cast<io::MappedStream*>(stream.get()), nullptr);
  const uint64_t before = progress_count();
  std::array<std::byte, 7> small{};
  ASSERT_EQ(stream->read(small), small.size());  // the first window
  EXPECT_GE(progress_count(), before + 1);
  EXPECT_EQ(stream->read_shared(9993).size, 9993U);  // the other two
  EXPECT_GE(progress_count(), before + 3);
}

TEST(MappedStream, OnlyUncompressedPageCachedNonEmptyFilesAreMapped) {
  const TempDir tmp;
  write_all(tmp / "f", random_bytes(5000, 12));
  write_all(tmp / "empty", "");
  const auto mapped = [&](const std::string& name, io::Compression c, io::OpenOptions o) {
    auto s = io::open_stream((tmp / name).string(), c, o);
    return dynamic_cast<io::MappedStream*>(s.get()) != nullptr;
  };
  EXPECT_TRUE(mapped("f", io::Compression::kNone, {.map = true}));
  EXPECT_FALSE(mapped("f", io::Compression::kNone, {.map = false}));
  {
    formats::TFRecordWriter w((tmp / "f.gz").string(), io::Compression::kGzip);
    w.write(std::string_view("record"));
    w.close();
  }
  EXPECT_FALSE(mapped("f.gz", io::Compression::kGzip, {.map = true}));
  EXPECT_EQ(read_records((tmp / "f.gz").string(), io::Compression::kGzip, 64, true, true),
            std::vector<std::string>{"record"});
  EXPECT_FALSE(mapped("empty", io::Compression::kNone, {.map = true}));
  EXPECT_EQ(read_records((tmp / "empty").string(), io::Compression::kNone, 64, true, true),
            std::vector<std::string>{});
  try {
    EXPECT_FALSE(mapped("f", io::Compression::kNone, {.direct = true, .map = true}));
  } catch (const IoError& e) {  // a file system without O_DIRECT (tmpfs)
    EXPECT_NE(std::string(e.what()).find("O_DIRECT"), std::string::npos) << e.what();
  }
}

// A file cut short while it is read through a mapping: an IoError naming the file and the bytes,
// not a SIGBUS.
TEST(MappedStream, AFileThatShrinksWhileReadIsAnErrorNotACrash) {
#if !defined(MADV_POPULATE_READ)
  GTEST_SKIP() << "no MADV_POPULATE_READ (Linux < 5.14 headers): a shrunk file faults";
#endif
  const TempDir tmp;
  const std::string data = random_bytes(64 * 1024, 13);
  write_all(tmp / "f", data);
  auto stream = io::open_stream((tmp / "f").string(), io::Compression::kNone, {.map = true}, 4096);
  ASSERT_NE(dynamic_cast<io::MappedStream*>(stream.get()), nullptr);
  const io::SharedBytes first = stream->read_shared(100);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(first.data.get()), 100), data.substr(0, 100));
  std::filesystem::resize_file(tmp / "f", 8192);
  expect_error<IoError>(
      [&] { (void)stream->read_shared(20000); },
      {(tmp / "f").string(), "cannot be read", "shorter than when it was opened"});
}

TEST(GzipStream, InflatesConcatenatedMembers) {
  const TempDir tmp;
  const std::string a = random_bytes(100000, 6) + std::string(50000, 'z'), b = "tail";
  for (const std::string* part : {&a, &b}) {
    gzFile gz = gzopen((tmp / "f.gz").c_str(), part == &a ? "wb" : "ab");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, part->data(), static_cast<unsigned>(part->size())),
              static_cast<int>(part->size()));
    gzclose(gz);
  }
  auto s = io::open_stream((tmp / "f.gz").string(), io::Compression::kGzip, {}, 1000);
  std::string out(a.size() + b.size() + 5, '\0');
  size_t got = 0;
  while (size_t n = s->read(std::as_writable_bytes(std::span(out)).subspan(got, 777 < out.size() - got ? 777 : out.size() - got)))
    got += n;
  EXPECT_EQ(got, a.size() + b.size());
  EXPECT_EQ(out.substr(0, got), a + b);
}

// ---- TFRecord ----

// Two records written by hand-checked bytes: "" and "hello" (length, masked CRC of the length,
// data, masked CRC of the data; CRCs from the bitwise definition in tfrecord_reference.py).
constexpr const char* kFixtureHex =
    "000000000000000029039807d8ea82a2"
    "0500000000000000eab2043e68656c6c6fbb1f1c19";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(TFRecord, WriterIsByteIdenticalToTheFixture) {
  const TempDir tmp;
  formats::TFRecordWriter w((tmp / "f.tfrecord").string());
  w.write(std::string_view(""));
  w.write(std::string_view("hello"));
  w.close();
  EXPECT_EQ(to_hex(read_all(tmp / "f.tfrecord")), kFixtureHex);
  EXPECT_EQ(to_hex(formats::tfrecord_frame("hello")), std::string(kFixtureHex).substr(32));
  EXPECT_EQ(read_records((tmp / "f.tfrecord").string()), (std::vector<std::string>{"", "hello"}));
}

TEST(TFRecord, WriterMatchesAnIndependentPythonWriter) {
  if (std::system("python3 -c 'import struct' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 is not available";
  }
  const TempDir tmp;
  std::vector<std::string> records{"a", random_bytes(300, 7), std::string(20000, '\x01'), ""};
  std::string cmd = "python3 " + std::string(PIPEPROF_TEST_DATA) + "/tfrecord_reference.py";
  for (const auto& r : records)
    cmd += " '" + to_hex(r) + "'";
  // Each argument stays under the kernel's 128 KiB limit per argument (40 KB of hex).
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string expected;
  std::array<char, 65536> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe))
    expected.append(buf.data(), n);
  ASSERT_EQ(pclose(pipe), 0);
  while (!expected.empty() && expected.back() == '\n')
    expected.pop_back();
  formats::TFRecordWriter w((tmp / "f").string());
  for (const auto& r : records)
    w.write(r);
  w.close();
  EXPECT_EQ(to_hex(read_all(tmp / "f")), expected);
}

TEST(TFRecord, GzipRoundTrip) {
  const TempDir tmp;
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i)
    records.push_back(random_bytes(static_cast<size_t>(i * 37), static_cast<uint64_t>(i)));
  formats::TFRecordWriter w((tmp / "f.gz").string(), io::Compression::kGzip);
  for (const auto& r : records)
    w.write(r);
  w.close();
  EXPECT_EQ(read_records((tmp / "f.gz").string(), io::Compression::kGzip), records);
  // Inflated with zlib's own gunzip reader, the bytes are those of the uncompressed file.
  std::string plain;
  for (const auto& r : records)
    plain += formats::tfrecord_frame(r);
  gzFile gz = gzopen((tmp / "f.gz").c_str(), "rb");
  std::string inflated(plain.size() + 10, '\0');
  const int n = gzread(gz, inflated.data(), static_cast<unsigned>(inflated.size()));
  gzclose(gz);
  EXPECT_EQ(inflated.substr(0, static_cast<size_t>(n)), plain);
}

// The battery: a file of several records cut at every byte, and with every byte flipped.
TEST(TFRecordCorruption, EveryTruncationIsTheRecordsBeforeItOrAnErrorAtItsOffset) {
  const TempDir tmp;
  std::vector<std::string> records{"first", "", random_bytes(100, 9), "last record"};
  std::string file;
  std::vector<size_t> boundaries{0};
  for (const auto& r : records) {
    file += formats::tfrecord_frame(r);
    boundaries.push_back(file.size());
  }
  const std::string path = (tmp / "t.tfrecord").string();
  for (size_t cut = 0; cut < file.size(); ++cut) {
    write_all(path, file.substr(0, cut));
    const auto it = std::find(boundaries.begin(), boundaries.end(), cut);
    if (it != boundaries.end()) {
      const auto k = static_cast<size_t>(it - boundaries.begin());
      for (bool map : {false, true}) {
        EXPECT_EQ(read_records(path, io::Compression::kNone, 64, true, map),
                  std::vector<std::string>(records.begin(), records.begin() + k))
            << cut << (map ? " mapped" : "");
      }
      continue;
    }
    // Inside record k: an error naming the file and the record's offset.
    const auto k = static_cast<size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), cut) -
                                       boundaries.begin() - 1);
    for (bool map : {false, true}) {
      expect_error<FormatError>(
          [&] { read_records(path, io::Compression::kNone, 64, true, map); },
          {path, "record at byte " + std::to_string(boundaries[k]) + ":", "truncated"});
    }
  }
}

TEST(TFRecordCorruption, EveryFlippedByteIsAnErrorAtItsRecord) {
  const TempDir tmp;
  std::vector<std::string> records{"abc", random_bytes(40, 10), "xyz"};
  std::string file;
  std::vector<size_t> starts;
  for (const auto& r : records) {
    starts.push_back(file.size());
    file += formats::tfrecord_frame(r);
  }
  const std::string path = (tmp / "t.tfrecord").string();
  for (size_t i = 0; i < file.size(); ++i) {
    std::string bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    write_all(path, bad);
    const auto k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), i) -
                                       starts.begin() - 1);
    for (bool map : {false, true}) {
      expect_error<FormatError>([&] { read_records(path, io::Compression::kNone, 64, true, map); },
                                {path, "record at byte " + std::to_string(starts[k]) + ":"});
    }
  }
}

TEST(TFRecordCorruption, HugeLengthIsAnErrorNotAnAllocation) {
  const TempDir tmp;
  // A valid length CRC over an absurd length: only the size check stands between it and a
  // 4 EiB allocation.
  std::string header(12, '\0');
  const uint64_t huge = uint64_t{1} << 62;
  for (int i = 0; i < 8; ++i)
    header[static_cast<size_t>(i)] = static_cast<char>((huge >> (8 * i)) & 0xFFU);
  const uint32_t crc = formats::mask_crc(formats::crc32c(std::string_view(header.data(), 8)));
  for (int i = 0; i < 4; ++i)
    header[static_cast<size_t>(8 + i)] = static_cast<char>((crc >> (8 * i)) & 0xFFU);
  const std::string file = formats::tfrecord_frame("ok") + header + "some bytes";
  write_all(tmp / "huge.tfrecord", file);
  for (bool map : {false, true}) {
    expect_error<FormatError>(
        [&] {
          read_records((tmp / "huge.tfrecord").string(), io::Compression::kNone, 64, true, map);
        },
        {"huge.tfrecord", "record at byte 18:", "4611686018427387904", "bytes left in the file"});
  }
  // Compressed, the size is unknown: the buffer grows only with the bytes that arrive, and the
  // end of the stream is a truncation error.
  formats::TFRecordWriter w((tmp / "huge.gz").string(), io::Compression::kGzip);
  w.write(std::string_view("ok"));
  w.close();
  {
    gzFile gz = gzopen((tmp / "huge.gz").c_str(), "wb");
    const std::string body = formats::tfrecord_frame("ok") + header + "some bytes";
    gzwrite(gz, body.data(), static_cast<unsigned>(body.size()));
    gzclose(gz);
  }
  expect_error<FormatError>(
      [&] { read_records((tmp / "huge.gz").string(), io::Compression::kGzip); },
      {"huge.gz", "record at byte 18:", "truncated data (10 of 4611686018427387904 bytes)"});
}

TEST(TFRecordCorruption, WrongGzipMagicAndCorruptGzip) {
  const TempDir tmp;
  formats::TFRecordWriter w((tmp / "f.gz").string(), io::Compression::kGzip);
  for (int i = 0; i < 100; ++i)
    w.write(random_bytes(100, static_cast<uint64_t>(i)));
  w.close();
  const std::string good = read_all(tmp / "f.gz");
  std::string bad = good;
  bad[0] = 'X';  // gzip magic 1f 8b
  write_all(tmp / "magic.gz", bad);
  expect_error<IoError>([&] { read_records((tmp / "magic.gz").string(), io::Compression::kGzip); },
                        {"magic.gz", "gzip data corrupt at compressed byte", "header"});
  // Cut inside the compressed data: truncated.
  write_all(tmp / "cut.gz", good.substr(0, good.size() / 2));
  expect_error<IoError>([&] { read_records((tmp / "cut.gz").string(), io::Compression::kGzip); },
                        {"cut.gz", "gzip stream truncated at compressed byte"});
  // A flipped byte in the middle: zlib's checks or the record CRCs catch it.
  bad = good;
  bad[good.size() / 2] = static_cast<char>(bad[good.size() / 2] ^ 0x55);
  write_all(tmp / "flip.gz", bad);
  EXPECT_ANY_THROW(read_records((tmp / "flip.gz").string(), io::Compression::kGzip));
}

TEST(TFRecord, CrcCheckCanBeSwitchedOff) {
  const TempDir tmp;
  std::string file = formats::tfrecord_frame("data");
  file[file.size() - 1] = static_cast<char>(file.back() ^ 1);  // the data CRC
  write_all(tmp / "f", file);
  expect_error<FormatError>([&] { read_records((tmp / "f").string()); }, {"corrupt data"});
  EXPECT_EQ(read_records((tmp / "f").string(), io::Compression::kNone, 64, false),
            (std::vector<std::string>{"data"}));
}

// ---- tf.Example ----

TEST(Example, RoundTripOfEveryKind) {
  formats::FeatureValue image{.kind = formats::FeatureKind::kBytes, .bytes = {"\x01\x02\x03"}};
  formats::FeatureValue size{.kind = formats::FeatureKind::kInt64, .int64s = {3, -1, 1LL << 40}};
  formats::FeatureValue score{.kind = formats::FeatureKind::kFloat, .floats = {0.5F, -2.25F}};
  const std::string ex = formats::encode_example({{"image", image}, {"size", size}, {"score", score}});
  const auto f = formats::decode_example(std::as_bytes(std::span(ex)), {"size", "score", "image", "none"});
  ASSERT_EQ(f.size(), 4U);
  EXPECT_EQ(f[0].kind, formats::FeatureKind::kInt64);
  EXPECT_EQ(f[0].int64s, (std::vector<int64_t>{3, -1, 1LL << 40}));
  EXPECT_EQ(f[1].floats, (std::vector<float>{0.5F, -2.25F}));
  ASSERT_EQ(f[2].bytes.size(), 1U);
  EXPECT_EQ(f[2].bytes[0].size(), 3U);
  EXPECT_EQ(f[3].kind, formats::FeatureKind::kNone);
}

TEST(Example, WireBytesOfAKnownExample) {
  // {"a": int64_list [1]} by hand: Example.features(1) { feature(1) { key(1) "a", value(2)
  // { int64_list(3) { value(1) packed [1] } } } }.
  formats::FeatureValue v{.kind = formats::FeatureKind::kInt64, .int64s = {1}};
  EXPECT_EQ(to_hex(formats::encode_example({{"a", v}})), "0a0c0a0a0a016112051a030a0101");
  // Unpacked repeated values (older writers) decode the same.
  const std::string unpacked = from_hex("0a0d0a0b0a016112061a04080108" "02");
  const auto f = formats::decode_example(std::as_bytes(std::span(unpacked)), {"a"});
  EXPECT_EQ(f[0].int64s, (std::vector<int64_t>{1, 2}));
}

TEST(Example, MalformedInputNamesTheOffset) {
  formats::FeatureValue v{.kind = formats::FeatureKind::kBytes, .bytes = {"payload"}};
  const std::string ex = formats::encode_example({{"image", v}});
  for (size_t cut = 1; cut < ex.size(); ++cut) {
    const std::string part = ex.substr(0, cut);
    expect_error<FormatError>(
        [&] { formats::decode_example(std::as_bytes(std::span(part)), {"image"}); },
        {"tf.Example:", "at byte"});
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
