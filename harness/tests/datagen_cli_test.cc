// `pipeprof datagen` end to end: flags and a DLIO workload file's dataset section, the layout on
// disk, a second run that keeps everything, the refusal of a folder holding other files, bad flags
// and bad workload values as exit 2 naming the flag or the file and key, and Ctrl-C (exit 130, no
// partial file).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;

CliResult datagen(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " datagen " + args);
}

std::vector<std::string> tree(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    out.push_back(e.path().lexically_relative(root).string() + (e.is_directory() ? "/" : ""));
  std::sort(out.begin(), out.end());
  return out;
}

void expect_in(const CliResult& r, const std::string& text) {
  EXPECT_NE(r.out.find(text), std::string::npos) << "lacks: " << text << "\n" << r.out;
}

TEST(DatagenCli, FlagsWriteDliosLayoutAndASecondRunKeepsIt) {
  const TempDir tmp;
  const std::string data = (tmp / "data").string();
  const std::string args = "--data-folder " + data +
                           " --format npz --num-files-train 4 --num-files-eval 1 "
                           "--num-samples-per-file 2 --record-length 1024 "
                           "--num-subfolders-train 2 --threads 2";
  CliResult r = datagen(args);
  ASSERT_EQ(r.code, 0) << r.out;
  expect_in(r, "5 npz files: wrote 5");
  EXPECT_EQ(tree(data), (std::vector<std::string>{
                            "train/", "train/0/", "train/0/img_0_of_4.npz",
                            "train/0/img_2_of_4.npz", "train/1/", "train/1/img_1_of_4.npz",
                            "train/1/img_3_of_4.npz", "valid/", "valid/img_0_of_1.npz"}));
  const auto mtime = fs::last_write_time(data + "/train/1/img_3_of_4.npz");
  r = datagen(args);
  ASSERT_EQ(r.code, 0) << r.out;
  expect_in(r, "wrote 0 (0.0 MB)");
  expect_in(r, "kept 5 complete");
  EXPECT_EQ(fs::last_write_time(data + "/train/1/img_3_of_4.npz"), mtime);
  r = datagen(args + " --quiet");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "");
}

TEST(DatagenCli, RefusesAFolderWithOtherFilesUnlessTold) {
  const TempDir tmp;
  fs::create_directories(tmp / "data" / "train");
  tmp.write("data/train/notes.txt", "mine");
  const std::string args = "--data-folder " + (tmp / "data").string() +
                           " --format raw --num-files-train 2 "
                           "--record-length 100";
  CliResult r = datagen(args);
  EXPECT_EQ(r.code, 2) << r.out;
  expect_in(r, "holds files that are not this dataset's (train/notes.txt)");
  expect_in(r, "--allow-other-files");
  EXPECT_FALSE(fs::exists(tmp / "data" / "train" / "img_0_of_2.raw"));
  r = datagen(args + " --allow-other-files");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(fs::file_size(tmp / "data" / "train" / "img_1_of_2.raw"), 100U);
  EXPECT_TRUE(fs::exists(tmp / "data" / "train" / "notes.txt"));
}

TEST(DatagenCli, WorkloadFileDatasetSectionWithFlagsOverriding) {
  const TempDir tmp;
  // DLIO's current key names, a float record length and keys datagen does not use.
  const auto workload = tmp.write("unet3d.yaml", R"(model: unet3d
framework: pytorch
workflow:
  generate_data: True
  train: False
dataset:
  data_folder: )" + (tmp / "unet").string() + R"(/
  format: npy
  num_files_train: 6
  num_samples_per_file: 1.0
  record_length_bytes: 4.0e4
  record_length_bytes_stdev: 4000
  record_length_bytes_resize: 2097152
  num_subfolders_train: 3
  file_prefix: vol
  keep_files: True
reader:
  data_loader: pytorch
)");
  CliResult r = datagen("--workload " + workload.string() + " --num-files-train 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(tree(tmp / "unet"),
            (std::vector<std::string>{"train/", "train/0/", "train/0/vol_0_of_3.npy", "train/1/",
                                      "train/1/vol_1_of_3.npy", "train/2/",
                                      "train/2/vol_2_of_3.npy", "valid/"}));
  // 40000 bytes with a stdev: sizes around 200 x 200, not all equal.
  std::vector<uintmax_t> sizes;
  for (int i = 0; i < 3; ++i) {
    sizes.push_back(fs::file_size(tmp / "unet" / "train" / std::to_string(i) /
                                  ("vol_" + std::to_string(i) + "_of_3.npy")));
    EXPECT_GT(sizes.back(), 20000U);
    EXPECT_LT(sizes.back(), 80000U);
  }
  EXPECT_FALSE(sizes[0] == sizes[1] && sizes[1] == sizes[2]);
}

