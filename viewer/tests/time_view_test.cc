#include "pipeprof/viewer/time_view.h"

#include <gtest/gtest.h>

namespace pipeprof::viewer {
namespace {

TimeView view_of(double lo, double hi, double width) {
  TimeView v;
  v.set_width(width);
  v.set_limits(lo, hi);
  return v;
}

TEST(TimeView, ShowMapsTheRangeOntoTheWidth) {
  TimeView v = view_of(0, 1e6, 1000);
  v.show(1000, 11000);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), 10.0);
  EXPECT_DOUBLE_EQ(v.to_px(1000), 0.0);
  EXPECT_DOUBLE_EQ(v.to_px(11000), 1000.0);
  EXPECT_DOUBLE_EQ(v.to_time(500), 6000.0);
  EXPECT_DOUBLE_EQ(v.end(), 11000.0);
}

TEST(TimeView, ZoomKeepsTheTimeUnderTheCursor) {
  TimeView v = view_of(0, 1e6, 1000);
  v.show(0, 100000);
  const double before = v.to_time(250);
  v.zoom_at(250, 2.0);
  EXPECT_NEAR(v.to_time(250), before, 1e-6);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), 50.0);
  v.zoom_at(250, 0.5);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), 100.0);
  EXPECT_NEAR(v.to_time(250), before, 1e-6);
}

TEST(TimeView, ZoomIsBounded) {
  TimeView v = view_of(0, 1e6, 1000);
  v.fit();
  for (int i = 0; i < 200; ++i)
    v.zoom_at(500, 10.0);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), TimeView::kMinNsPerPx);
  for (int i = 0; i < 200; ++i)
    v.zoom_at(500, 0.1);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), 4.0 * 1e6 / 1000);
  v.zoom_at(500, 0.0);  // ignored
  v.zoom_at(500, -1.0);
  EXPECT_DOUBLE_EQ(v.ns_per_px(), 4.0 * 1e6 / 1000);
}

TEST(TimeView, PanMovesContentWithTheMouseAndStopsAtTheMiddle) {
  TimeView v = view_of(0, 1e6, 1000);
  v.show(400000, 500000);  // 100 ns per px
  v.pan_px(100);           // drag right: earlier times
  EXPECT_DOUBLE_EQ(v.start(), 390000.0);
  v.pan_px(-200);
  EXPECT_DOUBLE_EQ(v.start(), 410000.0);
  v.pan_px(1e9);
  EXPECT_DOUBLE_EQ(v.to_time(500), 0.0);  // the start of the data sits in the middle
  v.pan_px(-1e9);
  EXPECT_DOUBLE_EQ(v.to_time(500), 1e6);
}

TEST(TimeView, FitShowsEverythingWithAMargin) {
  TimeView v = view_of(5000, 15000, 500);
  v.fit();
  EXPECT_LT(v.start(), 5000.0);
  EXPECT_GT(v.end(), 15000.0);
  EXPECT_LT(v.end() - v.start(), 10000.0 * 1.1);
  v.set_width(1000);  // a wider window keeps the scale
  EXPECT_GT(v.end(), 20000.0);
}

TEST(TimeView, TickStepIsOneTwoFive) {
  EXPECT_DOUBLE_EQ(tick_step(1.0, 80), 100.0);
  EXPECT_DOUBLE_EQ(tick_step(1.5, 80), 200.0);
  EXPECT_DOUBLE_EQ(tick_step(5.0, 80), 500.0);
  EXPECT_DOUBLE_EQ(tick_step(13.0, 80), 2000.0);
  TimeView v = view_of(0, 1e6, 1000);
  v.show(0, 1e6);
  const auto ticks = tick_times(v, 100);
  ASSERT_FALSE(ticks.empty());
  EXPECT_DOUBLE_EQ(ticks[1] - ticks[0], 100000.0);
  EXPECT_GE(ticks.front(), v.start());
  EXPECT_LE(ticks.back(), v.end());
}

TEST(TimeView, FormatsDurationsAndTicks) {
  EXPECT_EQ(format_duration(850), "850 ns");
  EXPECT_EQ(format_duration(12500), "12.50 us");
  EXPECT_EQ(format_duration(3204000), "3.204 ms");
  EXPECT_EQ(format_duration(1.5e9), "1.500 s");
  EXPECT_EQ(format_duration(250e6), "250.0 ms");
  EXPECT_EQ(format_tick(2e6, 1e6), "2 ms");
  EXPECT_EQ(format_tick(2.5e6, 5e5), "2.5 ms");
  EXPECT_EQ(format_tick(1200, 200), "1.2 us");
  EXPECT_EQ(format_tick(-1e-9, 1e6), "0 ms");
}

}  // namespace
}  // namespace pipeprof::viewer
