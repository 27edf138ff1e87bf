#include "commands/rank_results.h"

#include <fmt/format.h>


#include "pipeprof/harness/cli.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/results/compare.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/merge.h"
#include "workload/rank_gather.h"

namespace pipeprof::harness {

int64_t samples_per_element(const nlohmann::json& spec) {
  int64_t n = 1;
  for (const nlohmann::json& stage : spec.value("stages", nlohmann::json::array())) {
    const std::string op = stage.value("op", "");
    if ((op == "batch" || op == "map_and_batch") && stage.contains("batch_size") &&
        stage["batch_size"].is_number_integer()) {
      n = stage["batch_size"].get<int64_t>();
    }
  }
  return n;
}

RankedRun run_on_ranks(cluster::Cluster& ranks, const Experiment& x, const RunOptions& options) {
  const bool root = ranks.rank() == 0;
  RankedRun out;
  const std::vector<cluster::ClockSync> sync_start = ranks.sync_clocks(50, options.stop);
  try {
    out.result = run_experiment(x, options);
  } catch (...) {  // classified as the command line does (exit 2: bad input)
    const ExitStatus status = exit_status_of(std::current_exception());
    out.error = status.message;
    out.input_error = status.code == kExitBadInput;
  }
  const std::vector<cluster::ClockSync> sync_end = ranks.sync_clocks(50, options.stop);
  const int64_t per_element = samples_per_element(x.spec.document);
  nlohmann::json mine{{"rank", ranks.rank()}, {"host", ranks.host()}, {"error", nullptr}};
  if (!out.error.empty()) {
    mine["error"] = {{"message", out.error}, {"input", out.input_error}};
  } else {
    const ExperimentResult& result = out.result;
    std::vector<double> au;  // the run engine's AU of each repetition (metrics.h)
    for (const Repetition& r : result.repetitions)
      au.push_back(r.au_percentage);
    const double wall_s = result.median_wall_ms / 1e3;
    const double elements = static_cast<double>(result.elements);
    mine["median_wall_ms"] = result.median_wall_ms;
    mine["elements"] = result.elements;
    mine["samples_per_second"] =
        wall_s > 0 ? elements * static_cast<double>(per_element) / wall_s : 0.0;
    mine["au_percentage"] = results::median(au);
    mine["wait_mean_ms"] = result.median_wait.mean_ms;
    mine["interrupted"] = result.interrupted;
    if (result.trace && !root) mine["trace"] = workload::rank_trace_json(*result.trace);
  }
  const std::vector<std::string> parts = ranks.gather(mine.dump(), options.stop);
  if (!root) return out;

  nlohmann::json rows = nlohmann::json::array();
  std::vector<trace::RankTrace> traces;
  double total = 0;
  std::vector<std::pair<int, double>> rates;
  std::string first_error;
  bool first_input = false;
  for (const std::string& part : parts) {
    nlohmann::json r = nlohmann::json::parse(part);
    const int rank = r["rank"].get<int>();
    if (!r["error"].is_null()) {
      if (first_error.empty()) {  // the lowest rank that failed, named
        first_error = fmt::format("rank {} @ {}: {}", rank, r["host"].get<std::string>(),
                                  r["error"]["message"].get<std::string>());
        first_input = r["error"]["input"].get<bool>();
      }
      continue;
    }
    const double rate = r["samples_per_second"].get<double>();
    total += rate;
    rates.emplace_back(rank, rate);
    out.interrupted = out.interrupted || r["interrupted"].get<bool>();
    if (rank == 0 && out.result.trace) {
      traces.push_back(
          {.rank = 0, .host = r["host"].get<std::string>(), .trace = std::move(*out.result.trace), .offsets = {}});
      out.result.trace.reset();  // moved into the merge
    } else if (r.contains("trace")) {
      traces.push_back({.rank = rank,
                        .host = r["host"].get<std::string>(),
                        .trace = trace::parse_chrome_json(r["trace"].get<std::string>(),
                                                          fmt::format("rank {}'s trace", rank)),
                        .offsets = workload::clock_offsets(rank, sync_start, sync_end)});
      r.erase("trace");
    }
    rows.push_back(std::move(r));
  }
  if (!first_error.empty()) {
    out.error = first_error;
    out.input_error = first_input;
    return out;
  }
  const workload::Slowest slowest = workload::slowest_rank(rates);
  out.summary = {{"ranks", rows},
                 {"size", ranks.size()},
                 {"cluster", ranks.describe()},
                 {"samples_per_element", per_element},
                 {"samples_per_second", total},
                 {"slowest_rank", slowest.rank},
                 {"slowest_behind_mean_percent", slowest.behind_mean_percent}};
  if (!traces.empty()) {
    out.merged = std::make_shared<trace::Trace>(trace::merge_ranks(std::move(traces)));
    out.summary["clock_error_ns"] = std::stoll(out.merged->metadata.at("clock_error_ns"));
  }
  return out;
}

std::string rank_table(const nlohmann::json& summary) {
  std::string out = fmt::format("{:>5}  {:<16} {:>12} {:>12} {:>8}\n", "rank", "host", "wall ms",
                                "samples/s", "AU %");
  for (const nlohmann::json& r : summary["ranks"]) {
    out += fmt::format("{:>5}  {:<16} {:>12.1f} {:>12.1f} {:>8.1f}\n", r["rank"].get<int>(),
                       r["host"].get<std::string>(), r["median_wall_ms"].get<double>(),
                       r["samples_per_second"].get<double>(), r["au_percentage"].get<double>());
  }
  const size_t n = summary["ranks"].size();
  const double total = summary["samples_per_second"].get<double>();
  out += fmt::format("all ranks: {:.1f} samples/s ({} x {:.1f}); slowest rank {} ({:.1f}% below the mean)\n",
                     total, n, n > 0 ? total / static_cast<double>(n) : 0.0,
                     summary["slowest_rank"].get<int>(),
                     summary["slowest_behind_mean_percent"].get<double>());
  return out;
}

}  // namespace pipeprof::harness
