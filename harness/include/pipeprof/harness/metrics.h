// The run engine's metrics: accelerator utilization (AU), throughput and waits, computed once,
// from the training loop's typed records (training_loop.h), for every kind of run.
//
//   epoch_metrics  one consumer's epoch, as DLIO's StatsCounter computes it (MLPerf Storage v2
//                  and later), with s = window.exclude_start and e = steps - 1 - exclude_end
//                  (steps: window.steps, or the epoch's own):
//                    AU         = sum(compute[s..e]) / (epoch wall - sum(proc[..s-1]) - sum(proc[e+1..]))
//                    throughput = (len(compute) - 2) / that same time x batch_size  (DLIO's "- 2")
//   loop_figures   consumers over some epochs: the waits of every step (and of every step but an
//                  epoch's first: the wait once producers keep up), the step's mean, the steps
//                  and wall time of the slowest consumer, and its AU: the share of that wall time
//                  spent in steps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pipeprof/harness/training_loop.h"

namespace pipeprof::harness {

struct WaitStats {
  double mean_ms = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
};
// Quantiles by nearest rank.
WaitStats wait_stats(std::vector<int64_t> waits_ns);

struct AuWindow {
  int64_t exclude_start = 0;  // steps left out at an epoch's start (their proc time too)
  int64_t exclude_end = 0;    // and at its end, counted back from `steps`
  int64_t steps = 0;          // the epoch's planned steps; 0: the steps it ran
};

struct EpochMetrics {
  double au = 0;          // a fraction
  double throughput = 0;  // samples/s
  bool measured = false;  // the epoch has the steps the formula needs
};

EpochMetrics epoch_metrics(const EpochRecord& epoch, const AuWindow& window, int64_t batch_size);

struct LoopFigures {
  WaitStats wait;                   // every step's load
  double steady_wait_mean_ms = 0;   // every step's but each epoch's first
  double step_mean_ms = 0;          // compute per step
  double barrier_mean_ms = 0;       // the wait at the barrier per step
  int64_t steps = 0;                // the most steps one consumer ran (over the epochs taken)
  int64_t samples = 0;              // every consumer's
  double wall_ms = 0;               // the slowest consumer's epochs, added up
  double au_percentage = 0;         // the slowest consumer's share of its wall time in steps
  bool complete = true;             // every epoch taken ran to its end
};

// Over `consumers`, every epoch (epoch_index empty) or only the epoch at that index of each.
LoopFigures loop_figures(const std::vector<ConsumerRecord>& consumers,
                         std::optional<size_t> epoch_index = std::nullopt);

}  // namespace pipeprof::harness
