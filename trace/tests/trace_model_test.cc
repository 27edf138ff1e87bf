#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "intervals.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {
namespace {

Span span(Trace& t, int64_t start, int64_t dur, std::string_view name) {
  Span s;
  s.start_ns = start;
  s.dur_ns = dur;
  s.name = t.strings.intern(name);
  return s;
}

TEST(StringTable, InternsOnceAndFinds) {
  StringTable st;
  const StrId a = st.intern("alpha");
  const StrId b = st.intern(std::string_view("beta"));
  EXPECT_EQ(st.intern("alpha"), a);
  EXPECT_NE(a, b);
  EXPECT_EQ(st.str(b), "beta");
  EXPECT_EQ(st.find("beta"), b);
  EXPECT_EQ(st.find("gamma"), kNoStr);
  EXPECT_EQ(st.size(), 2u);
  EXPECT_EQ(st.intern(""), 2u);
}

TEST(TraceModel, LookupsFindOrAdd) {
  Trace t;
  const uint32_t l1 = t.thread_lane(10, 1);
  EXPECT_EQ(t.thread_lane(10, 1), l1);
  const uint32_t l2 = t.thread_lane(10, 2);
  const uint32_t g = t.gpu_lane(10, 0, 7);
  EXPECT_EQ(t.gpu_lane(10, 0, 7), g);
  EXPECT_NE(t.gpu_lane(10, 1, 7), g);
  EXPECT_NE(l1, l2);
  EXPECT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.process(10), 0u);
  EXPECT_EQ(t.lanes[g].kind, LaneKind::kGpuStream);
  EXPECT_EQ(t.lanes[g].name, "GPU 0 stream 7");
  EXPECT_EQ(t.add_args("{\"a\":1}"), 0u);
  EXPECT_EQ(t.add_args("{}"), 1u);
}

TEST(TraceModel, FinalizeSortsSpansAndComputesDepth) {
  Trace t;
  const uint32_t l = t.thread_lane(1, 1);
  auto& spans = t.lanes[l].spans;
  spans.push_back(span(t, 30, 5, "d"));  // depth 0, after the others
  spans.push_back(span(t, 10, 5, "c"));  // inside b: depth 2
  spans.push_back(span(t, 0, 20, "a"));  // outermost
  spans.push_back(span(t, 0, 18, "b"));  // same start, shorter: inside a
  spans.push_back(span(t, 15, 0, "e"));  // zero length inside b
  spans.push_back(span(t, 15, 1, "f"));  // same start as e, longer: sorted before e
  t.finalize();
  std::string order;
  for (const Span& s : spans)
    order += t.strings.str(s.name) + std::to_string(s.depth) + " ";
  EXPECT_EQ(order, "a0 b1 c2 f2 e3 d0 ");
  EXPECT_EQ(t.lanes[l].max_depth, 4u);
  EXPECT_EQ(t.start_ns(), 0);
  EXPECT_EQ(t.end_ns(), 35);
  EXPECT_EQ(t.span_count(), 6u);
}

// Spans nearly in order (each parent written after its first child, as Kineto writes Python
// functions) and spans in reverse order (past the insertion's budget) sort the same way as a
// stable sort of them: by start, the longer first, equal ones in the order they came.
TEST(TraceModel, FinalizeSortsNearlySortedAndReversedSpansStably) {
  for (const bool reversed : {false, true}) {
    Trace t;
    const uint32_t l = t.thread_lane(1, 1);
    auto& spans = t.lanes[l].spans;
    for (int64_t i = 0; i < 20000; ++i) {
      const int64_t k = reversed ? 20000 - i : i;
      spans.push_back(span(t, 100 * k + 1, 10, "child"));
      spans.push_back(span(t, 100 * k, 50, "parent"));
      spans.push_back(span(t, 100 * k, 50, i % 2 == 0 ? "twin_a" : "twin_b"));  // equal to parent
    }
    HugePageVector<Span> expected = spans;
    std::stable_sort(expected.begin(), expected.end(), [](const Span& a, const Span& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
    });
    t.finalize();
    ASSERT_EQ(spans.size(), expected.size());
    for (size_t i = 0; i < spans.size(); ++i) {
      ASSERT_EQ(spans[i].start_ns, expected[i].start_ns) << i << (reversed ? " reversed" : "");
      ASSERT_EQ(t.strings.str(spans[i].name), t.strings.str(expected[i].name)) << i;
    }
    EXPECT_EQ(t.strings.str(spans[0].name), "parent");  // before its equal twin, as it came
    EXPECT_EQ(spans[2].depth, 2u);  // the child inside parent and its twin
  }
}

