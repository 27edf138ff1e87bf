#include "pipeprof/results/results_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeprof/results/report.h"

namespace pipeprof::results {
namespace {

TEST(ResultsFile, ReadsGoogleBenchmarkRepetitionsAndSkipsAggregates) {
  const char* text = R"({
    "context": {"date": "2026-01-01", "num_cpus": 2},
    "benchmarks": [
      {"name": "BM_A/8", "run_name": "BM_A/8", "run_type": "iteration", "repetitions": 3,
       "repetition_index": 0, "real_time": 1.5, "cpu_time": 1.4, "time_unit": "us"},
      {"name": "BM_A/8", "run_name": "BM_A/8", "run_type": "iteration", "repetitions": 3,
       "repetition_index": 1, "real_time": 1.6, "cpu_time": 1.4, "time_unit": "us"},
      {"name": "BM_B", "run_name": "BM_B", "run_type": "iteration", "real_time": 2,
       "cpu_time": 2, "time_unit": "ms"},
      {"name": "BM_A/8", "run_name": "BM_A/8", "run_type": "iteration", "repetitions": 3,
       "repetition_index": 2, "real_time": 1.7, "cpu_time": 1.4, "time_unit": "us"},
      {"name": "BM_A/8_mean", "run_name": "BM_A/8", "run_type": "aggregate",
       "aggregate_name": "mean", "real_time": 1.6, "cpu_time": 1.4, "time_unit": "us"}
    ]})";
  const ResultsFile f = parse_results(text, "bench.json");
  EXPECT_EQ(f.format, Format::kGoogleBenchmark);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].name, "BM_A/8");
  EXPECT_EQ(f.entries[0].time_ns, (std::vector<double>{1500, 1600, 1700}));
  EXPECT_TRUE(f.entries[0].efficiency.empty());
  EXPECT_EQ(f.entries[1].name, "BM_B");
  EXPECT_EQ(f.entries[1].time_ns, (std::vector<double>{2e6}));
}

TEST(ResultsFile, GoogleBenchmarkNonFiniteNumbersAreTolerated) {
  // As Google Benchmark writes the cv of a counter that is always zero.
  const char* text = R"({"benchmarks": [
      {"name": "BM_E", "run_name": "BM_E", "run_type": "iteration", "real_time": 5,
       "time_unit": "ns", "label": "NaN inside a string stays", "dropped": 0},
      {"name": "BM_E_cv", "run_name": "BM_E", "run_type": "aggregate", "aggregate_name": "cv",
       "real_time": 0.1, "time_unit": "ns", "dropped": NaN, "max": Infinity, "min": -Infinity}]})";
  const ResultsFile f = parse_results(text);
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_EQ(f.entries[0].time_ns, (std::vector<double>{5}));
  EXPECT_EQ(f.doc["benchmarks"][0]["label"], "NaN inside a string stays");
  EXPECT_TRUE(f.doc["benchmarks"][1]["dropped"].is_null());
}

TEST(ResultsFile, AggregatesOnlyGiveOneSample) {
  const char* text = R"({"benchmarks": [
      {"name": "BM_C_mean", "run_name": "BM_C", "run_type": "aggregate", "aggregate_name": "mean",
       "real_time": 10, "time_unit": "ns"},
      {"name": "BM_C_median", "run_name": "BM_C", "run_type": "aggregate",
       "aggregate_name": "median", "real_time": 9, "time_unit": "ns"},
      {"name": "BM_C_stddev", "run_name": "BM_C", "run_type": "aggregate",
       "aggregate_name": "stddev", "real_time": 1, "time_unit": "ns"},
      {"name": "BM_D_mean", "run_name": "BM_D", "run_type": "aggregate", "aggregate_name": "mean",
       "real_time": 4, "time_unit": "ns"}]})";
  const ResultsFile f = parse_results(text);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].name, "BM_C");
  EXPECT_EQ(f.entries[0].time_ns, (std::vector<double>{9}));
  EXPECT_EQ(f.entries[1].time_ns, (std::vector<double>{4}));
}

