// The `pipeprof report` and `pipeprof compare` commands on crafted inputs: exit codes, messages,
// and that the suite's results.json has every key the schema requires.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/results/records.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"
#include "schema_check.h"

namespace {

namespace fs = std::filesystem;

using pipeprof::testing::CliResult;
namespace results = pipeprof::results;

CliResult run(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

class CompareCli : public ::testing::Test {
 protected:
  // A pipeprof results file with one experiment per (id, wall times) and ideal 100 ms.
  std::string results(const std::string& name,
                      const std::vector<std::pair<std::string, std::vector<double>>>& experiments) {
    nlohmann::json xs = nlohmann::json::array();
    for (const auto& [id, walls] : experiments) {
      nlohmann::json reps = nlohmann::json::array();
      for (double w : walls)
        reps.push_back({{"wall_ms", w}});
      xs.push_back({{"id", id}, {"ideal_ms", 100.0}, {"repetitions", reps}});
    }
    return write(name, nlohmann::json{{"schema_version", 2}, {"experiments", xs}}.dump());
  }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  // One folder per test: CTest runs the tests of this file in parallel processes.
  pipeprof::testing_support::TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

TEST_F(CompareCli, UnchangedRunExitsZero) {
  const auto base = results("base.json", {{"naive", {110, 111, 112, 113, 114}}});
  const auto now = results("new.json", {{"naive", {111, 112, 110, 114, 113}}});
  const CliResult r = run("compare " + base + " " + now);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("unchanged"), std::string::npos) << r.out;
}

TEST_F(CompareCli, SignificantRegressionExitsOne) {
  const auto base = results("base.json", {{"naive", {110, 111, 112, 113, 114}}, {"b", {100, 101}}});
  const auto now = results("new.json", {{"naive", {140, 141, 142, 143, 144}}, {"b", {100, 101}}});
  CliResult r = run("compare " + base + " " + now + " --metric efficiency --threshold 10%");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("REGRESSION"), std::string::npos) << r.out;
  // The improvement the other way round passes.
  EXPECT_EQ(run("compare " + now + " " + base).code, 0);
  // A threshold above the change passes.
  EXPECT_EQ(run("compare " + base + " " + now + " --threshold 40%").code, 0);
  // On time as well, and as JSON.
  r = run("compare " + base + " " + now + " --metric time --json");
  EXPECT_EQ(r.code, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["regression"].get<bool>());
  EXPECT_EQ(j["metric"], "time");
}

TEST_F(CompareCli, WorkloadsAreJudgedOnAuAndSamplesPerSecond) {
  // A workload's entry as `pipeprof workload` and the suite write it: a repetition per epoch with
  // its AU and samples/s.
  auto workload = [&](const std::string& name, double au) {
    nlohmann::json reps = nlohmann::json::array();
    for (int i = 0; i < 5; ++i) {
      reps.push_back({{"wall_ms", 1000.0 + i},
                      {"au_percentage", au + 0.1 * i},
                      {"samples_per_second", 400.0 + i}});
    }
    results::WorkloadRecord w{.file = "unet3d.yaml", .name = "unet3d", .format = "npz",
                              .loader = "pytorch", .batch_size = 7, .computation_time = 0.323,
                              .accelerators = 1, .steps_per_epoch = 5};
    w.dlio = results::DlioFigures{.au_mean_percentage = au, .throughput_mean = 400,
                                  .io_mean_mb_per_s = 50, .meets_au = au >= 90};
    const nlohmann::json x{{"id", "workload:unet3d"},
                           {"kind", "workload"},
                           {"ideal_ms", 990.0},
                           {"repetitions", reps},
                           {"workload", results::to_json(w)}};
    return write(name, nlohmann::json{{"schema_version", results::kSchemaVersion},
                                      {"experiments", nlohmann::json::array({x})}}.dump());
  };
  const auto base = workload("wl_base.json", 98.0), same = workload("wl_same.json", 98.0),
             drop = workload("wl_drop.json", 88.2);  // AU 10% lower, samples/s unchanged
  CliResult r = run("compare " + base + " " + same);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("workload:unet3d [au]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workload:unet3d [throughput]"), std::string::npos) << r.out;
  r = run("compare " + base + " " + drop);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("REGRESSION"), std::string::npos) << r.out;
  EXPECT_EQ(run("compare " + base + " " + drop + " --metric throughput").code, 0);
  EXPECT_EQ(run("compare " + base + " " + drop + " --metric au").code, 1);
}

