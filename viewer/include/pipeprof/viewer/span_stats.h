// Statistics of span durations for the statistics window: of one name, of the names matching the
// search, of the spans inside a selected time range, or any combination.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/trace/trace.h"
#include "pipeprof/viewer/name_filter.h"

namespace pipeprof::viewer {

struct Histogram {
  double lo_ns = 0.0;  // left edge of the first bin
  double hi_ns = 0.0;  // right edge of the last bin
  std::vector<float> counts;
  double bin_width() const {
    return counts.empty() ? 0.0 : (hi_ns - lo_ns) / static_cast<double>(counts.size());
  }
};

struct SpanStats {
  size_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double mean_ns = 0.0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p99_ns = 0;
  Histogram histogram;
};

// Nearest-rank percentile (p in [0, 100]) of sorted values: the smallest value with at least p% of
// the values at or below it. 0 for no values.
int64_t percentile(const std::vector<int64_t>& sorted, double p);

// Linear bins from the smallest to the largest value (one bin when they are all equal).
Histogram make_histogram(const std::vector<int64_t>& sorted, size_t bins);

// Statistics of `durations` (any order; sorted in place is not needed: a copy is sorted).
SpanStats compute_stats(std::vector<int64_t> durations, size_t bins = 40);

// Which spans to take: all of them, of one name, of names matching a filter, inside a range.
struct SpanQuery {
  std::optional<trace::StrId> name;    // exact name
  const NameFilter* filter = nullptr;  // prepared on the trace's strings; inactive: all names
  std::optional<std::pair<int64_t, int64_t>> range;  // absolute ns: spans wholly inside [a, b]
};

std::vector<int64_t> collect_durations(const trace::Trace& trace, const SpanQuery& query);

// Count and total time per name, largest total first (the statistics window's table).
struct NameTotal {
  trace::StrId name = trace::kNoStr;
  size_t count = 0;
  int64_t total_ns = 0;
};
std::vector<NameTotal> totals_by_name(const trace::Trace& trace, const SpanQuery& query);

}  // namespace pipeprof::viewer
