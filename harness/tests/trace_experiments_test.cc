// The traces of the catalog's experiments hold the spans their definitions imply.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::harness {
namespace {

struct Named {
  const trace::Lane* lane;
  const trace::Span* span;
};

std::vector<Named> spans_named(const trace::Trace& t, std::string_view name) {
  std::vector<Named> out;
  for (const trace::Lane& l : t.lanes)
    for (const trace::Span& s : l.spans)
      if (t.name(s) == name) out.push_back({&l, &s});
  std::sort(out.begin(), out.end(),
            [](const Named& a, const Named& b) { return a.span->start_ns < b.span->start_ns; });
  return out;
}

trace::Trace traced_run(const std::string& id) {
  RunOptions options{.repetitions = 1, .trace = true};
  ExperimentResult r = run_experiment(find_experiment(id), options);
  EXPECT_TRUE(r.trace);
  if (!r.trace) return {};
  return *r.trace;
}

bool overlaps(const trace::Span& a, const trace::Span& b) {
  return a.start_ns < b.end_ns() && b.start_ns < a.end_ns();
}

TEST(ExperimentTraces, NaiveIsStrictlySequential) {
  const trace::Trace t = traced_run("naive");
  EXPECT_EQ(t.metadata.at("experiment"), "naive");
  const auto epochs = spans_named(t, "epoch");
  const auto opens = spans_named(t, "artificial: open");
  const auto reads = spans_named(t, "artificial: read");
  const auto steps = spans_named(t, "step");
  ASSERT_EQ(epochs.size(), 2u);
  ASSERT_EQ(opens.size(), 2u);  // one open per epoch
  ASSERT_EQ(reads.size(), 6u);  // three reads per epoch
  ASSERT_EQ(steps.size(), 6u);  // three steps per epoch
  // Everything runs on the training loop's thread...
  for (const auto* group : {&opens, &reads, &steps})
    for (const Named& n : *group)
      EXPECT_EQ(n.lane->name, "train loop");
  // ...and no read overlaps a step.
  for (const Named& r : reads)
    for (const Named& s : steps)
      EXPECT_FALSE(overlaps(*r.span, *s.span));
  // Per epoch: open, then read/step alternating, inside the epoch's span.
  for (size_t e = 0; e < 2; ++e) {
    const trace::Span& ep = *epochs[e].span;
    EXPECT_GE(opens[e].span->start_ns, ep.start_ns);
    for (size_t k = 0; k < 3; ++k) {
      const trace::Span& r = *reads[e * 3 + k].span;
      const trace::Span& s = *steps[e * 3 + k].span;
      EXPECT_GE(r.start_ns, opens[e].span->end_ns());
      EXPECT_LE(r.end_ns(), s.start_ns);
      EXPECT_LE(s.end_ns(), ep.end_ns());
    }
  }
}

TEST(ExperimentTraces, PrefetchOverlapsReadsWithSteps) {
  const trace::Trace t = traced_run("prefetch");
  const auto reads = spans_named(t, "artificial: read");
  const auto steps = spans_named(t, "step");
  const auto fills = spans_named(t, "prefetch: fill");
  ASSERT_EQ(reads.size(), 6u);
  ASSERT_EQ(steps.size(), 6u);
  ASSERT_GE(fills.size(), 6u);
  for (const Named& r : reads)
    EXPECT_EQ(r.lane->name, "prefetch #0");
  int overlapping = 0;
  for (const Named& r : reads)
    for (const Named& s : steps)
      overlapping += overlaps(*r.span, *s.span) ? 1 : 0;
  EXPECT_GE(overlapping, 2);  // each epoch's second and third reads run during a step
  // The buffer occupancy and the knob are counters.
  bool buffered = false, knob = false;
  for (const trace::Counter& c : t.counters) {
    buffered = buffered || c.name == "prefetch: buffered";
    knob = knob || c.name == "prefetch: buffer_size";
  }
  EXPECT_TRUE(buffered);
  EXPECT_TRUE(knob);
}

TEST(ExperimentTraces, ParallelMapRunsCallsOnNamedWorkers) {
  const trace::Trace t = traced_run("map_parallel");
  const auto calls = spans_named(t, "map 'mapped_function'");
  ASSERT_EQ(calls.size(), 6u);
  for (const Named& c : calls)
    EXPECT_EQ(c.lane->name.rfind("map 'mapped_function' #", 0), 0u) << c.lane->name;
  const auto waits = spans_named(t, "get_next");
  EXPECT_EQ(waits.size(), 8u);  // 3 elements and the end, per epoch
}

TEST(ExperimentTraces, UntracedRunsCarryNoTrace) {
  RunOptions options{.repetitions = 1};
  EXPECT_FALSE(run_experiment(find_experiment("naive"), options).trace);
}

}  // namespace
}  // namespace pipeprof::harness
