// An experiment run on every rank (`pipeprof run` or `suite` under mpirun), through the rank path
// (pipeprof/harness/ranks.h): each rank runs it on its shard and reports its figures (the medians
// of its repetitions: wall time, samples/s, AU, waits) and its trace; rank 0 gets every rank's row,
// the total, the slowest rank, and the traces merged onto its clock.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/ranks.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::harness {

struct RankedRun {
  ExperimentResult result;  // this rank's (valid when error is empty)
  std::string error;        // this rank's failure, or on rank 0 the first rank's ("rank 2 @ h: ...")
  bool input_error = false;
  // Rank 0: the ranks' summary and the merged trace (when the runs were traced).
  RanksSummary summary;
  std::shared_ptr<trace::Trace> merged;
  bool interrupted = false;
  bool broken = false;  // a rank stopped answering: the job is ending (error says so)
};

// Collective: every rank calls it with the same experiment. Throws only when the ranks cannot be
// gathered (a rank gone).
RankedRun run_experiment_on_ranks(cluster::Cluster& ranks, const Experiment& x, const RunOptions& options);

// Samples per element: the batch size of the spec's last batch or map_and_batch stage (1 without).
int64_t samples_per_element(const nlohmann::json& spec);

}  // namespace pipeprof::harness
