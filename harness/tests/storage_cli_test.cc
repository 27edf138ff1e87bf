// `pipeprof run` on specs that read files: list_files interleaved over TFRecord files in a temp
// folder (parallel reads, parse_example), its per-stage read statistics in the result, and bad
// input data (a corrupt record, a truncated file, no matching file) as exit 2 naming file and offset.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "formats/example.h"
#include "formats/tfrecord.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing_support::TempDir;
namespace formats = pipeprof::pipelines::formats;

using pipeprof::testing::CliResult;

CliResult run(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

// Four TFRecord files of 8 tf.Examples each: {"label": int64 10 * file + record}.
void write_dataset(const TempDir& tmp) {
  for (int i = 0; i < 4; ++i) {
    formats::TFRecordWriter w((tmp / ("train-" + std::to_string(i) + ".tfrecord")).string());
    for (int j = 0; j < 8; ++j) {
      formats::FeatureValue label{.kind = formats::FeatureKind::kInt64, .int64s = {10 * i + j}};
      formats::FeatureValue image{.kind = formats::FeatureKind::kBytes,
                                  .bytes = {std::string(1000, static_cast<char>(j))}};
      w.write(formats::encode_example({{"image", image}, {"label", label}}));
    }
    w.close();
  }
}

std::string spec_text(const TempDir& tmp, const std::string& pattern) {
  return R"({"name": "tfrecord_read", "stages": [
      {"op": "list_files", "pattern": ")" + (tmp / pattern).string() + R"(", "seed": 1},
      {"op": "interleave", "cycle_length": 4, "parallelism": "autotune",
       "pipeline": {"stages": [{"op": "tfrecord", "files": "$element"}]}},
      {"op": "map", "fn": "parse_example", "args": {"features": [
          {"key": "image", "type": "bytes"}, {"key": "label", "type": "int64"}]},
       "parallelism": 2},
      {"op": "batch", "batch_size": 4},
      {"op": "prefetch", "buffer_size": "autotune"}],
    "experiment": {"step": "sleep:0", "epochs": 2}})";
}

TEST(StorageRun, InterleavedTFRecordFilesRunAndCountTheirReads) {
  const TempDir tmp;
  write_dataset(tmp);
  const auto spec = tmp.write("spec.json", spec_text(tmp, "train-*.tfrecord"));
  const auto json = tmp / "result.json";
  CliResult r = run("run " + spec.string() + " --repetitions 1 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  bool found = false;
  for (const auto& s : j["stages"]) {
    if (s["name"].get<std::string>().rfind("tfrecord", 0) != 0) continue;
    found = true;
    // The statistics of one epoch: 32 records from 4 files.
    EXPECT_EQ(s["elements"], 32);
    EXPECT_EQ(s["files_opened"], 4);
    EXPECT_GT(s["bytes_read"].get<int64_t>(), 32 * 1000);
    EXPECT_GT(s["read_calls"].get<int64_t>(), 0);
    EXPECT_GT(s["read_mb_per_s"].get<double>(), 0);
  }
  EXPECT_TRUE(found) << j["stages"].dump();
}

TEST(StorageRun, BadDataIsBadInputNamingFileAndOffset) {
  const TempDir tmp;
  write_dataset(tmp);
  const std::string victim = (tmp / "train-2.tfrecord").string();
  std::string bytes;
  {
    std::ifstream in(victim, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t record = bytes.size() / 8;
  std::string flipped = bytes;
  flipped[3 * record + 100] ^= 1;  // inside the fourth record's data
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << flipped;
  const auto spec = tmp.write("spec.json", spec_text(tmp, "train-*.tfrecord"));
  CliResult r = run("run " + spec.string() + " --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(victim + ": TFRecord record at byte " + std::to_string(3 * record) +
                       ": corrupt data"),
            std::string::npos)
      << r.out;

  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes.substr(0, 5 * record + 7);
  r = run("run " + spec.string() + " --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(victim + ": TFRecord record at byte " + std::to_string(5 * record) +
                       ": truncated"),
            std::string::npos)
      << r.out;

  const auto none = tmp.write("none.json", spec_text(tmp, "*.nothing"));
  r = run("run " + none.string() + " --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no file matches the pattern"), std::string::npos) << r.out;
}

TEST(StorageRun, OpsListsTheFileSources) {
  CliResult r = run("ops");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* op : {"list_files", "tfrecord", "fixed_length_records"})
    EXPECT_NE(r.out.find(std::string(op) + " ("), std::string::npos) << op << "\n" << r.out;
}

}  // namespace
