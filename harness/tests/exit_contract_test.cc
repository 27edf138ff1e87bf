// One exit-code contract: the same corrupt data file read by every command that reads data
// (`inspect`, `run`, `run` with the reads in producer processes, `workload`, and `workload` on two
// Open MPI ranks) exits 2, bad input, and names the same file and the same fault. The MPI row
// skips where mpirun is not installed or this build has no MPI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/example.h"
#include "formats/jpeg.h"
#include "formats/tfrecord.h"
#include "pipeprof/harness/cluster.h"
#include "pipeprof_testing/mpirun.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/scaleout_suite.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

std::string bin() {
  return PIPEPROF_BINARY;
}

struct Corruption {
  std::string name;
  std::string format;  // datagen's and the workload's dataset.format
  std::string loader;  // reader.data_loader
  // Damages the file in place.
  void (*damage)(const fs::path&);
  // What every command's message says about it (after the file's name).
  std::string fault;
};

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Bytes 300-399 flipped: inside the first member's data (a stored zip member's CRC no longer holds).
void flip_payload(const fs::path& p) {
  std::vector<char> b = read_bytes(p);
  for (size_t i = 300; i < 400 && i < b.size(); ++i) b[i] = static_cast<char>(~b[i]);
  write_bytes(p, b);
}

// Cut to half its length.
void truncate_half(const fs::path& p) {
  std::vector<char> b = read_bytes(p);
  b.resize(b.size() / 2);
  write_bytes(p, b);
}

// The first bytes replaced: not the format's signature any more.
void overwrite_head(const fs::path& p) {
  std::vector<char> b = read_bytes(p);
  for (size_t i = 0; i < 64 && i < b.size(); ++i) b[i] = 'A';
  write_bytes(p, b);
}

std::vector<Corruption> corruptions() {
  return {
      {"npz_crc", "npz", "pytorch", flip_payload, "CRC error"},
      {"npz_not_zip", "npz", "pytorch", overwrite_head, "not a readable zip archive"},
      {"npy_truncated", "npy", "pytorch", truncate_half, "npy"},
      {"tfrecord_truncated", "tfrecord", "tensorflow", truncate_half, "TFRecord"},
      {"hdf5_not_hdf5", "hdf5", "pytorch", overwrite_head, "hdf5"},
  };
}

class ExitContract : public ::testing::TestWithParam<Corruption> {};

