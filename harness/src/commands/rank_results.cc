#include "commands/rank_results.h"

#include "pipeprof/harness/cli.h"
#include "pipeprof/results/compare.h"

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

RankedRun run_experiment_on_ranks(cluster::Cluster& ranks, const Experiment& x, const RunOptions& options) {
  RankedRun out;
  const int64_t per_element = samples_per_element(x.spec.document);
  RankRun ran = run_on_ranks(
      ranks,
      [&] {
        out.result = run_experiment(x, options);
        const ExperimentResult& result = out.result;
        std::vector<double> au;  // the run engine's AU of each repetition (metrics.h)
        for (const Repetition& r : result.repetitions)
          au.push_back(r.au_percentage);
        const double wall_s = result.median_wall_ms / 1e3;
        RankReport mine{.interrupted = result.interrupted,
                        .figures = RankFigures{.median_wall_ms = result.median_wall_ms,
                                               .elements = result.elements,
                                               .samples_per_second =
                                                   wall_s > 0 ? static_cast<double>(result.elements) *
                                                                    static_cast<double>(per_element) / wall_s
                                                              : 0.0,
                                               .au_percentage = results::median(au),
                                               .wait_mean_ms = result.median_wait.mean_ms},
                        .trace = std::move(out.result.trace)};
        return mine;
      },
      {.stop = options.stop, .classify = rank_failure_of});
  if (ran.mine.error) {
    out.error = ran.mine.error->message;
    out.input_error = ran.mine.error->input;
  }
  out.broken = ran.broken;
  if (ran.broken && out.error.empty()) {
    // A rank stopped answering (mpirun names it and ends the job): nothing was gathered.
    out.error = "gathering the ranks' results: a rank stopped answering (mpirun names it)";
  }
  if (ranks.rank() != 0 || ran.broken) return out;
  if (ran.failure) {
    out.error = ran.failure->message;
    out.input_error = ran.failure->input;
    return out;
  }
  out.summary = RanksSummary{.size = ranks.size(),
                             .cluster = ranks.describe(),
                             .samples_per_element = per_element,
                             .clock_error_ns = ran.clock_error_ns};
  for (const RankReport& r : ran.ranks) {
    const RankFigures f = r.figures.value_or(RankFigures{});
    out.interrupted = out.interrupted || r.interrupted;
    out.summary.rows.push_back(RankRow{.rank = r.rank,
                                       .host = r.host,
                                       .samples_per_second = f.samples_per_second,
                                       .au_percentage = f.au_percentage,
                                       .median_wall_ms = f.median_wall_ms,
                                       .wait_mean_ms = f.wait_mean_ms,
                                       .elements = f.elements,
                                       .interrupted = r.interrupted});
  }
  sum_up(out.summary);
  out.result.ranks = out.summary;  // results.json's "ranks" object
  out.merged = std::move(ran.merged);
  return out;
}

}  // namespace pipeprof::harness
