#include "pipeprof/viewer/timeline_layout.h"

#include <gtest/gtest.h>

#include "test_traces.h"

namespace pipeprof::viewer {
namespace {

using testing::add_span;

// Process 1: thread 1 (two levels), thread 2 (one level), a counter; process 0 (GPU): a stream.
std::unique_ptr<Document> sample() {
  trace::Trace t;
  const uint32_t t1 = t.thread_lane(1, 1);
  const uint32_t t2 = t.thread_lane(1, 2);
  const uint32_t gpu = t.gpu_lane(2, 0, 7);
  add_span(t, t1, 0, 1000, "step");
  add_span(t, t1, 100, 200, "get_next");
  add_span(t, t2, 50, 100, "map");
  add_span(t, gpu, 500, 300, "kernel");
  trace::Counter c;
  c.process = t.process(1);
  c.name = "buffer";
  c.points = {{0, 1.0}, {600, 3.0}};
  t.counters.push_back(c);
  t.finalize();
  return make_document(std::move(t), "sample");
}

TEST(TimelineLayout, RowsPerProcessLaneAndCounterWithHeights) {
  const auto doc = sample();
  const LayoutOptions options;
  const TimelineLayout layout({doc.get()}, options);
  const auto& rows = layout.rows();
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].kind, RowKind::kProcessHeader);
  EXPECT_EQ(rows[1].kind, RowKind::kThreadLane);
  EXPECT_EQ(rows[2].kind, RowKind::kThreadLane);
  EXPECT_EQ(rows[3].kind, RowKind::kCounter);
  EXPECT_EQ(rows[4].kind, RowKind::kProcessHeader);
  EXPECT_EQ(rows[5].kind, RowKind::kGpuLane);
  const LayoutMetrics& m = options.metrics;
  EXPECT_FLOAT_EQ(rows[1].height, 2 * m.span_height + 2 * m.lane_padding);
  EXPECT_FLOAT_EQ(rows[2].height, m.span_height + 2 * m.lane_padding);
  EXPECT_FLOAT_EQ(rows[3].height, m.counter_height);
  for (size_t i = 1; i < rows.size(); ++i)
    EXPECT_FLOAT_EQ(rows[i].y, rows[i - 1].y + rows[i - 1].height);
  EXPECT_FLOAT_EQ(layout.height(), rows.back().y + rows.back().height);
  EXPECT_EQ(layout.lane_row(0, rows[5].index), 5u);
}

TEST(TimelineLayout, RowAtAndRowsBetween) {
  const auto doc = sample();
  const TimelineLayout layout({doc.get()}, LayoutOptions{});
  const auto& rows = layout.rows();
  EXPECT_EQ(layout.row_at(0.0f), 0u);
  EXPECT_EQ(layout.row_at(rows[2].y + 1.0f), 2u);
  EXPECT_EQ(layout.row_at(rows[2].y + rows[2].height - 0.01f), 2u);
  EXPECT_FALSE(layout.row_at(-1.0f).has_value());
  EXPECT_FALSE(layout.row_at(layout.height()).has_value());
  EXPECT_EQ(layout.rows_between(rows[1].y + 1.0f, rows[3].y + 1.0f),
            std::make_pair(size_t{1}, size_t{4}));
  EXPECT_EQ(layout.rows_between(-100.0f, 1e6f), std::make_pair(size_t{0}, rows.size()));
}

TEST(TimelineLayout, CollapsedProcessesShowOnlyTheirHeader) {
  const auto doc = sample();
  LayoutOptions options;
  options.collapsed.insert({0, 0});
  const TimelineLayout layout({doc.get()}, options);
  ASSERT_EQ(layout.rows().size(), 3u);
  EXPECT_EQ(layout.rows()[1].kind, RowKind::kProcessHeader);
  EXPECT_FALSE(layout.lane_row(0, 0).has_value());
}

TEST(TimelineLayout, StackedDocumentsGetHeaders) {
  const auto a = sample();
  const auto b = sample();
  LayoutOptions options;
  options.document_headers = true;
  const TimelineLayout layout({a.get(), b.get()}, options);
  ASSERT_EQ(layout.rows().size(), 14u);
  EXPECT_EQ(layout.rows()[0].kind, RowKind::kDocumentHeader);
  EXPECT_EQ(layout.rows()[7].kind, RowKind::kDocumentHeader);
  EXPECT_EQ(layout.rows()[7].doc, 1u);
  EXPECT_EQ(layout.rows()[8].doc, 1u);
}

TEST(TimelineLayout, HitTestFindsTheSpanUnderThePoint) {
  const auto doc = sample();
  const std::vector<const Document*> docs = {doc.get()};
  const TimelineLayout layout(docs, LayoutOptions{});
  TimeView view;
  view.set_width(1000);
  view.set_limits(0, doc->duration_ns());
  view.show(0, 1000);  // 1 ns per pixel, relative to the trace start (0)
  const Row& lane = layout.rows()[1];
  // Depth 1 of thread 1 holds get_next at [100, 300).
  const float y1 = layout.depth_top(lane, 1) + 2.0f;
  auto hit = hit_test(layout, docs, view, 150.0, y1);
  ASSERT_TRUE(hit && hit->item);
  EXPECT_EQ(hit->row, 1u);
  EXPECT_EQ(hit->depth, 1u);
  EXPECT_EQ(doc->trace.name(doc->trace.lanes[lane.index].spans[hit->item->span]), "get_next");
  // Depth 0 at the same x: step.
  hit = hit_test(layout, docs, view, 150.0, layout.depth_top(lane, 0) + 2.0f);
  ASSERT_TRUE(hit && hit->item);
  EXPECT_EQ(doc->trace.name(doc->trace.lanes[lane.index].spans[hit->item->span]), "step");
  // Depth 1 outside get_next: a row and a depth but no item.
  hit = hit_test(layout, docs, view, 500.0, y1);
  ASSERT_TRUE(hit);
  EXPECT_FALSE(hit->item.has_value());
  // A header row has no depth; below the last row nothing.
  hit = hit_test(layout, docs, view, 150.0, 1.0f);
  ASSERT_TRUE(hit);
  EXPECT_FALSE(hit->depth.has_value());
  EXPECT_FALSE(hit_test(layout, docs, view, 150.0, layout.height() + 5.0f).has_value());
  // Zoomed and panned: the mapping follows the view.
  view.show(250, 350);  // 0.1 ns per pixel: get_next's end is at x = 500
  hit = hit_test(layout, docs, view, 490.0, y1);
  ASSERT_TRUE(hit && hit->item);
  hit = hit_test(layout, docs, view, 510.0, y1);
  EXPECT_FALSE(hit->item.has_value());
}

}  // namespace
}  // namespace pipeprof::viewer
