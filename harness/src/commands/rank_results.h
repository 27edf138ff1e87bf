// An experiment run on every rank (`pipeprof run` or `suite` under mpirun): each rank runs it on
// its shard, and rank 0 gathers what they measured: per rank its wall time, samples/s (elements x
// the last batch size) and AU (the step's share of the wall time), in total, the slowest rank,
// and every rank's traced run merged onto rank 0's clock.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::harness {

struct RankedRun {
  ExperimentResult result;  // this rank's (valid when error is empty)
  std::string error;        // this rank's failure, or on rank 0 the first rank's ("rank 2 @ h: ...")
  bool input_error = false;
  // Rank 0: the ranks' summary ({"ranks": [...], "samples_per_second", "slowest_rank", ...}) and
  // the merged trace (when the runs were traced).
  nlohmann::json summary;
  std::shared_ptr<trace::Trace> merged;
  bool interrupted = false;
};

// Collective: every rank calls it with the same experiment. Throws only when the ranks cannot be
// gathered (a rank gone).
RankedRun run_on_ranks(cluster::Cluster& ranks, const Experiment& x, const RunOptions& options);

// The per-rank table rank 0 prints.
std::string rank_table(const nlohmann::json& summary);

// Samples per element: the batch size of the spec's last batch or map_and_batch stage (1 without).
int64_t samples_per_element(const nlohmann::json& spec);

}  // namespace pipeprof::harness
