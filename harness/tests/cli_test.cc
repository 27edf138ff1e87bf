// Runs the real `pipeprof` binary: exit codes, messages and output as a user sees them.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct CliResult {
  int code;
  std::string out;  // stdout and stderr together
};

CliResult run(const std::string& args) {
  const std::string cmd = std::string(PIPEPROF_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string spec(const std::string& name) { return std::string(PIPEPROF_SPEC_DIR) + "/" + name; }

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("pipeprof_cli_test_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, HelpListsCommandsAndExitsZero) {
  CliResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
}

TEST(Cli, NoCommandIsBadUsage) {
  CliResult r = run("");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(Cli, VersionPrintsVersion) {
  CliResult r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("pipeprof 0."), std::string::npos) << r.out;
}

TEST(Inspect, InterleaveCycleAndBlockLengthsMatchTfData) {
  CliResult r = run("inspect " + spec("interleave_cycle2_block4.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "1\n1\n1\n1\n2\n2\n2\n2\n1\n1\n2\n2\n3\n3\n3\n3\n4\n4\n4\n4\n3\n3\n4\n4\n5\n5\n5\n5\n5\n5\n");
}

TEST(Inspect, EpochsAndLimit) {
  CliResult r = run("inspect " + spec("batch.json") + " --epochs 2 --limit 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "[0,1,2]\n[3,4,5]\n[0,1,2]\n[3,4,5]\n");
}

TEST(Inspect, FullFormatHasDtypeAndShape) {
  CliResult r = run("inspect " + spec("batch.json") + " --format full --limit 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "{\"components\":[{\"dtype\":\"int64\",\"shape\":[3],\"value\":[0,1,2]}],\"epoch\":0,"
            "\"index\":0}\n");
}

TEST(Inspect, InvalidParallelismNamesFilePathAndValue) {
  auto path = write_temp("bad_parallelism.json", R"({"stages": [
      {"op": "range", "stop": 10}, {"op": "map", "fn": "identity"},
      {"op": "map", "fn": "increment", "parallelism": -3}]})");
  CliResult r = run("inspect " + path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(path.string() +
                       ": stages[2].parallelism: expected a positive integer or \"autotune\", got -3"),
            std::string::npos)
      << r.out;
}

TEST(Inspect, MissingFileIsBadInput) {
  CliResult r = run("inspect /nonexistent/spec.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent/spec.json: no such file"), std::string::npos) << r.out;
}

TEST(Inspect, TruncatedJsonNamesByteOffset) {
  auto path = write_temp("truncated.json", R"({"stages": [{"op": "range", "st)");
  CliResult r = run("inspect " + path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("invalid JSON at byte"), std::string::npos) << r.out;
}

TEST(Inspect, UnknownOptionIsBadUsage) {
  CliResult r = run("inspect " + spec("batch.json") + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
