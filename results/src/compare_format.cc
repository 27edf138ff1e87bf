// The comparison as a plain-text table and as JSON.
#include <fmt/format.h>

#include <algorithm>

#include "pipeprof/results/compare.h"

namespace pipeprof::results {
namespace {

std::string format_value(double v, Metric metric) {
  if (metric == Metric::kEfficiency) return fmt::format("{:.3f}", v);
  if (metric == Metric::kAu) return fmt::format("{:.2f}%", v);
  if (metric == Metric::kThroughput) return fmt::format("{:.1f}/s", v);
  if (metric == Metric::kPredictionError) return fmt::format("{:.1f}%", v);
  if (v >= 1e9) return fmt::format("{:.3f} s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3f} ms", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3f} us", v / 1e3);
  return fmt::format("{:.1f} ns", v);
}

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string format_table(const Comparison& c) {
  const Metric m = c.options.metric;
  size_t width = 10;
  // A row judged on another figure than the table's metric names it after the entry.
  auto label = [m](const ComparisonRow& r) {
    return r.metric == m ? r.name : fmt::format("{} [{}]", r.name, metric_name(r.metric));
  };
  for (const auto& r : c.rows)
    width = std::max(width, label(r).size());
  const char* short_name = m == Metric::kEfficiency ? "eff." : metric_name(m);
  std::string out = fmt::format("{:<{}}  {:>16} {:>16} {:>9} {:>9}  {:<22} {}\n", "name", width,
                                fmt::format("base {}", short_name), fmt::format("new {}", short_name),
                                "change", "p", "test", "verdict");
  for (const auto& r : c.rows) {
    const std::string base = r.base_median
                                 ? fmt::format("{} (n={})", format_value(*r.base_median, r.metric), r.base_n)
                                 : "-";
    const std::string now = r.new_median
                                ? fmt::format("{} (n={})", format_value(*r.new_median, r.metric), r.new_n)
                                : "-";
    out += fmt::format("{:<{}}  {:>16} {:>16} {:>9} {:>9}  {:<22} {}\n", label(r), width, base, now,
                       !r.change ? std::string("-")
                       : r.metric == Metric::kPredictionError ? fmt::format("{:+.1f}pt", *r.change * 100)
                                                              : fmt::format("{:+.1f}%", *r.change * 100),
                       r.test ? fmt::format("{:.4f}", r.test->p) : "-",
                       r.test_note.empty() ? "-" : r.test_note,
                       r.verdict == Verdict::kRegression ? "REGRESSION" : verdict_name(r.verdict));
  }
  size_t regressions = 0, improvements = 0;
  for (const auto& r : c.rows) {
    regressions += r.verdict == Verdict::kRegression;
    improvements += r.verdict == Verdict::kImprovement;
  }
  const bool other_metrics =
      std::any_of(c.rows.begin(), c.rows.end(), [m](const ComparisonRow& r) { return r.metric != m; });
  out += fmt::format(
      "{} compared on {}{} (threshold {:.1f}%, alpha {}): {} regression(s), {} improvement(s)\n",
      c.matched(), metric_name(m),
      other_metrics ? " (workloads on au and throughput, predictions on their error)" : "",
      c.options.threshold * 100, c.options.alpha, regressions, improvements);
  return out;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json row{{"name", r.name},
                       {"metric", metric_name(r.metric)},
                       {"verdict", verdict_name(r.verdict)},
                       {"base_n", r.base_n},
                       {"new_n", r.new_n},
                       {"base_median", opt(r.base_median)},
                       {"new_median", opt(r.new_median)},
                       {"change", opt(r.change)},
                       {"test", r.test_note}};
    if (r.test) {
      row["p"] = r.test->p;
      row["u"] = r.test->u1;
      row["exact"] = r.test->exact;
    } else {
      row["p"] = nullptr;
    }
    rows.push_back(std::move(row));
  }
  return {{"metric", metric_name(c.options.metric)},
          {"threshold", c.options.threshold},
          {"alpha", c.options.alpha},
          {"regression", c.has_regression()},
          {"rows", rows}};
}

}  // namespace pipeprof::results