// Intervals gathered lane by lane (sorted runs one after another) and in any order merge to the
// same union as a sort of them would give.
TEST(Intervals, RunsAndAnyOrderMergeToTheSameUnion) {
  std::mt19937_64 rng(7);
  const auto reference = [](Intervals v) {
    std::sort(v.begin(), v.end());
    Intervals out;
    for (const Interval& i : v) {
      if (i.second <= i.first) continue;
      if (!out.empty() && i.first <= out.back().second) {
        out.back().second = std::max(out.back().second, i.second);
      } else {
        out.push_back(i);
      }
    }
    return out;
  };
  for (const size_t runs : {1u, 2u, 3u, 5u, 64u, 65u, 300u}) {
    Intervals v;
    for (size_t r = 0; r < runs; ++r) {
      int64_t t = static_cast<int64_t>(rng() % 1000);
      for (int k = 0; k < 50; ++k) {
        t += static_cast<int64_t>(rng() % 40);
        v.emplace_back(t, t + static_cast<int64_t>(rng() % 30) - 3);  // some empty
      }
    }
    EXPECT_EQ(merge_intervals(v), reference(v)) << runs << " runs";
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(merge_intervals(v), reference(v)) << runs << " runs, shuffled";
  }
  EXPECT_TRUE(merge_intervals({}).empty());
}

TEST(TraceModel, TimeRangeCoversInstantsCountersAndFlows) {
  Trace t;
  EXPECT_EQ(t.start_ns(), 0);
  t.finalize();
  EXPECT_EQ(t.start_ns(), 0);
  EXPECT_EQ(t.end_ns(), 0);
  const uint32_t l = t.thread_lane(1, 1);
  t.lanes[l].spans.push_back(span(t, 100, 10, "s"));
  t.lanes[l].instants.push_back({500, kNoStr, kNoStr, kNoArgs});
  t.lanes[l].instants.push_back({50, kNoStr, kNoStr, kNoArgs});
  Counter c;
  c.process = 0;
  c.name = "c";
  c.points = {{20, 1}, {-5, 2}};
  t.counters.push_back(c);
  t.flows.push_back({1, kNoStr, kNoStr, l, 900, l, 800});
  t.finalize();
  EXPECT_EQ(t.start_ns(), -5);
  EXPECT_EQ(t.end_ns(), 900);
  EXPECT_EQ(t.lanes[l].instants.front().ts_ns, 50);
  EXPECT_EQ(t.counters[0].points.front().first, -5);
}

TEST(TraceModel, DisplayOrderOfProcessesAndLanes) {
  Trace t;
  const uint32_t g = t.gpu_lane(30, 1, 2);
  const uint32_t g0 = t.gpu_lane(30, 0, 9);
  const uint32_t b = t.thread_lane(30, 5);
  const uint32_t a = t.thread_lane(30, 9);
  t.lanes[a].sort_index = -1;
  const uint32_t other = t.thread_lane(20, 1);
  const uint32_t first = t.thread_lane(40, 1);
  t.processes[t.lanes[first].process].sort_index = -10;
  Counter c;
  c.process = t.lanes[g].process;
  c.name = "on 30";
  t.counters.push_back(c);
  t.finalize();
  ASSERT_EQ(t.processes.size(), 3u);
  EXPECT_EQ(t.processes[0].pid, 40);
  EXPECT_EQ(t.processes[1].pid, 20);
  EXPECT_EQ(t.processes[2].pid, 30);
  const std::vector<uint32_t> expected = {a, b, g0, g};
  EXPECT_EQ(t.processes[2].lanes, expected);
  // Indexes follow the new order.
  EXPECT_EQ(t.lanes[g].process, 2u);
  EXPECT_EQ(t.lanes[other].process, 1u);
  EXPECT_EQ(t.lanes[first].process, 0u);
  EXPECT_EQ(t.counters[0].process, 2u);
  EXPECT_EQ(t.process(30), 2u);
  EXPECT_EQ(t.thread_lane(20, 1), other);
}

// The search from a hint gives std::lower_bound's answer for keys in any order: ascending (the
// gallop), repeated, descending (before the hint), past either end, over duplicates and empty input.
TEST(Intervals, LowerBoundFromAHintIsStdLowerBound) {
  std::mt19937 rng(7);
  const auto before = [](const Interval& i, int64_t key) { return i.first < key; };
  for (const size_t n : {0, 1, 2, 3, 17, 1000}) {
    Intervals v;
    int64_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      at += static_cast<int64_t>(rng() % 4);  // duplicates too
      v.emplace_back(at, at + 1);
    }
    std::vector<int64_t> keys;
    for (int64_t k = -2; k <= at + 2; ++k)
      keys.push_back(k);  // ascending
    for (int64_t k = at + 2; k >= -2; k -= 3)
      keys.push_back(k);  // descending
    for (int i = 0; i < 500; ++i)
      keys.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(at + 5)) - 2);  // any order
    size_t hint = 0;
    for (const int64_t key : keys) {
      const auto expected =
          static_cast<size_t>(std::lower_bound(v.begin(), v.end(), key, before) - v.begin());
      ASSERT_EQ(lower_bound_from(v, key, hint, before), expected) << "n " << n << " key " << key;
      ASSERT_EQ(hint, expected);
    }
    size_t far = n + 10;  // a hint past the end
    EXPECT_EQ(lower_bound_from(v, at + 1, far, before), n);
  }
}

}  // namespace
}  // namespace pipeprof::trace
