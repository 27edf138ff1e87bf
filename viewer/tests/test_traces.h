// Small traces built in code for the viewer's tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>

#include "pipeprof/trace/trace.h"

namespace pipeprof::viewer::testing {

// Adds a span to `lane` of `t`; call t.finalize() after the last one.
inline void add_span(trace::Trace& t, uint32_t lane, int64_t start, int64_t dur,
                     const std::string& name) {
  trace::Span s;
  s.start_ns = start;
  s.dur_ns = dur;
  s.name = t.strings.intern(name);
  t.lanes[lane].spans.push_back(s);
}

// One thread lane with the given (start, duration) spans, all named "s".
inline trace::Trace one_lane(std::initializer_list<std::pair<int64_t, int64_t>> spans) {
  trace::Trace t;
  const uint32_t lane = t.thread_lane(1, 1);
  for (const auto& [start, dur] : spans)
    add_span(t, lane, start, dur, "s");
  t.finalize();
  return t;
}

}  // namespace pipeprof::viewer::testing