TEST_F(CompareCli, GoogleBenchmarkRepetitions) {
  auto bench = [&](const std::string& name, double t) {
    nlohmann::json bs = nlohmann::json::array();
    for (int i = 0; i < 6; ++i) {
      bs.push_back({{"name", "BM_Map"},
                    {"run_name", "BM_Map"},
                    {"run_type", "iteration"},
                    {"real_time", t + i},
                    {"cpu_time", t},
                    {"time_unit", "us"}});
    }
    bs.push_back({{"name", "BM_Map_mean"},
                  {"run_name", "BM_Map"},
                  {"run_type", "aggregate"},
                  {"real_time", t},
                  {"time_unit", "us"}});
    return write(name, nlohmann::json{{"context", {{"num_cpus", 2}}}, {"benchmarks", bs}}.dump());
  };
  const auto base = bench("gb_base.json", 100), same = bench("gb_same.json", 100.5),
             slow = bench("gb_slow.json", 150);
  EXPECT_EQ(run("compare " + base + " " + same).code, 0);
  const CliResult r = run("compare " + base + " " + slow);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("BM_Map"), std::string::npos) << r.out;
  const CliResult eff = run("compare " + base + " " + slow + " --metric efficiency");
  EXPECT_EQ(eff.code, 2) << eff.out;
  EXPECT_NE(eff.out.find("has no efficiency; use --metric time"), std::string::npos) << eff.out;
}

TEST_F(CompareCli, BadInputExitsTwoNamingTheFile) {
  const auto good = results("good.json", {{"naive", {110}}});
  CliResult r = run("compare " + good + " " + (dir_ / "missing.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.json: cannot be read"), std::string::npos) << r.out;

  const auto broken = write("broken.json", "{\"schema_version\": 2, \"experiments\": [");
  r = run("compare " + good + " " + broken);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("broken.json: not valid JSON"), std::string::npos) << r.out;

  const auto future = write("future.json", R"({"schema_version": 99, "experiments": []})");
  r = run("compare " + future + " " + good);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("future.json: schema_version: unsupported value 99"), std::string::npos)
      << r.out;

  const auto other = results("other.json", {{"prefetch", {110}}});
  r = run("compare " + good + " " + other);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no experiment or benchmark name in common"), std::string::npos) << r.out;

  EXPECT_EQ(run("compare " + good + " " + good + " --threshold lots").code, 2);
  EXPECT_EQ(run("compare " + good + " " + good + " --metric speed").code, 2);
  EXPECT_EQ(run("compare " + good).code, 2);
}

TEST_F(CompareCli, ReportWritesMarkdownAndCharts) {
  const fs::path out = dir_ / "report";
  CliResult r = run(std::string("report ") + PIPEPROF_RESULTS_TEST_DATA +
                    "/golden/results.json --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "report.md"));
  EXPECT_TRUE(fs::exists(out / "summary.svg"));
  EXPECT_TRUE(fs::exists(out / "gantt-naive.svg"));

  r = run("report " + (dir_ / "nothing.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("nothing.json: cannot be read"), std::string::npos) << r.out;
}

TEST_F(CompareCli, ReportExitsTwoOnBadInputAndOneWhenItCannotWrite) {
  const auto broken = write("broken.json", "{\"schema_version\": 2, \"experiments\": [");
  CliResult r = run("report " + broken);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("broken.json: not valid JSON"), std::string::npos) << r.out;

  const auto gbench = write("gbench.json", R"({"context": {}, "benchmarks": []})");
  r = run("report " + gbench);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("gbench.json: Google Benchmark JSON"), std::string::npos) << r.out;

  const auto good = results("good.json", {{"naive", {110}}});
  write("file", "");  // --out names a file: no folder can be made there
  r = run("report " + good + " --out " + (dir_ / "file").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot be written"), std::string::npos) << r.out;
}

TEST_F(CompareCli, SuiteResultsHaveEveryKeyTheSchemaRequires) {
  const fs::path out = dir_ / "suite";
  const CliResult r = run("suite --quick --only naive,map_vectorized --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(out / "results.json");
  const auto doc = nlohmann::json::parse(in);
  const auto schema = pipeprof::results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
  std::string problems;
  for (const auto& p : pipeprof::results::testing::schema_problems(schema, doc))
    problems += p + "\n";
  EXPECT_EQ(problems, "");
  EXPECT_TRUE(fs::exists(out / "report.md"));
  EXPECT_TRUE(fs::exists(out / "gantt-naive.svg"));  // traced by default
  EXPECT_LT(fs::file_size(out / "gantt-naive.svg"), 300'000u);
  // The suite's own results compare clean against themselves.
  const CliResult self =
      run("compare " + (out / "results.json").string() + " " + (out / "results.json").string());
  EXPECT_EQ(self.code, 0) << self.out;
}

}  // namespace
