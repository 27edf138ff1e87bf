// The rank path: every kind of run over ranks (an experiment under `pipeprof run` or `suite`, a
// DLIO workload under `pipeprof workload`, each launched by mpirun) goes through run_on_ranks.
// Each rank runs its part and ends with a typed RankReport; run_on_ranks measures the clocks
// before and after, sends the reports to rank 0, puts their records and traces on rank 0's clock,
// names the first rank that failed and merges the traces. Rank 0 then sums the ranks up in a
// RanksSummary, the typed `ranks` object of results.json (pipeprof/results/records.h), which
// is also what the scale-out suite reads back from its runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/harness/training_loop.h"
#include "pipeprof/results/records.h"
#include "pipeprof/trace/merge.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::harness {

// What a rank's run ended with when it did not succeed.
struct RankFailure {
  std::string message;
  bool input = false;  // bad input (the command line exits 2), else a failure (exit 1)
};

// An experiment's figures on one rank: the medians over its repetitions.
struct RankFigures {
  double median_wall_ms = 0;
  int64_t elements = 0;
  double samples_per_second = 0;  // elements x samples per element / wall time
  double au_percentage = 0;       // the run engine's AU (metrics.h)
  double wait_mean_ms = 0;
};

// What one rank sends rank 0 after its run.
struct RankReport {
  int rank = 0;
  std::string host;
  std::optional<RankFailure> error;
  bool interrupted = false;
  bool realtime = false;  // its training loops ran at real-time priority
  double cpu_ms = 0;      // the process's CPU time over the run
  std::vector<std::string> notes;
  std::vector<ConsumerRecord> consumers;  // a workload's accelerators (their records)
  std::optional<RankFigures> figures;     // an experiment's figures
  std::shared_ptr<trace::Trace> trace;    // when the run was traced
  // What else a kind of run reports from each rank, in its own text form (a workload's checkpoint
  // operations); empty: nothing.
  std::string payload;
};

// The wire form of a report (its trace as Chrome JSON, on the rank's clock plus the test skew of
// PIPEPROF_CLOCK_SKEW_NS), and back with its times put on rank 0's clock by `offsets`. A malformed
// report throws nlohmann::json::exception.
nlohmann::json rank_report_json(const RankReport& r);
RankReport rank_report_from_json(const nlohmann::json& j, const std::vector<trace::ClockOffset>& offsets);

// The offsets that put rank `rank`'s timestamps on rank 0's clock, from rank 0's measures at the
// start and the end of a run (none for rank 0 itself).
std::vector<trace::ClockOffset> clock_offsets(int rank, const std::vector<cluster::ClockSync>& start,
                                              const std::vector<cluster::ClockSync>& end);

// The classification of a rank's error: the caller's (the command line's exit_status_of), so that
// a corrupt file on rank 3 exits 2 as it would alone.
using ErrorClassifier = std::function<RankFailure(std::exception_ptr)>;

struct RankRunOptions {
  const std::atomic<bool>* stop = nullptr;
  ErrorClassifier classify;  // default: InputError is bad input, anything else a failure
  // A rank that failed before the run (its setup): every rank agrees to skip the run, and the
  // gathered reports say which failed.
  std::exception_ptr failed_before;
};

struct RankRun {
  RankReport mine;  // this rank's own report (on rank 0 moved into `ranks`)
  // A rank stopped answering (it died, and mpirun is ending the job): nothing was gathered, and
  // `mine` is all this rank has.
  bool broken = false;
  // Rank 0, when not broken: every rank's report by rank, records on rank 0's clock and traces
  // merged into `merged`; the lowest rank that failed ("rank N @ host: message").
  std::vector<RankReport> ranks;
  std::shared_ptr<trace::Trace> merged;
  int64_t clock_error_ns = 0;
  std::optional<RankFailure> failure;
};

// Collective: every rank calls it. `body` runs this rank's part and returns its report (rank and
// host are filled in); an exception from it becomes the report's error. Throws only when the ranks
// cannot be gathered for another reason than a rank gone.
RankRun run_on_ranks(cluster::Cluster& ranks, const std::function<RankReport()>& body,
                     const RankRunOptions& options);

// The `ranks` object of results.json is a typed record of the results layer.
using results::RankRow;
using results::RanksSummary;

// Fills the total and the slowest rank from the rows.
void sum_up(RanksSummary& s);

// The per-rank table rank 0 prints.
std::string rank_table(const RanksSummary& s);

}  // namespace pipeprof::harness
