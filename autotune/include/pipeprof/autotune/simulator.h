// The ideal-time simulator: a discrete-event model of a pipeline spec with known latencies
// (artificial open/read, sleep_ms and busy_ms maps, generator delays, the step) and zero framework
// overhead. It follows the same rules as the real operations (who pulls when, buffer and
// parallelism bounds, interleave's cycle order), so `ideal / measured` is the efficiency of the
// implementation alone.
//
// How it works: every iterator answers "you ask for your next element at time t: when is it
// ready?". Sequential stages add their latency to the request time. Asynchronous stages (prefetch,
// parallel map, parallel interleave's inputs) run a producer whose k-th pull starts when its
// previous pull finished, when there is room (the consumer took element k - capacity) and, for
// prefetch, not before the first request; all of these are known when element k is requested, so
// the producer's timeline can be computed lazily, in order, without a global event queue.
//
//   ideal: knobs (kAutotune) at their documented starting values, other values as written;
//   bound: knobs at their best (unbounded parallelism and buffers).
//
// Each operation's rule is part of its registration (pipelines/registry.h) and each registered
// function states its timing next to its definition (pipelines/functions.cc); this file runs them.
//
// Process sources (multiprocess, shared_store) are modelled as `producers` timelines, each running
// its nested pipeline, sharing a queue of `queue_capacity` slots, with the transport's costs at
// rates measured in the same run: memcpy, a socket's receive, and first writes into a fresh store
// (see pipelines/src/ops/process_source_sim.cc). CPU fills (random_tensors, fill_random) take
// their bytes at the fill rate measured in the same run.
//
// Unsupported: latencies that are not known in advance (a C++ callable), parallel
// interleave with fewer workers than cycle_length, non-deterministic parallel stages, and stages
// whose timing depends on values a shuffle has permuted. Those give `supported = false` and a
// reason, never a guess.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/pipelines/machine_rates.h"

namespace pipeprof::autotune {

struct SimOptions {
  double step_ms = 0;                // the consumer's step per element
  int64_t epochs = 1;                // a fresh iterator per epoch
  bool bound = false;                // knobs at their best instead of their starting values
  int64_t autotune_parallelism = 0;  // 0: pipelines::default_autotune_parallelism()
  // The machine's rates, measured in the same run (0: not measured): the copies of shared_store's
  // transport and its producers' first writes, the CPU fill of random_tensors / fill_random, and
  // multiprocess's socket receive.
  pipelines::sim::MeasuredRates rates;
};

struct SimResult {
  bool supported = false;
  std::string reason;       // why not, when unsupported
  double total_ms = 0;      // wall time of all epochs
  int64_t elements = 0;     // elements the consumer received
  double wait_mean_ms = 0;  // the consumer's mean wait per element (the ends' waits left out)
  // Unsupported only for want of a measured rate (SimOptions): measure it and simulate again.
  // needed_rate names the first missing one as SimOptions::rates' member ("memcpy_gb_per_s", ...);
  // others may be missing too.
  bool needs_rates = false;
  std::string needed_rate;
};

// `pipeline` is a spec document or pipeline object ({"stages": [...]}), already validated by
// pipelines::parse_spec.
SimResult simulate(const nlohmann::json& pipeline, const SimOptions& options);

}  // namespace pipeprof::autotune