TEST(DatagenCli, BadInputExitsTwoNamingTheFlagOrKey) {
  const TempDir tmp;
  const std::string folder = " --data-folder " + (tmp / "d").string();
  struct Case {
    std::string args;
    std::string message;
  };
  const auto bad_yaml =
      tmp.write("bad.yaml", "dataset:\n  num_files_train: ten\n  data_folder: x\n");
  const auto bad_value = tmp.write("neg.yaml",
                                   "dataset:\n  num_subfolders_eval: 2\n"
                                   "  record_length_bytes: -5\n  data_folder: x\n");
  const auto bad_format = tmp.write("parquet.yaml", "dataset:\n  format: parquet\n  data_folder: x\n");
  const auto no_section = tmp.write("none.yaml", "model: x\n");
  const std::vector<Case> cases{
      {folder + " --num-files-train abc", "--num-files-train"},
      {folder + " --format parquet", "--format: expected one of tfrecord, npz, npy, hdf5, jpeg, raw"},
      {folder + " --num-files-train -1", "--num-files-train: expected an integer >= 0, got -1"},
      // Once "out of memory" with exit 1: a billion file names planned.
      {folder + " --num-files-train 1000000000",
       "--num-files-train: expected at most 10000000 files, got 1000000000"},
      {folder + " --num-samples-per-file 0", "--num-samples-per-file: expected an integer >= 1"},
      {folder + " --format raw --record-length-stdev 5", "--record-length-stdev: raw records"},
      {folder + " --record-length 0", "--record-length: expected a number of bytes"},
      {folder + " --file-prefix a/b", "--file-prefix: expected a file name prefix without '/'"},
      {folder + " --threads 0", "--threads"},
      {"--num-files-train 2", "no data folder"},
      {"--workload " + (tmp / "missing.yaml").string(), "missing.yaml"},
      {"--workload " + bad_yaml.string(),
       bad_yaml.string() + ": dataset.num_files_train: expected a whole number >= 0, got \"ten\""},
      {"--workload " + bad_value.string(),
       bad_value.string() + ": dataset.record_length_bytes: expected a number of bytes"},
      {"--workload " + bad_format.string(), "dataset.format: expected a format pipeprof datagen"},
      {"--workload " + no_section.string(), "no `dataset` section"},
      {folder + " --no-such-flag", "--no-such-flag"},
  };
  for (const Case& c : cases) {
    const CliResult r = datagen(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    expect_in(r, c.message);
  }
  EXPECT_FALSE(fs::exists(tmp / "d" / "train" / "img_0_of_8.tfrecord"));
}

TEST(DatagenCli, HelpDescribesLayoutAndFormats) {
  const CliResult r = datagen("--help");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* text : {"<prefix>_<i>_of_<N>.<format>", "--workload", "--allow-other-files",
                           "tfrecord", "npz", "hdf5", "jpeg", "raw", "Ctrl-C"})
    expect_in(r, text);
}

TEST(DatagenCli, CtrlCExits130WithNoPartialFile) {
  const TempDir tmp;
  const std::string data = (tmp / "data").string();
  // About 1 GiB in 64 MiB files on one thread: still running when the signal comes.
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + std::string(PIPEPROF_BINARY) + " datagen --data-folder " + data +
      " --format raw --num-files-train 16 --num-samples-per-file 8 --record-length 8388608 "
      "--threads 1 & pid=$!; sleep 0.5; kill -INT $pid; wait $pid; echo exit=$?'");
  expect_in(r, "exit=130");
  expect_in(r, "interrupted:");
  int complete = 0;
  for (const auto& e : fs::recursive_directory_iterator(data)) {
    if (!e.is_regular_file()) continue;
    EXPECT_FALSE(e.path().filename().string().ends_with(".tmp")) << e.path();
    EXPECT_EQ(e.file_size(), 8U * 8388608) << e.path();
    ++complete;
  }
  EXPECT_LT(complete, 16);
}

}  // namespace