// The message of a failed command: its last line on stderr (the tests merge the streams).
std::string last_line(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

TEST_P(ExitContract, EveryCommandSaysBadInputNamingTheFileAndTheFault) {
  const Corruption& c = GetParam();
  const TempDir tmp;
  const fs::path data = tmp / "data";
  const CliResult gen = pipeprof::testing::run_command(
      bin() + " datagen --data-folder " + data.string() + " --format " + c.format +
      " --num-files-train 4 --record-length 4096 -q");
  ASSERT_EQ(gen.code, 0) << gen.out;
  const std::string file = "img_0_of_4." + c.format;
  c.damage(data / "train" / file);
  const fs::path w = tmp.write(
      "w.yaml", "model:\n  name: contract\nframework: " +
                    std::string(c.loader == "tensorflow" ? "tensorflow" : "pytorch") +
                    "\nworkflow:\n  train: True\ndataset:\n  data_folder: " + data.string() +
                    "\n  format: " + c.format +
                    "\n  num_files_train: 4\n  num_samples_per_file: 1\n  record_length: 4096\n"
                    "reader:\n  data_loader: " + c.loader +
                    "\n  batch_size: 1\n  read_threads: 1\ntrain:\n  epochs: 1\n  "
                    "computation_time: 0.001\n");
  const fs::path spec = tmp / "spec.json";

  struct Row {
    std::string command;
    CliResult result;
  };
  std::vector<Row> rows;
  rows.push_back({"workload", pipeprof::testing::run_command(
                                  bin() + " workload " + w.string() + " -q --no-autotune --out " +
                                  (tmp / "out").string() + " --spec-out " + spec.string())});
  ASSERT_TRUE(fs::exists(spec)) << rows.back().result.out;
  rows.push_back({"run", pipeprof::testing::run_command(bin() + " run " + spec.string() +
                                                        " --repetitions 1 --epochs 1")});
  rows.push_back({"inspect", pipeprof::testing::run_command(bin() + " inspect " + spec.string())});
  // The same loader inside producer processes.
  nlohmann::json loader;
  {
    std::ifstream in(spec);
    loader = nlohmann::json::parse(in);
  }
  for (const std::string op : {"multiprocess", "shared_store"}) {
    const nlohmann::json mp{
        {"stages", {{{"op", op}, {"producers", 2}, {"pipeline", {{"stages", loader["stages"]}}}}}}};
    const fs::path p = tmp.write(op + ".json", mp.dump());
    rows.push_back({"run (" + op + ")", pipeprof::testing::run_command(
                                            bin() + " run " + p.string() + " --repetitions 1 --epochs 1")});
  }
  if (!pipeprof::harness::workload::find_mpirun().empty() && pipeprof::harness::cluster::mpi_built()) {
    rows.push_back({"mpirun workload",
                    pipeprof::testing::run_command(
                        pipeprof::testing_support::mpirun(2) + bin() +
                        " workload " + w.string() + " -q --no-autotune --out " +
                        (tmp / "out_mpi").string())});
  }
  for (const Row& row : rows) {
    SCOPED_TRACE(c.name + ", " + row.command);
    EXPECT_EQ(row.result.code, 2) << row.result.out;
    EXPECT_NE(row.result.out.find("bad input data: "), std::string::npos) << row.result.out;
    EXPECT_NE(row.result.out.find(file), std::string::npos) << row.result.out;
    EXPECT_NE(row.result.out.find(c.fault), std::string::npos) << row.result.out;
    // Under mpirun the line names the rank once: "pipeprof workload (rank 0 @ host): ...".
    const std::string& out = row.result.out;
    const std::string prefix = "pipeprof workload (";
    for (size_t at = out.find(prefix); at != std::string::npos; at = out.find(prefix, at + 1)) {
      const size_t close = out.find("): ", at);
      ASSERT_NE(close, std::string::npos) << out;
      const std::string who = out.substr(at + prefix.size(), close - at - prefix.size());
      EXPECT_NE(out.substr(close + 3, who.size()), who) << "the rank is named twice:\n" << out;
    }
  }
  // One message: what `run` says about the file, every other command says too.
  const std::string run_line = last_line(rows[1].result.out);
  const size_t at = run_line.find(file);
  ASSERT_NE(at, std::string::npos) << run_line;
  const std::string about_file = run_line.substr(at);
  for (const Row& row : rows) {
    EXPECT_NE(row.result.out.find(about_file), std::string::npos)
        << c.name << ", " << row.command << ": expected \"" << about_file << "\" in\n"
        << row.result.out;
  }
}

// A record whose CRCs hold but whose JPEG does not decode (the file was written so): the decode
// runs two functions after the read, in threads or in producer processes, and still every command
// names the file and the record's byte offset, as bad input.
TEST(ExitContract, AJpegThatDoesNotDecodeNamesItsFileAndRecord) {
  namespace formats = pipeprof::pipelines::formats;
  const TempDir tmp;
  const std::string file = (tmp / "images.tfrecord").string();
  pipeprof::pipelines::Tensor pixels(pipeprof::pipelines::DType::kUInt8, {16, 16, 3});
  const std::vector<std::byte> jpeg = formats::encode_jpeg(pixels, 90);
  uint64_t bad_offset = 0, offset = 0;
  {
    formats::TFRecordWriter w(file);
    for (int i = 0; i < 3; ++i) {
      const size_t keep = i == 2 ? jpeg.size() / 2 : jpeg.size();  // the third is cut short
      formats::FeatureValue image{
          .kind = formats::FeatureKind::kBytes,
          .bytes = {std::string(reinterpret_cast<const char*>(jpeg.data()), keep)}};
      const std::string record = formats::encode_example({{"image", image}});
      if (i == 2) bad_offset = offset;
      offset += formats::tfrecord_frame(record).size();
      w.write(record);
    }
    w.close();
  }
  const nlohmann::json stages = nlohmann::json::parse(R"([
      {"op": "tfrecord", "files": [")" + file + R"("]},
      {"op": "map", "fn": "chain", "parallelism": 2, "args": {"fns": [
        {"fn": "parse_example", "args": {"features": [{"key": "image", "type": "bytes"}]}},
        {"fn": "decode_jpeg"}, {"fn": "resize", "args": {"height": 8, "width": 8}}]}}])");
  const fs::path spec = tmp.write("spec.json", nlohmann::json{{"stages", stages}}.dump());
  std::vector<std::pair<std::string, CliResult>> rows;
  rows.emplace_back("run", pipeprof::testing::run_command(bin() + " run " + spec.string() +
                                                          " --repetitions 1 --epochs 1"));
  rows.emplace_back("inspect", pipeprof::testing::run_command(bin() + " inspect " + spec.string()));
  for (const std::string op : {"multiprocess", "shared_store"}) {
    const nlohmann::json mp{
        {"stages", {{{"op", op}, {"producers", 1}, {"pipeline", {{"stages", stages}}}}}}};
    const fs::path p = tmp.write(op + ".json", mp.dump());
    rows.emplace_back("run (" + op + ")",
                      pipeprof::testing::run_command(bin() + " run " + p.string() +
                                                     " --repetitions 1 --epochs 1"));
  }
  const std::string where = file + ", record at byte " + std::to_string(bad_offset);
  for (const auto& [command, result] : rows) {
    SCOPED_TRACE(command);
    EXPECT_EQ(result.code, 2) << result.out;
    EXPECT_NE(result.out.find("bad input data: "), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("decode_jpeg: " + where), std::string::npos) << result.out;
  }
}

INSTANTIATE_TEST_SUITE_P(CorruptFiles, ExitContract, ::testing::ValuesIn(corruptions()),
                         [](const ::testing::TestParamInfo<Corruption>& p) { return p.param.name; });

}  // namespace
