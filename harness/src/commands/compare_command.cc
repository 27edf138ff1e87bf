// pipeprof compare BASE NEW [--metric efficiency|time|au|throughput|prediction_error]
//                  [--threshold 5%] [--alpha 0.05]
//                  [--json]
//
// Judges a run against a baseline (results/compare.h): experiments or Google Benchmark benchmarks
// matched by name, a two-sided Mann-Whitney U test on the repetitions plus a minimum relative
// change. Exit 1 when any pair regressed, 0 otherwise, 2 for bad input.
#include <iostream>

#include "commands/commands.h"
#include "pipeprof/results/compare.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::harness {
namespace {

struct CompareCommandOptions {
  std::string base, now;
  std::string metric = "auto";
  std::string threshold = "5%";
  double alpha = 0.05;
  bool json = false;
};

Outcome compare_command(const CompareCommandOptions& o) {
  results::CompareOptions options{.alpha = o.alpha};
  options.threshold = results::parse_threshold(o.threshold);
  const results::ResultsFile base = read_input([&] { return results::load_results(o.base); });
  const results::ResultsFile now = read_input([&] { return results::load_results(o.now); });
  const bool both_ours =
      base.format == results::Format::kPipeprof && now.format == results::Format::kPipeprof;
  options.metric = o.metric == "auto"
                       ? (both_ours ? results::Metric::kEfficiency : results::Metric::kTime)
                       : results::parse_metric(o.metric);
  if (options.metric != results::Metric::kTime && !both_ours) {
    const std::string& gbench = base.format == results::Format::kGoogleBenchmark ? o.base : o.now;
    throw InputError(gbench + ": Google Benchmark JSON has no " + results::metric_name(options.metric) +
                     "; use --metric time");
  }
  for (const auto* file : {&base, &now}) {
    const auto it = file->doc.find("interrupted");
    if (it != file->doc.end() && it->is_boolean() && it->get<bool>()) {
      std::cerr << "pipeprof compare: warning: " << file->path.string()
                << " is from an interrupted run: its results are partial\n";
    }
  }
  const results::Comparison c = results::compare(base.entries, now.entries, options);
  if (c.matched() == 0) {
    throw InputError(o.base + " and " + o.now + " have no experiment or benchmark name in common");
  }
  if (o.json) {
    nlohmann::json j = results::to_json(c);
    j["base"] = o.base;
    j["new"] = o.now;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << results::format_table(c);
  }
  return c.has_regression() ? Outcome::kFailed : Outcome::kOk;
}

}  // namespace

CommandRunner add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareCommandOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare a run against a baseline; exit 1 on a significant regression");
  cmd->footer(
      "Experiments (pipeprof results.json) or benchmarks (Google Benchmark JSON, run with "
      "--benchmark_repetitions) are matched by name. A pair is a regression when a two-sided "
      "Mann-Whitney U test on the repetitions gives p < alpha AND the median got worse by more "
      "than the threshold. With one repetition on a side, or too few for the test to reach alpha, "
      "the threshold alone decides.\n"
      "Exit status: 0 no regression, 1 a significant regression, 2 bad input.\n"
      "Example: pipeprof compare results/baseline/ci-quick.json out/results.json --threshold 10%");
  cmd->add_option("base", o->base, "Baseline results file (pipeprof or Google Benchmark JSON)")
      ->required();
  cmd->add_option("new", o->now, "New results file to judge")->required();
  cmd->add_option("--metric", o->metric,
                  "efficiency (ideal / measured, higher is better; workloads are judged on their "
                  "AU and samples/s instead, searches set beside a prediction also on its error), "
                  "time (wall time, lower is better), au (accelerator utilization), throughput "
                  "(samples/s) or prediction_error (|predicted - measured| / measured most "
                  "accelerators, %, lower is better; its threshold is in points: 10% fails an error "
                  "that grows by more than 10 points); auto: efficiency for two pipeprof files, "
                  "time otherwise")
      ->check(CLI::IsMember({"auto", "efficiency", "time", "au", "throughput", "prediction_error"}))
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold,
                  "Smallest relative change of the median that counts, e.g. 5% or 0.05")
      ->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "Significance level of the U test")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the comparison as JSON instead of a table");
  return [o] { return compare_command(*o); };
}

}  // namespace pipeprof::harness
