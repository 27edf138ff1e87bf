// Compressed traces: gzip (PyTorch's tensorboard_trace_handler with use_gzip writes
// *.pt.trace.json.gz, HTA's examples are gzip) and zstd are recognised by their first bytes and read
// like the plain file; a damaged one is a TraceFormatError naming the file and a byte, never a crash.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "compress_for_tests.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::trace {
namespace {

namespace fs = std::filesystem;

// A small Chrome trace: two threads of 200 complete events each.
std::string trace_text() {
  std::string out = R"({"traceEvents": [)";
  for (int tid = 10; tid < 12; ++tid) {
    for (int i = 0; i < 200; ++i) {
      out += (out.back() == '[' ? "" : ",") +
             std::string(R"({"name": "step", "cat": "train", "ph": "X", "pid": 1, "tid": )") +
             std::to_string(tid) + R"(, "ts": )" + std::to_string(1000 * i) + R"(, "dur": 800})";
    }
  }
  return out + "]}\n";
}

using test_compress::gzip;
using test_compress::zstd;

fs::path write(const pipeprof::testing_support::TempDir& dir, const std::string& name, const std::string& bytes) {
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string error_of(const fs::path& p) {
  try {
    load_chrome_json(p);
  } catch (const TraceFormatError& e) {
    return e.what();
  }
  return "";
}

TEST(CompressedTrace, GzipAndZstdReadAsThePlainFileWhateverTheirName) {
  const pipeprof::testing_support::TempDir dir;
  const std::string text = trace_text();
  const size_t spans = load_chrome_json(write(dir, "plain.json", text)).span_count();
  ASSERT_EQ(spans, 400u);
  EXPECT_EQ(load_chrome_json(write(dir, "t.pt.trace.json.gz", gzip(text))).span_count(), spans);
  EXPECT_EQ(load_chrome_json(write(dir, "t.json.zst", zstd(text))).span_count(), spans);
  // By content, not by name; two gzip members are one stream (as `cat a.gz b.gz` gives).
  EXPECT_EQ(load_chrome_json(write(dir, "named-plain.json", gzip(text))).span_count(), spans);
  const std::string half = text.substr(0, text.size() / 2);
  EXPECT_EQ(load_chrome_json(write(dir, "two.gz", gzip(half) + gzip(text.substr(half.size()))))
                .span_count(),
            spans);
}

TEST(CompressedTrace, DamagedDataNamesTheFileAndAByte) {
  const pipeprof::testing_support::TempDir dir;
  const std::string text = trace_text();
  const std::string gz = gzip(text), zs = zstd(text);
  const fs::path cut_gz = write(dir, "cut.json.gz", gz.substr(0, gz.size() / 2));
  EXPECT_EQ(error_of(cut_gz), cut_gz.string() + ": byte " + std::to_string(gz.size() / 2) +
                                  ": truncated gzip data (the file ends inside the stream)");
  std::string flipped = gz;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x55);
  EXPECT_NE(error_of(write(dir, "flipped.json.gz", flipped)).find("flipped.json.gz: byte "),
            std::string::npos);
  const fs::path cut_zs = write(dir, "cut.json.zst", zs.substr(0, zs.size() / 2));
  EXPECT_NE(error_of(cut_zs).find(cut_zs.string() + ": byte "), std::string::npos) << error_of(cut_zs);
  EXPECT_NE(error_of(cut_zs).find("zstd"), std::string::npos) << error_of(cut_zs);
  const fs::path tail = write(dir, "tail.json.gz", gz + "garbage");
  EXPECT_EQ(error_of(tail), tail.string() + ": byte " + std::to_string(gz.size()) +
                                ": data after the end of the gzip stream");
  // Decompressed fine but not JSON: the reader's own error, naming the file.
  EXPECT_NE(error_of(write(dir, "words.gz", gzip("not a trace"))).find("words.gz: byte 0"),
            std::string::npos);
}

// Random damage to the compressed bytes: an error or a usable trace, never a crash or a hang.
TEST(CompressedTrace, RandomlyDamagedStreamsNeverCrash) {
  const pipeprof::testing_support::TempDir dir;
  const std::string text = trace_text();
  std::mt19937 rng(7);
  for (const std::string& clean : {gzip(text), zstd(text)}) {
    for (int round = 0; round < 200; ++round) {
      std::string bytes = clean;
      const int changes = 1 + static_cast<int>(rng() % 4);
      for (int c = 0; c < changes; ++c) {
        const size_t at = 2 + rng() % (bytes.size() - 2);  // keep the magic: the decoders see it
        bytes[at] = static_cast<char>(rng());
      }
      if (rng() % 4 == 0) bytes.resize(2 + rng() % (bytes.size() - 2));
      const fs::path p = write(dir, "fuzz", bytes);
      try {
        (void)load_chrome_json(p);
      } catch (const TraceFormatError&) {
      }
    }
  }
}

}  // namespace
}  // namespace pipeprof::trace
