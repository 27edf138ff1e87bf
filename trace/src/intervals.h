// Interval arithmetic on [start, end) nanosecond ranges, used by the analysis.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace pipeprof::trace {

using Interval = std::pair<int64_t, int64_t>;  // [first, second)

// Sorts and merges overlapping or touching intervals; empty ones are dropped.
inline std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());  // a lane's often are
  size_t n = 0;  // merged in place: v[0, n)
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (n > 0 && i.first <= v[n - 1].second) {
      v[n - 1].second = std::max(v[n - 1].second, i.second);
    } else {
      v[n++] = i;
    }
  }
  v.resize(n);
  return v;
}

inline int64_t total_length(const std::vector<Interval>& merged) {
  int64_t n = 0;
  for (const Interval& i : merged)
    n += i.second - i.first;
  return n;
}

// Length of [a, b) inside a merged (sorted, disjoint) interval list.
inline int64_t overlap_with(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  if (b <= a) return 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), a,
                             [](const Interval& i, int64_t t) { return i.second <= t; });
  int64_t n = 0;
  for (; it != merged.end() && it->first < b; ++it)
    n += std::min(b, it->second) - std::max(a, it->first);
  return n;
}

inline int64_t clipped_length(int64_t a, int64_t b, int64_t lo, int64_t hi) {
  return std::max<int64_t>(0, std::min(b, hi) - std::max(a, lo));
}

}  // namespace pipeprof::trace
