#include "pipeprof/trace/recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

const Lane* find_lane(const Trace& t, std::string_view name) {
  for (const Lane& l : t.lanes)
    if (l.name == name) return &l;
  return nullptr;
}

const Counter* find_counter(const Trace& t, std::string_view name) {
  for (const Counter& c : t.counters)
    if (c.name == name) return &c;
  return nullptr;
}

class RecorderTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (rec.enabled()) rec.stop();
  }
  Recorder& rec = Recorder::global();
};

TEST_F(RecorderTest, RecordsNothingWhenOff) {
  const NameId n = rec.intern("off span");
  rec.start();
  rec.stop();
  { ScopedSpan s(n, category::pipeline()); }
  rec.counter(n, 1);
  rec.start();
  const Trace t = rec.stop();
  EXPECT_EQ(t.span_count(), 0u);
  EXPECT_TRUE(t.counters.empty());
}

TEST_F(RecorderTest, InterningIsStable) {
  const NameId a = rec.intern("alpha");
  const NameId b = rec.intern("beta");
  EXPECT_NE(a, b);
  EXPECT_EQ(rec.intern("alpha"), a);
  EXPECT_EQ(rec.name(a), "alpha");
  EXPECT_EQ(rec.name(b), "beta");
}

TEST_F(RecorderTest, SpansNestAndCarryNamesArgsAndTheMonotonicClock) {
  const NameId outer = rec.intern("outer");
  const NameId inner = rec.intern("inner");
  const NameId key = rec.intern("index");
  rec.start();
  rec.set_thread_name("recorder test main");
  const int64_t before = now_ns();
  {
    ScopedSpan o(outer, category::step());
    ScopedSpan i(inner, category::pipeline(), key, 42);
  }
  const int64_t after = now_ns();
  const Trace t = rec.stop();
  EXPECT_EQ(t.metadata.at("format"), "pipeprof");
  const Lane* lane = find_lane(t, "recorder test main");
  ASSERT_NE(lane, nullptr);
  ASSERT_EQ(lane->spans.size(), 2u);
  const Span& o = lane->spans[0];
  const Span& i = lane->spans[1];
  EXPECT_EQ(t.name(o), "outer");
  EXPECT_EQ(t.name(i), "inner");
  EXPECT_EQ(t.strings.str(o.category), "step");
  EXPECT_EQ(o.depth, 0u);
  EXPECT_EQ(i.depth, 1u);
  EXPECT_LE(o.start_ns, i.start_ns);
  EXPECT_GE(o.end_ns(), i.end_ns());
  // Converted from ticks to CLOCK_MONOTONIC: inside the window read around them (with slack
  // for the tick calibration's error).
  EXPECT_GE(o.start_ns, before - 50'000);
  EXPECT_LE(o.end_ns(), after + 50'000);
  ASSERT_NE(i.args, kNoArgs);
  EXPECT_EQ(t.args[i.args], "{\"index\":42}");
  EXPECT_EQ(o.args, kNoArgs);
}

TEST_F(RecorderTest, ThreadsGetTheirOwnNamedLanesAndKeepEventsAfterExit) {
  const NameId work = rec.intern("work");
  rec.start();
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k) {
    threads.emplace_back([&, k] {
      rec.set_thread_name("worker #" + std::to_string(k));
      for (int j = 0; j <= k; ++j) {
        ScopedSpan s(work, category::pipeline());
      }
    });
  }
  for (auto& th : threads)
    th.join();
  const Trace t = rec.stop();
  for (int k = 0; k < 3; ++k) {
    const Lane* lane = find_lane(t, "worker #" + std::to_string(k));
    ASSERT_NE(lane, nullptr) << k;
    EXPECT_EQ(lane->spans.size(), static_cast<size_t>(k + 1));
  }
}

TEST_F(RecorderTest, StartDiscardsTheEarlierRecording) {
  const NameId first = rec.intern("first recording");
  const NameId second = rec.intern("second recording");
  rec.start();
  { ScopedSpan s(first, category::pipeline()); }
  rec.stop();
  rec.start();
  { ScopedSpan s(second, category::pipeline()); }
  const Trace t = rec.stop();
  ASSERT_EQ(t.span_count(), 1u);
  for (const Lane& l : t.lanes)
    for (const Span& s : l.spans)
      EXPECT_EQ(t.name(s), "second recording");
}

TEST_F(RecorderTest, SnapshotKeepsRecording) {
  const NameId n = rec.intern("snap");
  rec.start();
  { ScopedSpan s(n, category::pipeline()); }
  EXPECT_EQ(rec.snapshot().span_count(), 1u);
  EXPECT_TRUE(rec.enabled());
  { ScopedSpan s(n, category::pipeline()); }
  EXPECT_EQ(rec.stop().span_count(), 2u);
}

TEST_F(RecorderTest, CountersInstantsAndFlows) {
  const NameId c = rec.intern("stage: buffered");
  const NameId i = rec.intern("marker");
  const NameId f = rec.intern("handoff");
  rec.start();
  rec.counter(c, 1);
  rec.counter(c, 2.5);
  rec.instant(i, category::pipeline());
  const uint64_t id = rec.new_flow_id();
  rec.flow_start(f, id);
  std::thread other([&] {
    rec.set_thread_name("flow target");
    rec.flow_end(f, id);
  });
  other.join();
  rec.flow_end(f, 987654321);  // no start: dropped
  const Trace t = rec.stop();
  const Counter* counter = find_counter(t, "stage: buffered");
  ASSERT_NE(counter, nullptr);
  ASSERT_EQ(counter->points.size(), 2u);
  EXPECT_EQ(counter->points[0].second, 1.0);
  EXPECT_EQ(counter->points[1].second, 2.5);
  EXPECT_LE(counter->points[0].first, counter->points[1].first);
  size_t instants = 0;
  for (const Lane& l : t.lanes)
    instants += l.instants.size();
  EXPECT_EQ(instants, 1u);
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.flows[0].id, id);
  EXPECT_EQ(t.lanes[t.flows[0].to_lane].name, "flow target");
  EXPECT_NE(t.flows[0].from_lane, t.flows[0].to_lane);
  EXPECT_LE(t.flows[0].from_ns, t.flows[0].to_ns);
}

