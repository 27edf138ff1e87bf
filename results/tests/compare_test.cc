#include "pipeprof/results/compare.h"

#include <gtest/gtest.h>

namespace pipeprof::results {
namespace {

Entry eff(const std::string& name, std::vector<double> values) {
  Entry e{.name = name, .efficiency = values};
  for (double v : values)
    e.time_ns.push_back(100e6 / v);  // ideal 100 ms
  return e;
}

const ComparisonRow& row(const Comparison& c, const std::string& name) {
  for (const auto& r : c.rows)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(Compare, SignificantDropBeyondThresholdIsARegression) {
  const auto base = {eff("a", {0.95, 0.96, 0.94, 0.95, 0.97})};
  const auto now = {eff("a", {0.80, 0.81, 0.79, 0.82, 0.80})};
  const Comparison c = compare(base, now, {.metric = Metric::kEfficiency, .threshold = 0.05});
  EXPECT_EQ(row(c, "a").verdict, Verdict::kRegression);
  ASSERT_TRUE(row(c, "a").test);
  EXPECT_LT(row(c, "a").test->p, 0.05);
  EXPECT_TRUE(c.has_regression());
  // The same data on time: time went up by ~18%, also a regression.
  const Comparison t = compare(base, now, {.metric = Metric::kTime, .threshold = 0.05});
  EXPECT_EQ(row(t, "a").verdict, Verdict::kRegression);
  // The other way round it is an improvement.
  const Comparison back = compare(now, base, {.metric = Metric::kEfficiency, .threshold = 0.05});
  EXPECT_EQ(row(back, "a").verdict, Verdict::kImprovement);
  EXPECT_FALSE(back.has_regression());
}

TEST(Compare, SignificantButSmallChangeIsNotARegression) {
  const auto base = {eff("a", {0.95, 0.951, 0.952, 0.953, 0.954})};
  const auto now = {eff("a", {0.93, 0.931, 0.932, 0.933, 0.934})};  // -2%, fully separated
  const Comparison c = compare(base, now, {.threshold = 0.05});
  EXPECT_LT(row(c, "a").test->p, 0.05);
  EXPECT_EQ(row(c, "a").verdict, Verdict::kUnchanged);
}

TEST(Compare, LargeButNotSignificantChangeIsNotARegression) {
  // Medians differ by ~20% but the samples overlap: noise, not a regression.
  const auto base = {eff("a", {0.5, 0.9, 0.6, 0.95, 0.85})};
  const auto now = {eff("a", {0.55, 0.9, 0.62, 0.7, 0.5})};
  const Comparison c = compare(base, now, {.threshold = 0.05});
  ASSERT_TRUE(row(c, "a").test);
  EXPECT_GE(row(c, "a").test->p, 0.05);
  EXPECT_LT(*row(c, "a").change, -0.05);
  EXPECT_EQ(row(c, "a").verdict, Verdict::kUnchanged);
}

TEST(Compare, SingleRepetitionFallsBackToTheThreshold) {
  const Comparison c = compare({eff("a", {0.9})}, {eff("a", {0.8})}, {.threshold = 0.05});
  EXPECT_EQ(row(c, "a").verdict, Verdict::kRegression);
  EXPECT_EQ(row(c, "a").test_note, "no test (n=1)");
  EXPECT_FALSE(row(c, "a").test);
  const Comparison ok = compare({eff("a", {0.9})}, {eff("a", {0.88})}, {.threshold = 0.05});
  EXPECT_EQ(row(ok, "a").verdict, Verdict::kUnchanged);
}

TEST(Compare, SamplesTooSmallForTheTestFallBackToTheThreshold) {
  // 2 against 2: the smallest possible p is 1/3.
  const Comparison c = compare({eff("a", {0.9, 0.91})}, {eff("a", {0.7, 0.71})}, {});
  EXPECT_EQ(row(c, "a").test_note, "no test (n too small)");
  EXPECT_EQ(row(c, "a").verdict, Verdict::kRegression);
}

TEST(Compare, UnmatchedAndMetricLessEntriesAreListedButNeverFail) {
  Entry no_ideal{.name = "vectorized", .time_ns = {1e6, 1.1e6}};
  const Comparison c =
      compare({eff("gone", {0.9, 0.9}), no_ideal}, {eff("added", {0.1, 0.1}), no_ideal}, {});
  EXPECT_EQ(row(c, "gone").verdict, Verdict::kOnlyInBase);
  EXPECT_EQ(row(c, "added").verdict, Verdict::kOnlyInNew);
  EXPECT_EQ(row(c, "vectorized").verdict, Verdict::kNoMetric);
  EXPECT_FALSE(c.has_regression());
  EXPECT_EQ(c.matched(), 1u);
}

TEST(Compare, TableAndJsonNameEveryRow) {
  // No ties: the exact test, p = 2 / C(10, 5).
  const Comparison c = compare({eff("a", {0.95, 0.96, 0.94, 0.955, 0.97})},
                               {eff("a", {0.80, 0.81, 0.79, 0.82, 0.805})}, {});
  const std::string table = format_table(c);
  EXPECT_NE(table.find("REGRESSION"), std::string::npos) << table;
  EXPECT_NE(table.find("U test (exact)"), std::string::npos) << table;
  EXPECT_NE(table.find("1 regression(s)"), std::string::npos) << table;
  const nlohmann::json j = to_json(c);
  EXPECT_TRUE(j["regression"].get<bool>());
  EXPECT_EQ(j["rows"][0]["verdict"], "regression");
  EXPECT_NEAR(j["rows"][0]["p"].get<double>(), 2.0 / 252, 1e-12);
}

TEST(Compare, ParsesThresholdsAndMetrics) {
  EXPECT_EQ(parse_metric("au"), Metric::kAu);
  EXPECT_EQ(parse_metric("throughput"), Metric::kThroughput);
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("0.1"), 0.1);
  EXPECT_DOUBLE_EQ(parse_threshold("12.5%"), 0.125);
  EXPECT_THROW(parse_threshold("five"), std::invalid_argument);
  EXPECT_THROW(parse_threshold("5%%"), std::invalid_argument);
  EXPECT_THROW(parse_threshold("-1%"), std::invalid_argument);
  EXPECT_THROW(parse_threshold(""), std::invalid_argument);
  EXPECT_EQ(parse_metric("time"), Metric::kTime);
  EXPECT_EQ(parse_metric("efficiency"), Metric::kEfficiency);
  EXPECT_THROW(parse_metric("speed"), std::invalid_argument);
}

Entry workload(const std::string& name, std::vector<double> au, std::vector<double> rate) {
  Entry e{.name = name, .au = au, .throughput = rate, .kind = EntryKind::kWorkload};
  for (double v : au)
    e.time_ns.push_back(v * 1e6);
  return e;
}

TEST(Compare, WorkloadsAreJudgedOnAuAndSamplesPerSecond) {
  const auto base = {workload("w", {99.0, 99.1, 98.9, 99.2, 99.0}, {500, 501, 502, 499, 500}),
                     eff("x", {0.95, 0.96, 0.94, 0.95, 0.97})};
  // Identical: two rows for the workload (AU and samples/s), one for the experiment.
  Comparison c = compare(base, base, {.metric = Metric::kEfficiency, .threshold = 0.05});
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[0].metric, Metric::kAu);
  EXPECT_EQ(c.rows[1].metric, Metric::kThroughput);
  EXPECT_EQ(c.rows[2].metric, Metric::kEfficiency);
  EXPECT_FALSE(c.has_regression());
  EXPECT_EQ(c.matched(), 2u);  // entries, not rows
  // AU down by 10%, samples/s the same: a regression on AU alone.
  const auto drop = {workload("w", {89.1, 89.2, 89.0, 89.3, 89.1}, {500, 501, 502, 499, 500}),
                     eff("x", {0.95, 0.96, 0.94, 0.95, 0.97})};
  c = compare(base, drop, {.metric = Metric::kEfficiency, .threshold = 0.05});
  EXPECT_EQ(c.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(c.rows[1].verdict, Verdict::kUnchanged);
  EXPECT_TRUE(c.has_regression());
  EXPECT_NE(format_table(c).find("w [au]"), std::string::npos) << format_table(c);
  EXPECT_EQ(to_json(c)["rows"][0]["metric"], "au");
  // Higher is better: the other way round is an improvement.
  EXPECT_EQ(compare(drop, base, {.threshold = 0.05}).rows[0].verdict, Verdict::kImprovement);
  // A baseline written before AU and samples/s were kept: the pair is judged on efficiency.
  Entry old = workload("w", {}, {});
  old.efficiency = {0.99, 0.98, 0.99, 0.97, 0.99};
  Entry now = workload("w", {99.0, 99.1, 98.9, 99.2, 99.0}, {500, 501, 502, 499, 500});
  now.efficiency = {0.80, 0.81, 0.79, 0.82, 0.80};
  c = compare({old}, {now}, {.threshold = 0.05});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].metric, Metric::kEfficiency);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kRegression);
  // --metric throughput on its own: one row per entry that has it.
  c = compare(base, drop, {.metric = Metric::kThroughput, .threshold = 0.05});
  EXPECT_EQ(c.rows[0].verdict, Verdict::kUnchanged);
  EXPECT_EQ(c.rows[1].verdict, Verdict::kNoMetric);  // the experiment has no samples/s
}

