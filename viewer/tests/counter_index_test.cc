#include "pipeprof/viewer/counter_index.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pipeprof::viewer {
namespace {

trace::Counter counter_of(std::vector<std::pair<int64_t, double>> points) {
  trace::Counter c;
  c.name = "c";
  c.points = std::move(points);
  return c;
}

TEST(CounterIndex, ValueAtHoldsTheLastPoint) {
  const CounterIndex index(counter_of({{10, 1.0}, {20, 5.0}, {30, 2.0}}));
  EXPECT_TRUE(std::isnan(index.value_at(5)));
  EXPECT_EQ(index.value_at(10), 1.0);
  EXPECT_EQ(index.value_at(25), 5.0);
  EXPECT_EQ(index.value_at(1000), 2.0);
  EXPECT_EQ(index.min_value(), 1.0);
  EXPECT_EQ(index.max_value(), 5.0);
}

TEST(CounterIndex, RangeMaxMatchesAScan) {
  std::vector<std::pair<int64_t, double>> points;
  for (int i = 0; i < 1000; ++i)
    points.emplace_back(i, static_cast<double>((i * 7919) % 1009));
  const CounterIndex index(counter_of(points));
  for (size_t a = 0; a < 1000; a += 37) {
    for (size_t b = a + 1; b <= 1000; b += 53) {
      double expected = -1.0;
      for (size_t i = a; i < b; ++i)
        expected = std::max(expected, points[i].second);
      EXPECT_EQ(index.range_max(a, b), expected) << a << ".." << b;
    }
  }
  EXPECT_TRUE(std::isnan(index.range_max(5, 5)));
}

TEST(CounterIndex, StepsFollowTheValuesAndMergeEqualColumns) {
  // 1 ns per pixel: value 1 from x=10, 5 from x=20, 2 from x=30 to the right edge (100).
  const CounterIndex index(counter_of({{10, 1.0}, {20, 5.0}, {30, 2.0}}));
  const auto steps = index.steps({0.0, 1.0, 100.0});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].x0, 10.0);
  EXPECT_EQ(steps[0].x1, 20.0);
  EXPECT_EQ(steps[0].value, 1.0);
  EXPECT_EQ(steps[1].value, 5.0);
  EXPECT_EQ(steps[2].x0, 30.0);
  EXPECT_EQ(steps[2].x1, 100.0);
  EXPECT_EQ(steps[2].value, 2.0);
}

TEST(CounterIndex, ManyPointsPerPixelShowTheirMaximum) {
  std::vector<std::pair<int64_t, double>> points;
  for (int i = 0; i < 100000; ++i)
    points.emplace_back(i, i == 55555 ? 100.0 : 1.0);
  const CounterIndex index(counter_of(points));
  const auto steps = index.steps({0.0, 1000.0, 100.0});  // 1000 points per pixel
  double peak = 0.0;
  double peak_x = -1.0;
  for (const CounterStep& s : steps) {
    if (s.value > peak) {
      peak = s.value;
      peak_x = s.x0;
    }
  }
  EXPECT_EQ(peak, 100.0);
  EXPECT_EQ(peak_x, 55.0);
  EXPECT_LE(steps.size(), 100u);
}

TEST(FlowIndex, FindsFlowsOverlappingTheWindow) {
  std::vector<trace::Flow> flows(3);
  flows[0].from_ns = 0;
  flows[0].to_ns = 10;
  flows[1].from_ns = 50;  // backwards arrows count by their extent
  flows[1].to_ns = 5;
  flows[2].from_ns = 100;
  flows[2].to_ns = 120;
  const FlowIndex index(flows);
  auto v = index.visible(20, 40, 100);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], 1u);
  v = index.visible(0, 200, 100);
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(index.visible(0, 200, 2).size(), 2u);
  EXPECT_TRUE(index.visible(130, 200, 100).empty());
}

}  // namespace
}  // namespace pipeprof::viewer
