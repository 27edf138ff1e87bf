// Level of detail for a counter track: one value per pixel column (the largest the counter took in
// that column, or the value it held there), found with a binary search and a range-maximum tree,
// so a counter with millions of points costs O(width log n) per frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "pipeprof/trace/trace.h"
#include "pipeprof/viewer/lane_index.h"

namespace pipeprof::viewer {

// A horizontal run of the area graph: from x0 to x1 (pixels) the counter is at `value`.
struct CounterStep {
  double x0 = 0.0;
  double x1 = 0.0;
  double value = 0.0;
};

class CounterIndex {
 public:
  CounterIndex() = default;
  explicit CounterIndex(const trace::Counter& counter);

  size_t size() const { return ts_.size(); }
  double min_value() const { return min_; }
  double max_value() const { return max_; }
  // The value held at time t (the last point at or before t); nullopt-like NaN before the first.
  double value_at(int64_t t_ns) const;
  // Largest value among points [first, last) (NaN when empty).
  double range_max(size_t first, size_t last) const;

  // The steps to draw in `window`: consecutive columns with the same value are merged.
  std::vector<CounterStep> steps(const PixelWindow& window) const;

 private:
  std::vector<int64_t> ts_;
  std::vector<double> values_;
  std::vector<double> tree_;  // iterative segment tree of maxima: leaves at [n, 2n)
  double min_ = 0.0;
  double max_ = 0.0;
};

// Flows (arrows between lanes) ordered by their earlier end, with a running maximum of their later
// end so that the flows touching a time window are found by binary search.
class FlowIndex {
 public:
  FlowIndex() = default;
  explicit FlowIndex(std::span<const trace::Flow> flows);
  // Indexes into the trace's flows of those that overlap [t0_ns, t1_ns], at most `limit`.
  std::vector<uint32_t> visible(int64_t t0_ns, int64_t t1_ns, size_t limit) const;
  size_t size() const { return order_.size(); }

 private:
  std::vector<uint32_t> order_;
  std::vector<int64_t> lo_;
  std::vector<int64_t> hi_;
  std::vector<int64_t> max_hi_;
};

}  // namespace pipeprof::viewer