TEST_F(RecorderTest, MergesAnotherProcessTrace) {
  Trace child;
  const uint32_t lane = child.thread_lane(999999, 7);
  child.processes[child.lanes[lane].process].name = "producer 0";
  child.lanes[lane].name = "producer main";
  Span s;
  s.start_ns = now_ns();
  s.dur_ns = 1000;
  s.name = child.strings.intern("generator: read");
  s.category = child.strings.intern("pipeline");
  child.lanes[lane].spans.push_back(s);
  child.finalize();
  rec.merge_process_trace(child);  // not recording: ignored
  rec.start();
  rec.merge_process_trace(child);
  const Trace t = rec.stop();
  bool found = false;
  for (const Process& p : t.processes)
    found = found || (p.pid == 999999 && p.name == "producer 0");
  EXPECT_TRUE(found);
  const Lane* l = find_lane(t, "producer main");
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(l->spans.size(), 1u);
  EXPECT_EQ(t.name(l->spans[0]), "generator: read");
}

// Recording threads racing with stop() and start(): never a torn event (run under TSan too).
TEST_F(RecorderTest, StopRacesWithRecordingThreads) {
  const NameId n = rec.intern("race");
  std::atomic<bool> done{false};
  rec.start();
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&] {
      // Bursts with short pauses: enough spans to race with every stop and snapshot, not so
      // many that collecting them (and two spinning threads) starve the tests running beside.
      while (!done.load()) {
        for (int i = 0; i < 64; ++i) {
          ScopedSpan s(n, category::pipeline());
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  size_t seen = 0;
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the threads record meanwhile
    const Trace t = round % 2 == 0 ? rec.snapshot() : rec.stop();
    for (const Lane& l : t.lanes)
      for (const Span& s : l.spans) {
        ASSERT_EQ(t.name(s), "race");
        ASSERT_GE(s.dur_ns, 0);
        ++seen;
      }
    if (round % 2 == 1) rec.start();
  }
  done = true;
  for (auto& th : threads)
    th.join();
  EXPECT_GT(seen, 1000u) << "the recording threads' spans were collected";
}

}  // namespace
}  // namespace pipeprof::trace
