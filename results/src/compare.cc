#include "pipeprof/results/compare.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace pipeprof::results {
namespace {

const std::vector<double>& samples(const Entry& e, Metric metric) {
  switch (metric) {
    case Metric::kEfficiency:
      return e.efficiency;
    case Metric::kTime:
      return e.time_ns;
    case Metric::kAu:
      return e.au;
    case Metric::kThroughput:
      return e.throughput;
    case Metric::kPredictionError:
      return e.prediction_error;
  }
  return e.time_ns;
}

// A workload's entry that carries its AU and samples/s (results written before they were kept
// per repetition do not).
bool has_au(const Entry& e) {
  return e.judged_on_au() && !e.au.empty() && !e.throughput.empty();
}

// What a pair is judged on: workloads on their AU and samples/s where the efficiency metric is
// asked for (on efficiency, as before, where one side lacks them); otherwise the metric asked for.
// A search set beside its prediction is also judged on the prediction's error.
std::vector<Metric> metrics_of(const Entry& e, const Entry* other, Metric metric) {
  if (metric == Metric::kEfficiency && has_au(e) && (other == nullptr || has_au(*other))) {
    std::vector<Metric> out{Metric::kAu, Metric::kThroughput};
    if (!e.prediction_error.empty() && (other == nullptr || !other->prediction_error.empty()))
      out.push_back(Metric::kPredictionError);
    return out;
  }
  return {metric};
}

// The smallest p the U test can give for these sizes: two fully separated samples.
double smallest_p(size_t n1, size_t n2) {
  std::vector<double> x(n1), y(n2);
  std::iota(x.begin(), x.end(), 0.0);
  std::iota(y.begin(), y.end(), static_cast<double>(n1));
  return mann_whitney_u(x, y).p;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool Comparison::has_regression() const {
  return std::any_of(rows.begin(), rows.end(),
                     [](const ComparisonRow& r) { return r.verdict == Verdict::kRegression; });
}

size_t Comparison::matched() const {
  // Entries, not rows: a workload judged on two figures has two rows.
  std::set<std::string> names;
  for (const ComparisonRow& r : rows) {
    if (r.verdict != Verdict::kOnlyInBase && r.verdict != Verdict::kOnlyInNew) names.insert(r.name);
  }
  return names.size();
}

Metric parse_metric(const std::string& name) {
  if (name == "efficiency") return Metric::kEfficiency;
  if (name == "time") return Metric::kTime;
  if (name == "au") return Metric::kAu;
  if (name == "throughput") return Metric::kThroughput;
  if (name == "prediction_error") return Metric::kPredictionError;
  throw std::invalid_argument("unknown metric '" + name +
                              "' (expected efficiency, time, au, throughput or prediction_error)");
}

const char* metric_name(Metric metric) {
  switch (metric) {
    case Metric::kEfficiency:
      return "efficiency";
    case Metric::kTime:
      return "time";
    case Metric::kAu:
      return "au";
    case Metric::kThroughput:
      return "throughput";
    case Metric::kPredictionError:
      return "prediction_error";
  }
  return "?";
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression:
      return "regression";
    case Verdict::kImprovement:
      return "improvement";
    case Verdict::kUnchanged:
      return "unchanged";
    case Verdict::kNoMetric:
      return "no metric";
    case Verdict::kOnlyInBase:
      return "only in base";
    case Verdict::kOnlyInNew:
      return "only in new";
  }
  return "?";
}

double parse_threshold(const std::string& text) {
  std::string t = text;
  bool percent = false;
  if (!t.empty() && t.back() == '%') {
    percent = true;
    t.pop_back();
  }
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size()) {
    throw std::invalid_argument("threshold '" + text + "' is not a number or a percentage");
  }
  if (percent) v /= 100;
  if (!(v >= 0 && v < 10)) {
    throw std::invalid_argument("threshold '" + text + "' must be between 0 and 1000%");
  }
  return v;
}

Comparison compare(const std::vector<Entry>& base, const std::vector<Entry>& now,
                   const CompareOptions& options) {
  Comparison c{.options = options};
  std::map<std::string, const Entry*> new_by_name;
  for (const auto& e : now)
    new_by_name.emplace(e.name, &e);
  std::map<std::string, bool> seen;
  for (const auto& b : base) {
    auto it = new_by_name.find(b.name);
    const Entry* n = it == new_by_name.end() ? nullptr : it->second;
    if (n != nullptr) seen[b.name] = true;
    for (const Metric metric : metrics_of(b, n, options.metric)) {
      ComparisonRow row{.name = b.name, .metric = metric};
      const std::vector<double>& xs = samples(b, metric);
      row.base_n = xs.size();
      if (!xs.empty()) row.base_median = median(xs);
      if (n == nullptr) {
        row.verdict = Verdict::kOnlyInBase;
        c.rows.push_back(std::move(row));
        continue;
      }
      const std::vector<double>& ys = samples(*n, metric);
      row.new_n = ys.size();
      if (!ys.empty()) row.new_median = median(ys);
      // An error of 0 is a perfect prediction, not a missing figure.
      const bool in_points = metric == Metric::kPredictionError;
      if (xs.empty() || ys.empty() || (*row.base_median == 0 && !in_points)) {
        row.verdict = Verdict::kNoMetric;
        c.rows.push_back(std::move(row));
        continue;
      }
      row.change = in_points ? (*row.new_median - *row.base_median) / 100
                             : (*row.new_median - *row.base_median) / *row.base_median;
      const bool lower_is_better = metric == Metric::kTime || in_points;
      const double worse = lower_is_better ? *row.change : -*row.change;  // > 0: worse
      bool significant = true;  // when the test is skipped, the threshold alone decides
      if (xs.size() < 2 || ys.size() < 2) {
        row.test_note = "no test (n=1)";
      } else if (smallest_p(xs.size(), ys.size()) >= options.alpha) {
        row.test_note = "no test (n too small)";
      } else {
        row.test = mann_whitney_u(xs, ys);
        row.test_note = row.test->exact ? "U test (exact)" : "U test (normal)";
        significant = row.test->p < options.alpha;
      }
      if (significant && worse > options.threshold) {
        row.verdict = Verdict::kRegression;
      } else if (significant && -worse > options.threshold) {
        row.verdict = Verdict::kImprovement;
      }
      c.rows.push_back(std::move(row));
    }
  }
  for (const auto& n : now) {
    if (seen.count(n.name)) continue;
    for (const Metric metric : metrics_of(n, nullptr, options.metric)) {
      ComparisonRow row{.name = n.name, .metric = metric, .verdict = Verdict::kOnlyInNew};
      const std::vector<double>& ys = samples(n, metric);
      row.new_n = ys.size();
      if (!ys.empty()) row.new_median = median(ys);
      c.rows.push_back(std::move(row));
    }
  }
  return c;
}

}  // namespace pipeprof::results
