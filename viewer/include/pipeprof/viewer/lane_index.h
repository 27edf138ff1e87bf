// Level of detail for one lane. Spans are split by nesting depth; at each depth a binary search
// finds the visible ones and runs of spans narrower than a few pixels fold into one block with a
// count (as Tracy does), so the work per frame grows with the pixels on screen, not with the
// number of spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::viewer {

// One thing to draw at one depth: a span (count == 1) or a folded run of `count` spans whose first
// is `span`. Times are the trace's absolute nanoseconds.
struct DrawItem {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t span = 0;   // index into trace::Lane::spans of the (first) span
  uint32_t count = 0;  // 1: a single span; more: a folded run
  bool folded() const { return count > 1; }
};

// The visible window in a lane's own time: the absolute time at pixel 0, nanoseconds per pixel and
// the width in pixels.
struct PixelWindow {
  double t0_ns = 0.0;
  double ns_per_px = 1.0;
  double width_px = 1.0;
  double t1_ns() const { return t0_ns + ns_per_px * width_px; }
  double to_px(double t_ns) const { return (t_ns - t0_ns) / ns_per_px; }
};

class LaneIndex {
 public:
  // Spans narrower than this many pixels are folded with their narrow neighbours.
  static constexpr double kMinSpanPx = 3.0;

  LaneIndex() = default;
  // `lane` must be finalized (sorted spans with depths); the index copies what it needs.
  explicit LaneIndex(const trace::Lane& lane);

  size_t depth_count() const { return levels_.size(); }
  size_t span_count(size_t depth) const { return levels_[depth].start.size(); }

  // Positions [first, last) in depth `depth`'s order of the spans that overlap [t0_ns, t1_ns).
  std::pair<size_t, size_t> visible(size_t depth, int64_t t0_ns, int64_t t1_ns) const;

  // What to draw at `depth` in `window`, in time order.
  std::vector<DrawItem> items(size_t depth, const PixelWindow& window,
                              double min_px = kMinSpanPx) const;

  // The item drawn under pixel `x_px` at `depth` (items are at least one pixel wide), if any.
  std::optional<DrawItem> item_at(size_t depth, const PixelWindow& window, double x_px,
                                  double min_px = kMinSpanPx) const;

 private:
  // Spans of one depth in time order; `max_end` is the running maximum of the ends, so a binary
  // search finds the first span that reaches a time even if spans of one depth overlap.
  struct Level {
    std::vector<int64_t> start;
    std::vector<int64_t> end;
    std::vector<int64_t> max_end;
    std::vector<uint32_t> span;
  };
  std::vector<Level> levels_;
};

}  // namespace pipeprof::viewer
