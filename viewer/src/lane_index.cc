#include "pipeprof/viewer/lane_index.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipeprof::viewer {
namespace {

// Clamps a double time into int64 range (the view may extend far beyond the data when zoomed out).
int64_t to_ns(double t) {
  constexpr double kMax = 9.0e18;
  if (!(t > -kMax)) return -static_cast<int64_t>(kMax);
  if (!(t < kMax)) return static_cast<int64_t>(kMax);
  return static_cast<int64_t>(std::floor(t));
}

}  // namespace

LaneIndex::LaneIndex(const trace::Lane& lane) {
  uint32_t depths = 0;
  for (const trace::Span& s : lane.spans)
    depths = std::max(depths, s.depth + 1);
  levels_.resize(depths);
  std::vector<size_t> counts(depths, 0);
  for (const trace::Span& s : lane.spans)
    ++counts[s.depth];
  for (uint32_t d = 0; d < depths; ++d) {
    levels_[d].start.reserve(counts[d]);
    levels_[d].end.reserve(counts[d]);
    levels_[d].max_end.reserve(counts[d]);
    levels_[d].span.reserve(counts[d]);
  }
  for (size_t i = 0; i < lane.spans.size(); ++i) {
    const trace::Span& s = lane.spans[i];
    Level& level = levels_[s.depth];
    const int64_t end = s.end_ns();
    level.max_end.push_back(level.max_end.empty() ? end : std::max(level.max_end.back(), end));
    level.start.push_back(s.start_ns);
    level.end.push_back(end);
    level.span.push_back(static_cast<uint32_t>(i));
  }
  // Spans of one depth are in start order because the lane's spans are (Trace::finalize()); an
  // unfinalized lane is sorted here so that the binary searches stay valid.
  for (Level& level : levels_) {
    if (std::is_sorted(level.start.begin(), level.start.end())) continue;
    std::vector<size_t> order(level.start.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return level.start[a] < level.start[b]; });
    Level sorted;
    for (const size_t i : order) {
      sorted.start.push_back(level.start[i]);
      sorted.end.push_back(level.end[i]);
      sorted.span.push_back(level.span[i]);
      sorted.max_end.push_back(
          sorted.max_end.empty() ? level.end[i] : std::max(sorted.max_end.back(), level.end[i]));
    }
    level = std::move(sorted);
  }
}

std::pair<size_t, size_t> LaneIndex::visible(size_t depth, int64_t t0_ns, int64_t t1_ns) const {
  if (depth >= levels_.size()) return {0, 0};
  const Level& level = levels_[depth];
  // First span ending after t0 (a span ending exactly at t0 is not visible) ...
  const auto first = std::upper_bound(level.max_end.begin(), level.max_end.end(), t0_ns);
  // ... up to the first span starting at or after t1.
  const auto last = std::lower_bound(level.start.begin(), level.start.end(), t1_ns);
  const auto f = static_cast<size_t>(first - level.max_end.begin());
  const auto l = static_cast<size_t>(last - level.start.begin());
  return {f, std::max(f, l)};
}

std::vector<DrawItem> LaneIndex::items(size_t depth, const PixelWindow& window,
                                       double min_px) const {
  std::vector<DrawItem> out;
  if (depth >= levels_.size() || !(window.ns_per_px > 0.0)) return out;
  const Level& level = levels_[depth];
  const int64_t t0 = to_ns(window.t0_ns);
  const auto [first, last] = visible(depth, t0, to_ns(std::ceil(window.t1_ns())));
  const double min_ns = min_px * window.ns_per_px;
  const auto narrow = [&](size_t i) {
    return static_cast<double>(level.end[i] - level.start[i]) < min_ns;
  };
  size_t i = first;
  while (i < last) {
    if (!narrow(i)) {
      // Only spans of one depth that overlap (hand-built lanes) can end before the window here.
      if (level.end[i] > t0) out.push_back({level.start[i], level.end[i], level.span[i], 1});
      ++i;
      continue;
    }
    // A fold starts at a narrow span. It swallows every following span that ends less than
    // min_px after the fold's end (found by one binary search on the running maximum of ends),
    // then the next span too if that one is narrow and starts within min_px of the fold; each
    // round moves the fold's end at least min_px to the right, so a fold costs O(log n) per
    // min_px of screen.
    int64_t fold_end = level.end[i];
    size_t j = i + 1;
    while (j < last) {
      const auto target = to_ns(static_cast<double>(fold_end) + min_ns);
      const auto k = static_cast<size_t>(
          std::lower_bound(level.max_end.begin() + static_cast<std::ptrdiff_t>(j),
                           level.max_end.begin() + static_cast<std::ptrdiff_t>(last), target) -
          level.max_end.begin());
      if (k > j) fold_end = std::max(fold_end, level.max_end[k - 1]);
      j = k;
      if (j >= last) break;
      if (!narrow(j) || static_cast<double>(level.start[j] - fold_end) > min_ns) break;
      fold_end = std::max(fold_end, level.end[j]);
      ++j;
    }
    out.push_back({level.start[i], fold_end, level.span[i], static_cast<uint32_t>(j - i)});
    i = j;
  }
  return out;
}

std::optional<DrawItem> LaneIndex::item_at(size_t depth, const PixelWindow& window, double x_px,
                                           double min_px) const {
  const std::vector<DrawItem> all = items(depth, window, min_px);
  // Items are in start order and do not overlap on screen except where spans of one depth
  // overlap; take the last one starting at or before the cursor that covers it.
  auto it = std::upper_bound(all.begin(), all.end(), x_px, [&](double x, const DrawItem& item) {
    return x < std::floor(window.to_px(static_cast<double>(item.start_ns)));
  });
  while (it != all.begin()) {
    --it;
    const double x0 = std::floor(window.to_px(static_cast<double>(it->start_ns)));
    const double x1 = std::max(x0 + 1.0, window.to_px(static_cast<double>(it->end_ns)));
    if (x_px >= x0 && x_px < x1) return *it;
    if (x1 < x_px - 4.0 * min_px) break;  // earlier items end further left
  }
  return std::nullopt;
}

}  // namespace pipeprof::viewer
