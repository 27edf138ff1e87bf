// A workload run over ranks (mpirun): what each rank sends rank 0 after its training loop, and
// how rank 0 puts the ranks together: every rank's accelerators in one TrainRun (so DLIO's
// metrics are computed over all of them, as DLIO's rank 0 does), the ranks' traces merged onto
// rank 0's clock, the first failure of any rank (named), and a per-rank table.
#pragma once

#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/trace/merge.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_training.h"

namespace pipeprof::harness::workload {

// This rank's report, as JSON text: its accelerators' records, notes, the error it ended with
// (null when none; "kind" is "input" for bad input, else "run"), its trace (Chrome JSON) and the
// clock measures rank 0 took of it.
std::string rank_report(const cluster::Cluster& c, const TrainRun& run, std::exception_ptr error,
                        double cpu_ms);

struct GatheredRanks {
  TrainRun run;          // every rank's accelerators (by rank), notes prefixed with their rank
  nlohmann::json ranks;  // per rank: host, accelerators, error
  // The first rank that failed: its message prefixed "rank N @ host: ", and whether it was bad
  // input (exit 2) or a failure (exit 1).
  std::string error;
  bool error_is_input = false;
  double cpu_ms = 0;  // all ranks
  int64_t clock_error_ns = 0;
};

// Rank 0: puts the reports together. `start` and `end` are rank 0's clock measures (sync_clocks
// at the start and the end of the run); `local` is rank 0's own run (its trace and stages).
GatheredRanks gather_ranks(const std::vector<std::string>& reports, TrainRun local,
                           const std::vector<cluster::ClockSync>& start,
                           const std::vector<cluster::ClockSync>& end);

// The offsets that put rank `rank`'s timestamps on rank 0's clock, from rank 0's measures at the
// start and the end of a run (none for rank 0 itself).
std::vector<trace::ClockOffset> clock_offsets(int rank, const std::vector<cluster::ClockSync>& start,
                                              const std::vector<cluster::ClockSync>& end);

// This rank's trace as Chrome JSON for rank 0, on the clock the ping-pong measured (its own, plus
// the test skew of PIPEPROF_CLOCK_SKEW_NS).
std::string rank_trace_json(const trace::Trace& t);

// The slowest of the ranks' samples/s (rank, rate) and how far below their mean it is, in %.
struct Slowest {
  int rank = -1;
  double behind_mean_percent = 0;
};
Slowest slowest_rank(const std::vector<std::pair<int, double>>& rates);

// The per-rank summary of a gathered run, for results.json: per rank its AU and samples/s (over
// its accelerators), and the slowest rank and by how much it trails the mean.
nlohmann::json rank_summary(const GatheredRanks& g, const std::vector<double>& accelerator_au,
                            const std::vector<double>& accelerator_throughput,
                            int64_t accelerators_per_rank);

}  // namespace pipeprof::harness::workload
