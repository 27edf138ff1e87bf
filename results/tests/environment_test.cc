#include "pipeprof/results/environment.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::results {
namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(Environment, ReadsAFakeSystemTree) {
  const testing_support::TempDir tmp;
  const auto& root = tmp.path();
  write(root / "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Example CPU @ 3.00GHz\n");
  write(root / "proc/meminfo", "MemTotal:       16318404 kB\nMemFree:         1000 kB\n");
  write(root / "proc/driver/nvidia/gpus/0000:01:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   1\n");
  write(root / "etc/os-release",
        "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13\"\n");
  const Environment env = capture_environment("9.9.9", root.string());
  EXPECT_EQ(env.cpu_model, "Example CPU @ 3.00GHz");
  EXPECT_EQ(env.memory_bytes, int64_t{16318404} * 1024);
  ASSERT_EQ(env.gpus.size(), 1u);
  EXPECT_EQ(env.gpus[0], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(env.os, "Debian GNU/Linux 13");
  EXPECT_EQ(env.pipeprof_version, "9.9.9");
  EXPECT_FALSE(env.compiler.empty());
  EXPECT_FALSE(env.build_type.empty());
  EXPECT_FALSE(env.git_commit.empty());
}

TEST(Environment, AMissingTreeGivesUnknownsNotErrors) {
  const Environment env = capture_environment("1", "/nonexistent/root");
  EXPECT_EQ(env.cpu_model, "unknown");
  EXPECT_EQ(env.memory_bytes, 0);
  EXPECT_TRUE(env.gpus.empty());
  EXPECT_EQ(env.os, "unknown");
}

TEST(Environment, ThisMachine) {
  const Environment env = capture_environment("1");
  EXPECT_GT(env.cores, 0);
  EXPECT_GT(env.memory_bytes, 0);
  EXPECT_NE(env.kernel, "unknown");
}

TEST(Environment, JsonRoundTrip) {
  Environment env = capture_environment("2.0");
  env.gpus = {"GPU A", "GPU B"};
  const Environment back = environment_from_json(to_json(env));
  EXPECT_EQ(to_json(back), to_json(env));
}

}  // namespace
}  // namespace pipeprof::results
