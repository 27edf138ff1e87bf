// Comparing a run against a baseline: experiments (or Google Benchmark benchmarks) are matched by
// name and the repetitions of each pair are compared on one metric.
//
// Rule: a pair is a regression when the change is significant AND large enough:
//   - significant: the two-sided Mann-Whitney U test on the repetitions gives p < alpha;
//   - large enough: the median got worse by more than `threshold`, relative to the baseline's
//     median (efficiency down by more than threshold, or time up by more than threshold).
// An improvement is the same with "better". Everything else is unchanged.
// When the test cannot reach alpha at these sample sizes (one repetition on a side, or so few that
// even two fully separated samples give p >= alpha, e.g. 2 against 2), the test is skipped and
// the threshold alone decides; the row says "no test (n=1)" or "no test (n too small)".
// Entries only in one file are listed and never fail the comparison; entries without the metric
// (no ideal, hence no efficiency) are listed as such.
//
// Each kind of entry is judged on its own figures: with the efficiency metric, an experiment on its
// efficiency and a workload (a DLIO-style run of simulated accelerators) on its accelerator
// utilization and its samples/s, one row each, and a search set beside its prediction also on
// the prediction's error. --metric au, throughput or prediction_error judges every entry that has
// that figure on it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/results/mann_whitney.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

enum class Metric {
  kEfficiency,  // ideal / measured: higher is better
  kTime,        // wall time: lower is better
  kAu,          // accelerator utilization, %: higher is better
  kThroughput,  // samples/s: higher is better
  // A search set beside its prediction: |predicted - measured| / measured in %, lower is better.
  // Its change is in points, not relative: a threshold of 10% fails an error that grows by more
  // than 10 points (3% to 14%).
  kPredictionError,
};

struct CompareOptions {
  Metric metric = Metric::kEfficiency;
  double threshold = 0.05;  // relative, 0.05 = 5%
  double alpha = 0.05;
};

enum class Verdict { kRegression, kImprovement, kUnchanged, kNoMetric, kOnlyInBase, kOnlyInNew };

struct ComparisonRow {
  std::string name;
  Metric metric = Metric::kEfficiency;  // what this row judges
  Verdict verdict = Verdict::kUnchanged;
  size_t base_n = 0, new_n = 0;
  std::optional<double> base_median, new_median;
  std::optional<double> change;     // (new - base) / base of the medians (prediction error:
                                    // (new - base) / 100, in points)
  std::optional<MannWhitney> test;  // absent when the test was skipped
  std::string test_note;            // "U test", "no test (n=1)", "no test (n too small)"
};

struct Comparison {
  CompareOptions options;
  std::vector<ComparisonRow> rows;
  bool has_regression() const;
  size_t matched() const;  // entries present in both files
};

// Throws std::invalid_argument for an unknown name / a malformed threshold.
Metric parse_metric(const std::string& name);
const char* metric_name(Metric metric);
const char* verdict_name(Verdict verdict);
// "5%" or "0.05" -> 0.05; must be in [0, 10).
double parse_threshold(const std::string& text);

Comparison compare(const std::vector<Entry>& base, const std::vector<Entry>& now,
                   const CompareOptions& options);

// A plain-text table (one row per entry, then a one-line summary).
std::string format_table(const Comparison& comparison);
nlohmann::json to_json(const Comparison& comparison);

double median(std::vector<double> values);

}  // namespace pipeprof::results
