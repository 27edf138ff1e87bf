#include "pipeprof/viewer/step_bars.h"

#include <gtest/gtest.h>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::viewer {
namespace {

using trace::StepCategory;

// Two PyTorch steps: a 100 us step waiting 30 us for data, a 50 us step with a kernel.
constexpr const char* kTorch = R"js([
  {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
  {"ph": "X", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 30},
  {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1040, "dur": 50},
  {"ph": "X", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1100, "dur": 50},
  {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1110, "dur": 20}
])js";

TEST(StepBars, PyTorchStepsBecomeStackedBarsInTimelineTime) {
  trace::Trace t = trace::parse_chrome_json(kTorch);
  const StepsModel m = make_steps_model(trace::analyze(t), t.start_ns());
  EXPECT_EQ(m.source, "PyTorch ProfilerStep#N");
  ASSERT_EQ(m.bars.size(), 2u);
  EXPECT_EQ(m.bars[0].name, "ProfilerStep#1");
  EXPECT_DOUBLE_EQ(m.bars[0].start_ns, 0);  // relative to the trace's first event
  EXPECT_DOUBLE_EQ(m.bars[0].end_ns, 100'000);
  EXPECT_DOUBLE_EQ(m.bars[1].start_ns, 100'000);
  EXPECT_DOUBLE_EQ(m.bars[0].segment_ns[static_cast<size_t>(StepCategory::kDataLoader)], 30'000);
  EXPECT_DOUBLE_EQ(m.bars[0].segment_ns[static_cast<size_t>(StepCategory::kCpuExec)], 50'000);
  EXPECT_DOUBLE_EQ(m.bars[0].segment_ns[static_cast<size_t>(StepCategory::kOther)], 20'000);
  EXPECT_DOUBLE_EQ(m.bars[0].dataloader_ns, 30'000);
  EXPECT_DOUBLE_EQ(m.max_ns, 100'000);
  EXPECT_NEAR(m.input_bound_pct, 20.0, 1e-9);  // 30 of 150 us
  EXPECT_EQ(m.verdict, "highly input-bound");
  ASSERT_FALSE(m.suggestions.empty());
  EXPECT_EQ(m.suggestions.front().rfind("num_workers: ", 0), 0u);
  const auto [a, b] = zoom_range(m.bars[1]);
  EXPECT_DOUBLE_EQ(a, 100'000);
  EXPECT_DOUBLE_EQ(b, 150'000);
}

TEST(StepBars, PipeprofTrainLoopStepsToo) {
  trace::Trace t;
  t.metadata["format"] = "pipeprof";
  const uint32_t lane = t.thread_lane(1, 1);
  t.lanes[lane].name = "train loop";
  auto span = [&](int64_t start, int64_t dur, const char* name) {
    trace::Span s;
    s.start_ns = start;
    s.dur_ns = dur;
    s.name = t.strings.intern(name);
    s.category = t.strings.intern("step");
    t.lanes[lane].spans.push_back(s);
  };
  for (int i = 0; i < 3; ++i) {
    span(1000 + i * 100, 40, "get_next");
    span(1040 + i * 100, 60, "step");
  }
  t.finalize();
  const StepsModel m = make_steps_model(trace::analyze(t), t.start_ns());
  EXPECT_EQ(m.source, "train loop");
  ASSERT_EQ(m.bars.size(), 3u);
  EXPECT_EQ(m.bars[2].name, "step 3");
  EXPECT_DOUBLE_EQ(m.bars[2].start_ns, 200);
  EXPECT_DOUBLE_EQ(m.bars[2].end_ns, 300);
  EXPECT_DOUBLE_EQ(m.bars[2].segment_ns[static_cast<size_t>(StepCategory::kDataLoader)], 40);
  EXPECT_DOUBLE_EQ(m.bars[2].segment_ns[static_cast<size_t>(StepCategory::kCpuExec)], 60);
  EXPECT_NEAR(m.input_bound_pct, 40.0, 1e-9);
  EXPECT_EQ(m.verdict, "highly input-bound");
}

TEST(StepBars, NoStepsGivesAnEmptyModelWithTheNotes) {
  trace::Trace t = trace::parse_chrome_json(R"([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5}])");
  const StepsModel m = make_steps_model(trace::analyze(t), t.start_ns());
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.notes.empty());
}

TEST(StepBars, HitTestingMatchesTheBarsDrawn) {
  EXPECT_EQ(bar_at(4, 400, 0), 0u);
  EXPECT_EQ(bar_at(4, 400, 99.9), 0u);
  EXPECT_EQ(bar_at(4, 400, 100), 1u);
  EXPECT_EQ(bar_at(4, 400, 399), 3u);
  EXPECT_FALSE(bar_at(4, 400, 400));
  EXPECT_FALSE(bar_at(4, 400, -1));
  EXPECT_FALSE(bar_at(0, 400, 10));
  const auto [x0, x1] = bar_extent(4, 400, 2);
  EXPECT_DOUBLE_EQ(x0, 200);
  EXPECT_DOUBLE_EQ(x1, 280);
  EXPECT_EQ(bar_at(4, 400, (x0 + x1) / 2), 2u);
  // Many steps on few pixels: every bar is at least a pixel wide.
  const auto [y0, y1] = bar_extent(1000, 100, 999);
  EXPECT_DOUBLE_EQ(y1 - y0, 1.0);
}

TEST(StepBars, CategoryColoursAreDistinct) {
  for (size_t a = 0; a < trace::kStepCategories; ++a)
    for (size_t b = a + 1; b < trace::kStepCategories; ++b)
      EXPECT_NE(category_colour(static_cast<StepCategory>(a)),
                category_colour(static_cast<StepCategory>(b)));
}

}  // namespace
}  // namespace pipeprof::viewer