// A search beside its prediction: also judged on the prediction's |error| in %, lower is better,
// its change in points (a perfect prediction, 0, is a figure too).
TEST(Compare, PredictionsAreJudgedOnTheirErrorInPoints) {
  Entry base = workload("s", {99.0}, {500});
  base.prediction_error = {0};
  Entry near = base;
  near.prediction_error = {8};
  Entry far = base;
  far.prediction_error = {12.5};
  Comparison c = compare({base}, {near}, {.metric = Metric::kEfficiency, .threshold = 0.10});
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[2].metric, Metric::kPredictionError);
  EXPECT_DOUBLE_EQ(*c.rows[2].change, 0.08);  // 8 points
  EXPECT_EQ(c.rows[2].verdict, Verdict::kUnchanged);
  c = compare({base}, {far}, {.metric = Metric::kEfficiency, .threshold = 0.10});
  EXPECT_EQ(c.rows[2].verdict, Verdict::kRegression);
  EXPECT_NE(format_table(c).find("+12.5pt"), std::string::npos) << format_table(c);
  EXPECT_NE(format_table(c).find("s [prediction_error]"), std::string::npos) << format_table(c);
  EXPECT_EQ(compare({far}, {base}, {.threshold = 0.10}).rows[2].verdict, Verdict::kImprovement);
  // --metric prediction_error on its own: entries without a prediction have no such figure.
  c = compare({base, eff("x", {0.9})}, {far, eff("x", {0.9})},
              {.metric = Metric::kPredictionError, .threshold = 0.10});
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(c.rows[1].verdict, Verdict::kNoMetric);
  EXPECT_EQ(parse_metric("prediction_error"), Metric::kPredictionError);
  // A baseline without the prediction: judged on AU and samples/s only.
  EXPECT_EQ(compare({workload("s", {99.0}, {500})}, {far}, {.threshold = 0.10}).rows.size(), 2u);
}

TEST(Compare, Median) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
}

}  // namespace
}  // namespace pipeprof::results
