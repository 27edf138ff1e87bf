#include "pipeprof/viewer/span_stats.h"

#include <gtest/gtest.h>

#include <numeric>

#include "test_traces.h"

namespace pipeprof::viewer {
namespace {

using testing::add_span;

TEST(SpanStats, PercentilesAreNearestRank) {
  std::vector<int64_t> v(100);
  std::iota(v.begin(), v.end(), 1);  // 1..100
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile(v, 0), 1);
  EXPECT_EQ(percentile({7}, 99), 7);
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({1, 2, 3, 4}, 50), 2);
  EXPECT_EQ(percentile({1, 2, 3, 4}, 51), 3);
}

TEST(SpanStats, ComputesCountTotalMeanAndPercentiles) {
  const SpanStats s = compute_stats({40, 10, 30, 20}, 4);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.total_ns, 100);
  EXPECT_DOUBLE_EQ(s.mean_ns, 25.0);
  EXPECT_EQ(s.min_ns, 10);
  EXPECT_EQ(s.max_ns, 40);
  EXPECT_EQ(s.p50_ns, 20);
  EXPECT_EQ(s.p99_ns, 40);
  ASSERT_EQ(s.histogram.counts.size(), 4u);
  EXPECT_EQ(s.histogram.lo_ns, 10.0);
  EXPECT_EQ(s.histogram.hi_ns, 40.0);
  EXPECT_FLOAT_EQ(std::accumulate(s.histogram.counts.begin(), s.histogram.counts.end(), 0.0f),
                  4.0f);
  EXPECT_EQ(s.histogram.counts.back(), 1.0f);  // the maximum falls in the last bin
  EXPECT_EQ(compute_stats({}).count, 0u);
}

TEST(SpanStats, EqualValuesMakeOneBin) {
  const Histogram h = make_histogram({5, 5, 5}, 10);
  ASSERT_EQ(h.counts.size(), 1u);
  EXPECT_EQ(h.counts[0], 3.0f);
  EXPECT_TRUE(make_histogram({}, 10).counts.empty());
}

TEST(SpanStats, QueriesByNameFilterAndRange) {
  trace::Trace t;
  const uint32_t a = t.thread_lane(1, 1);
  const uint32_t b = t.thread_lane(1, 2);
  add_span(t, a, 0, 10, "read");
  add_span(t, a, 20, 30, "decode");
  add_span(t, b, 5, 5, "read");
  add_span(t, b, 100, 50, "read");
  t.finalize();
  SpanQuery by_name;
  by_name.name = t.strings.find("read");
  auto d = collect_durations(t, by_name);
  std::sort(d.begin(), d.end());
  EXPECT_EQ(d, (std::vector<int64_t>{5, 10, 50}));

  NameFilter filter;
  filter.set_text("DEC");
  filter.prepare(t.strings);
  SpanQuery by_filter;
  by_filter.filter = &filter;
  EXPECT_EQ(collect_durations(t, by_filter), (std::vector<int64_t>{30}));

  SpanQuery in_range;
  in_range.range = std::make_pair(int64_t{0}, int64_t{60});  // wholly inside: not [100, 150)
  EXPECT_EQ(collect_durations(t, in_range).size(), 3u);
  in_range.name = t.strings.find("read");
  EXPECT_EQ(collect_durations(t, in_range).size(), 2u);

  const auto totals = totals_by_name(t, SpanQuery{});
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(t.strings.str(totals[0].name), "read");
  EXPECT_EQ(totals[0].count, 3u);
  EXPECT_EQ(totals[0].total_ns, 65);
  EXPECT_EQ(totals[1].total_ns, 30);
}

}  // namespace
}  // namespace pipeprof::viewer
