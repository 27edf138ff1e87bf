// The report of a fixed results file (tests/data/golden/results.json and its trace) compared byte
// for byte with the committed output in tests/data/golden/expected/. After an intended change of
// the report, regenerate it with
//   PIPEPROF_UPDATE_GOLDEN=1 ctest --test-dir build -R ReportGolden
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {
namespace {

const std::filesystem::path kGolden = PIPEPROF_RESULTS_TEST_DATA "/golden";

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  std::erase(s, '\r');  // line endings only
  return s;
}

TEST(ReportGolden, MatchesTheCommittedReport) {
  const ResultsFile file = load_results(kGolden / "results.json");
  const Report report = render_report(file.doc, kGolden, "results.json");
  const std::filesystem::path expected = kGolden / "expected";
  if (const char* update = std::getenv("PIPEPROF_UPDATE_GOLDEN"); update && *update == '1') {
    std::filesystem::remove_all(expected);
    write_report(report, expected);
    GTEST_SKIP() << "golden report rewritten in " << expected;
  }
  std::set<std::string> names{"report.md"};
  EXPECT_EQ(report.markdown, read(expected / "report.md"))
      << "the report changed; if intended, regenerate with PIPEPROF_UPDATE_GOLDEN=1";
  for (const auto& f : report.files) {
    names.insert(f.name);
    EXPECT_EQ(f.content, read(expected / f.name)) << f.name << " changed";
  }
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(expected))
    on_disk.insert(entry.path().filename().string());
  EXPECT_EQ(names, on_disk);
}

TEST(ReportGolden, HasTheSectionsAndCharts) {
  const ResultsFile file = load_results(kGolden / "results.json");
  const Report report = render_report(file.doc, kGolden);
  const std::string& md = report.markdown;
  for (const char* part :
       {"## Summary", "![Measured, ideal and seed times per experiment](summary.svg)",
        "![Gantt chart of naive](gantt-naive.svg)", "## Environment",
        "| [naive](#naive) | sleep:10 | 240.00 | 210.0 | 170.0 | 0.875 | 234.75 | 0.895 | 3 |",
        "_No trace recorded._", "| GPU | none |"}) {
    EXPECT_NE(md.find(part), std::string::npos) << part << "\n" << md;
  }
  ASSERT_EQ(report.files.size(), 2u);
  EXPECT_EQ(report.files[0].name, "summary.svg");
  EXPECT_EQ(report.files[1].name, "gantt-naive.svg");
}

TEST(ReportGolden, ChartFileNamesAreSafeAndUnique) {
  ResultsFile file = load_results(kGolden / "results.json");
  auto& xs = file.doc["experiments"];
  xs[1]["id"] = "a/b";
  xs[2]["id"] = "a_b";
  xs[1]["trace"] = xs[2]["trace"] = xs[0]["trace"];
  const Report report = render_report(file.doc, kGolden);
  ASSERT_EQ(report.files.size(), 4u);
  EXPECT_EQ(report.files[2].name, "gantt-a_b.svg");
  EXPECT_EQ(report.files[3].name, "gantt-a_b-2.svg");
  EXPECT_NE(report.markdown.find("![Gantt chart of a_b](gantt-a_b-2.svg)"), std::string::npos);
}

TEST(ReportGolden, AMissingTraceIsNotedNotFatal) {
  ResultsFile file = load_results(kGolden / "results.json");
  file.doc["experiments"][0]["trace"] = "traces/missing.json";
  const Report report = render_report(file.doc, kGolden);
  EXPECT_NE(report.markdown.find("_The trace `traces/missing.json` could not be read"),
            std::string::npos);
}

TEST(ReportGolden, TheTransportLineNamesTheFirstWriteRateWhereTheIdealUsedIt) {
  ResultsFile file = load_results(kGolden / "results.json");
  const std::string sentence =
      "first element into pages no process has written before at 0.63 GB/s";
  EXPECT_EQ(render_report(file.doc, kGolden).markdown.find(sentence), std::string::npos);
  int with_rates = 0;
  for (auto& x : file.doc["experiments"]) {
    if (!x.contains("measured_rates")) continue;
    x["measured_rates"]["store_first_write_gb_per_s"] = 0.634;
    ++with_rates;
  }
  ASSERT_GT(with_rates, 0);
  EXPECT_NE(render_report(file.doc, kGolden).markdown.find(sentence), std::string::npos);
}

TEST(ReportGolden, ReadsSchemaVersion1) {
  const nlohmann::json v1 = nlohmann::json::parse(R"({
    "schema_version": 1, "pipeprof_version": "0.0.9", "repetitions": 2, "interrupted": true,
    "machine": {"cpu_model": "Old CPU", "cores": 4},
    "experiments": [{"id": "naive", "step": "sleep:10", "epochs": 2, "ideal_ms": 210,
                     "median_wall_ms": 220, "efficiency": 0.9545,
                     "repetitions": [{"wall_ms": 220}, {"wall_ms": 221}]}]})");
  const std::string md = render_report(v1, ".").markdown;
  EXPECT_NE(md.find("| CPU | Old CPU |"), std::string::npos) << md;
  EXPECT_NE(md.find("**Interrupted**"), std::string::npos) << md;
  EXPECT_NE(md.find("| [naive](#naive) | sleep:10 | 220.00 | 210.0 | - | 0.955 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Efficiency per repetition 0.950 to 0.955"), std::string::npos) << md;
}

TEST(ReportGolden, RejectsAnotherSchema) {
  nlohmann::json doc{{"schema_version", 7}, {"experiments", nlohmann::json::array()}};
  EXPECT_THROW(render_report(doc, "."), ResultsError);
  EXPECT_THROW(render_report(nlohmann::json{{"experiments", 1}}, "."), ResultsError);
  EXPECT_THROW(render_report(nlohmann::json::array(), "."), ResultsError);
  nlohmann::json odd{
      {"schema_version", 2}, {"repetitions", "three"}, {"experiments", nlohmann::json::array()}};
  EXPECT_THROW(render_report(odd, "."), ResultsError);
}

}  // namespace
}  // namespace pipeprof::results
