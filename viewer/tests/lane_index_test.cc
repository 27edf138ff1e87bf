#include "pipeprof/viewer/lane_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "pipeprof/viewer/synthetic_trace.h"
#include "test_traces.h"

namespace pipeprof::viewer {
namespace {

using testing::add_span;
using testing::one_lane;

TEST(LaneIndex, SplitsSpansByDepth) {
  trace::Trace t;
  const uint32_t lane = t.thread_lane(1, 1);
  add_span(t, lane, 0, 100, "outer");
  add_span(t, lane, 10, 20, "inner");
  add_span(t, lane, 40, 20, "inner");
  add_span(t, lane, 45, 5, "innermost");
  add_span(t, lane, 200, 50, "outer");
  t.finalize();
  const LaneIndex index(t.lanes[lane]);
  ASSERT_EQ(index.depth_count(), 3u);
  EXPECT_EQ(index.span_count(0), 2u);
  EXPECT_EQ(index.span_count(1), 2u);
  EXPECT_EQ(index.span_count(2), 1u);
}

TEST(LaneIndex, VisibleRangeIsFoundByBinarySearch) {
  const auto t = one_lane({{0, 10}, {20, 10}, {40, 10}, {60, 10}});
  const LaneIndex index(t.lanes[0]);
  EXPECT_EQ(index.visible(0, 25, 45), std::make_pair(size_t{1}, size_t{3}));
  EXPECT_EQ(index.visible(0, 10, 20), std::make_pair(size_t{1}, size_t{1}));  // touching only
  EXPECT_EQ(index.visible(0, -100, 1000), std::make_pair(size_t{0}, size_t{4}));
  EXPECT_EQ(index.visible(0, 500, 1000), std::make_pair(size_t{4}, size_t{4}));
  EXPECT_EQ(index.visible(7, 0, 100), std::make_pair(size_t{0}, size_t{0}));  // no such depth
}

TEST(LaneIndex, WideSpansAreDrawnOneByOne) {
  const auto t = one_lane({{0, 100}, {200, 100}, {400, 100}});
  const LaneIndex index(t.lanes[0]);
  const auto items = index.items(0, {0.0, 1.0, 1000.0});  // 1 ns per pixel
  ASSERT_EQ(items.size(), 3u);
  for (const DrawItem& item : items) {
    EXPECT_EQ(item.count, 1u);
    EXPECT_FALSE(item.folded());
  }
  EXPECT_EQ(items[1].span, 1u);
  EXPECT_EQ(items[1].start_ns, 200);
  EXPECT_EQ(items[1].end_ns, 300);
}

TEST(LaneIndex, NarrowNeighboursFoldIntoOneBlockWithACount) {
  // Ten 1 ns spans 1 ns apart, then a gap, then a wide span; at 1 ns per pixel the ten fold.
  trace::Trace t;
  const uint32_t lane = t.thread_lane(1, 1);
  for (int i = 0; i < 10; ++i)
    add_span(t, lane, i * 2, 1, "tiny");
  add_span(t, lane, 100, 50, "wide");
  t.finalize();
  const LaneIndex index(t.lanes[0]);
  const auto items = index.items(0, {0.0, 1.0, 400.0});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].folded());
  EXPECT_EQ(items[0].count, 10u);
  EXPECT_EQ(items[0].start_ns, 0);
  EXPECT_EQ(items[0].end_ns, 19);
  EXPECT_EQ(items[1].count, 1u);
  EXPECT_EQ(items[1].start_ns, 100);
  // Zoomed in 10x the same spans are 10 px wide: no folding.
  EXPECT_EQ(index.items(0, {0.0, 0.1, 4000.0}).size(), 11u);
}

TEST(LaneIndex, AGapWiderThanTheThresholdSplitsFolds) {
  const auto t = one_lane({{0, 1}, {2, 1}, {20, 1}, {22, 1}});
  const LaneIndex index(t.lanes[0]);
  const auto items = index.items(0, {0.0, 1.0, 100.0});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].count, 2u);
  EXPECT_EQ(items[1].count, 2u);
  EXPECT_EQ(items[1].span, 2u);
  // An isolated narrow span stays a single span (drawn at least a pixel wide).
  const auto lone = one_lane({{0, 1}, {50, 1}});
  const auto items2 = LaneIndex(lone.lanes[0]).items(0, {0.0, 1.0, 100.0});
  ASSERT_EQ(items2.size(), 2u);
  EXPECT_EQ(items2[0].count, 1u);
}