TEST(ResultsFile, ComputesEfficiencyPerRepetitionWhenNotStored) {
  const char* text = R"({"schema_version": 1, "experiments": [
      {"id": "naive", "ideal_ms": 200, "repetitions": [{"wall_ms": 250}, {"wall_ms": 400}]},
      {"id": "vectorized", "ideal_ms": 0, "repetitions": [{"wall_ms": 25}]}]})";
  const ResultsFile f = parse_results(text);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].efficiency, (std::vector<double>{0.8, 0.5}));
  EXPECT_EQ(f.entries[0].time_ns, (std::vector<double>{250e6, 400e6}));
  EXPECT_TRUE(f.entries[1].efficiency.empty());
}

TEST(ResultsFile, PrefersTheStoredEfficiency) {
  const char* text = R"({"schema_version": 2, "experiments": [
      {"id": "a", "ideal_ms": 200, "repetitions": [{"wall_ms": 250, "efficiency": 0.7}]}]})";
  EXPECT_EQ(parse_results(text).entries[0].efficiency, (std::vector<double>{0.7}));
}

std::string error_of(const std::string& text) {
  try {
    parse_results(text, "in.json");
  } catch (const ResultsError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ResultsFile, ErrorsNameTheFileThePathAndWhatWasExpected) {
  EXPECT_EQ(error_of("{\"schema_version\": 5, \"experiments\": []}"),
            "in.json: schema_version: unsupported value 5 (this pipeprof reads 1 to 4)");
  EXPECT_EQ(error_of(R"({"schema_version": 2, "experiments": [{"id": "a", "repetitions": [{}]}]})"),
            "in.json: experiments[0].repetitions[0]: missing required key \"wall_ms\"");
  EXPECT_EQ(error_of(R"({"schema_version": 2, "experiments": [{"id": 5, "repetitions": []}]})"),
            "in.json: experiments[0].id: expected a string");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": "x", "real_time": "fast"}]})"),
            "in.json: benchmarks[0].real_time: expected a number, got \"fast\"");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": "x", "real_time": 1, "time_unit": "h"}]})"),
            "in.json: benchmarks[0].time_unit: unknown time_unit \"h\" (expected ns, us, ms or s)");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"name": "x", "real_time": 1, "run_type": 3}]})")
                .rfind("in.json: [json.exception.type_error", 0),
            0u);
  EXPECT_NE(error_of("{\"other\": 1}").find("neither a pipeprof results file"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"schema_version\": ").find("in.json: not valid JSON"), std::string::npos);
  // Nested deeper than any results file (a spec of 100 000 arrays): refused before the report's
  // recursive code sees it, naming the byte.
  const std::string deep = R"({"schema_version": 4, "experiments": [{"spec": )" +
                           std::string(100000, '[') + std::string(100000, ']') + "}]}";
  EXPECT_NE(error_of(deep).find("in.json: not valid JSON (byte 301): "), std::string::npos)
      << error_of(deep);
  EXPECT_NE(error_of(deep).find("nested deeper than 256 levels"), std::string::npos);
}

TEST(ResultsFile, MissingFileIsAnError) {
  try {
    load_results("/nonexistent/results.json");
    FAIL() << "no error";
  } catch (const ResultsError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/results.json: cannot be read (missing or unreadable)");
  }
}

// Results and reports are replaced whole: no half-written file under the final name, nothing left
// beside it, an unwritable place named; a device is written in place.
TEST(WriteTextFile, ReplacesAFileWholeAndNamesAPlaceItCannotWrite) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pipeprof_write_text_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "results.json";
  write_text_file(file, "first\n");
  write_text_file(file, "second, longer\n");
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  EXPECT_EQ(text.str(), "second, longer\n");
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "results.json") << "left beside it";
  // Through a link: the target is replaced, the link stays.
  std::filesystem::create_symlink(file, dir / "link.json");
  write_text_file(dir / "link.json", "third\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.json"));
  std::stringstream third;
  third << std::ifstream(file).rdbuf();
  EXPECT_EQ(third.str(), "third\n");
  try {
    write_text_file(dir / "missing" / "results.json", "x");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/results.json: cannot be written: No such file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(write_text_file("/dev/null", "into a device"));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipeprof::results
