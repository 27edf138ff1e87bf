// Interval arithmetic on [start, end) nanosecond ranges, used by the analysis.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "pipeprof/trace/huge_pages.h"

namespace pipeprof::trace {

using Interval = std::pair<int64_t, int64_t>;  // [first, second)
using Intervals = HugePageVector<Interval>;     // a trace-sized set: huge pages

// Sorts intervals gathered lane by lane, which come as a few sorted runs one after another (a
// lane's spans are in order), by merging the runs pairwise; many runs: std::sort.
inline void sort_runs(Intervals& v) {
  constexpr size_t kMostRuns = 64;
  std::vector<size_t> bounds{0};  // where each run begins, then the end
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) {
      bounds.push_back(i);
      if (bounds.size() > kMostRuns) {
        std::sort(v.begin(), v.end());
        return;
      }
    }
  }
  bounds.push_back(v.size());
  if (bounds.size() <= 2) return;
  // Each round merges pairs of runs from v into `other` and swaps the two: one buffer (on huge
  // pages from 2 MiB) for every round, where std::inplace_merge took a fresh one for every pair
  // (each page of it a first-touch fault).
  Intervals other(v.size());
  while (bounds.size() > 2) {
    const size_t runs = bounds.size() - 1;
    std::vector<size_t> merged{0};
    const auto at = [](Intervals& x, size_t i) {
      return x.begin() + static_cast<std::ptrdiff_t>(i);
    };
    for (size_t k = 0; k + 2 <= runs; k += 2) {
      std::merge(at(v, bounds[k]), at(v, bounds[k + 1]), at(v, bounds[k + 1]), at(v, bounds[k + 2]),
                 at(other, bounds[k]));
      merged.push_back(bounds[k + 2]);
    }
    if (runs % 2 == 1) {  // the last run waits for the next round
      std::copy(at(v, bounds[runs - 1]), at(v, bounds[runs]), at(other, bounds[runs - 1]));
      merged.push_back(bounds[runs]);
    }
    v.swap(other);
    bounds = std::move(merged);
  }
}

// Sorts and merges overlapping or touching intervals; empty ones are dropped.
inline Intervals merge_intervals(Intervals v) {
  sort_runs(v);
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

inline int64_t total_length(const Intervals& merged) {
  int64_t n = 0;
  for (const Interval& i : merged)
    n += i.second - i.first;
  return n;
}

// Length of [a, b) inside a merged (sorted, disjoint) interval list.
inline int64_t overlap_with(const Intervals& merged, int64_t a, int64_t b) {
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

// std::lower_bound(v, key, before) as an index, searched onwards from the last answer `hint` where
// the answer lies there (then updated to the answer): keys that come in about ascending order
// (flows by time) are found a few elements on by a gallop instead of a search of all of `v`.
template <typename Vector, typename Key, typename Before>
size_t lower_bound_from(const Vector& v, const Key& key, size_t& hint, Before before) {
  const size_t n = v.size();
  const auto at = [&](size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
  size_t lo = std::min(hint, n);
  if (lo > 0 && !before(v[lo - 1], key)) {  // the answer lies before the hint
    hint = static_cast<size_t>(std::lower_bound(v.begin(), at(lo), key, before) - v.begin());
    return hint;
  }
  size_t step = 1;
  while (lo < n && before(v[lo], key)) {  // the answer lies after lo ...
    const size_t next = n - lo > step ? lo + step : n;
    if (next == n || !before(v[next], key)) {  // ... and at most at next
      lo = static_cast<size_t>(std::lower_bound(at(lo + 1), at(next), key, before) - v.begin());
      break;
    }
    lo = next;
    step *= 2;
  }
  hint = lo;
  return lo;
}

}  // namespace pipeprof::trace