TEST(LaneIndex, EverySpanIsCountedExactlyOnce) {
  const trace::Trace t = make_synthetic_trace(20000, 7);
  for (const trace::Lane& lane : t.lanes) {
    const LaneIndex index(lane);
    for (size_t d = 0; d < index.depth_count(); ++d) {
      for (const double npp : {0.5, 50.0, 5000.0, 1e6}) {
        const double t0 = static_cast<double>(t.start_ns());
        const PixelWindow w{t0 - 1000.0, npp, 1e12 / npp};  // everything in view
        const auto items = index.items(d, w);
        const size_t counted =
            std::accumulate(items.begin(), items.end(), size_t{0},
                            [](size_t n, const DrawItem& item) { return n + item.count; });
        EXPECT_EQ(counted, index.span_count(d)) << "depth " << d << " ns/px " << npp;
        EXPECT_TRUE(std::is_sorted(items.begin(), items.end(), [](const auto& a, const auto& b) {
          return a.start_ns < b.start_ns;
        }));
        for (const DrawItem& item : items) {
          EXPECT_GE(item.end_ns, item.start_ns);
        }
      }
    }
  }
}

TEST(LaneIndex, ItemsPerFrameAreBoundedByPixelsNotSpans) {
  const trace::Trace t = make_synthetic_trace(400000, 3);
  LaneIndex index;
  for (const trace::Lane& lane : t.lanes) {  // the lane with the most outermost spans
    LaneIndex candidate(lane);
    if (candidate.depth_count() > 0 &&
        (index.depth_count() == 0 || candidate.span_count(0) > index.span_count(0)))
      index = std::move(candidate);
  }
  const double width = 1600.0;
  const double npp = static_cast<double>(t.end_ns() - t.start_ns()) / width;
  const auto items = index.items(0, {static_cast<double>(t.start_ns()), npp, width});
  EXPECT_GT(index.span_count(0), 40000u);
  EXPECT_LE(items.size(), static_cast<size_t>(width));  // at most one item per pixel or so
}

TEST(LaneIndex, ItemAtFindsTheSpanOrFoldUnderThePixel) {
  trace::Trace t;
  const uint32_t lane = t.thread_lane(1, 1);
  add_span(t, lane, 100, 100, "a");
  for (int i = 0; i < 5; ++i)
    add_span(t, lane, 300 + i * 2, 1, "tiny");
  t.finalize();
  const LaneIndex index(t.lanes[lane]);
  const PixelWindow w{0.0, 1.0, 1000.0};
  const auto a = index.item_at(0, w, 150.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->count, 1u);
  EXPECT_EQ(t.name(t.lanes[lane].spans[a->span]), "a");
  const auto fold = index.item_at(0, w, 305.0);
  ASSERT_TRUE(fold.has_value());
  EXPECT_EQ(fold->count, 5u);
  EXPECT_FALSE(index.item_at(0, w, 250.0).has_value());
  EXPECT_FALSE(index.item_at(0, w, 199.9 + 1.0).has_value());
  EXPECT_FALSE(index.item_at(3, w, 150.0).has_value());
}

TEST(LaneIndex, OverlappingSpansOfOneDepthStayVisible) {
  // Finalize never puts overlapping spans on one depth, but a lane built by hand may: [0, 100),
  // [50, 300) and [120, 130) all at depth 0. The running maximum of ends keeps [50, 300) visible
  // when the view starts at 200, and [120, 130) (ended before 200) is not drawn.
  trace::Lane lane;
  for (const auto& [start, dur] : {std::pair<int64_t, int64_t>{0, 100}, {50, 250}, {120, 10}}) {
    trace::Span s;
    s.start_ns = start;
    s.dur_ns = dur;
    lane.spans.push_back(s);
  }
  const LaneIndex index(lane);
  ASSERT_EQ(index.depth_count(), 1u);
  const auto items = index.items(0, {200.0, 1.0, 100.0});
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].span, 1u);
  EXPECT_TRUE(index.item_at(0, {200.0, 1.0, 100.0}, 10.0).has_value());
}

}  // namespace
}  // namespace pipeprof::viewer
