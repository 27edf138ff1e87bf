// One timeline from the traces of several ranks (processes, possibly on several hosts):
//
//   std::vector<trace::RankTrace> parts = ...;  // each rank's trace and its clock offsets
//   trace::Trace merged = trace::merge_ranks(std::move(parts));
//
// Every rank becomes one process of the merged trace, named "rank 3 @ host" (a rank's further
// processes, e.g. multi-process producers, "rank 3 @ host: <name>"), sorted by rank. Timestamps
// are moved onto rank 0's clock by the rank's offsets: with two measures (start and end of the
// run) the offset is interpolated between them, which corrects a drift between the clocks; with
// one it is constant. The metadata says so: "ranks", "clock_error_ns" (the largest error of any
// offset: half the fastest ping-pong round trip) and "clock_offsets" (JSON, per rank).
//
// barrier_straggler() reads such a trace: the rank whose spans named "barrier" add up to the least
// wait is the one the others wait for.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

struct ClockOffset {
  int64_t at_ns = 0;      // when, on the rank's own clock
  int64_t offset_ns = 0;  // add to the rank's timestamps
  int64_t error_ns = 0;
};

struct RankTrace {
  int rank = 0;
  std::string host;
  Trace trace;
  std::vector<ClockOffset> offsets;  // none: the same clock as rank 0
};

Trace merge_ranks(std::vector<RankTrace> ranks);

// The offset at `t_ns` (the rank's clock): linear between the first and last measure, constant
// outside them.
int64_t offset_at(const std::vector<ClockOffset>& offsets, int64_t t_ns);

struct RankBarrierWait {
  int rank = 0;
  std::string process;  // "rank 3 @ host"
  int64_t barriers = 0;
  double wait_ms = 0;   // the sum of its barrier spans
  double mean_wait_ms = 0;
};

struct Straggler {
  std::vector<RankBarrierWait> ranks;  // by rank
  int rank = -1;                       // the straggler
  // How much longer the straggler's steps take: the other ranks' mean wait per barrier minus its.
  double behind_ms_per_barrier = 0;
  std::string text;  // one line for people
};

// Reads a merged trace (processes named "rank N @ ..."); nothing when it has fewer than two ranks
// with barrier spans.
std::optional<Straggler> barrier_straggler(const Trace& merged);
nlohmann::json to_json(const Straggler& s);

}  // namespace pipeprof::trace
