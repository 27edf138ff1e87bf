// One open trace with the indexes the timeline needs: level of detail per lane, per counter, and
// the flows. Loading never throws: a bad file gives an error message naming it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pipeprof/trace/trace.h"
#include "pipeprof/viewer/counter_index.h"
#include "pipeprof/viewer/lane_index.h"
#include "pipeprof/viewer/time_view.h"

namespace pipeprof::viewer {

struct Document {
  std::string title;  // shown in headers: the file name, or what made the trace
  std::string path;   // empty for traces made in memory
  trace::Trace trace;
  std::vector<LaneIndex> lanes;        // one per trace.lanes
  std::vector<CounterIndex> counters;  // one per trace.counters
  FlowIndex flows;

  // The timeline shows times relative to the trace's first event.
  int64_t origin_ns() const { return trace.start_ns(); }
  double duration_ns() const { return static_cast<double>(trace.end_ns() - trace.start_ns()); }
  // The view's window in this trace's absolute time.
  PixelWindow window(const TimeView& view) const {
    return {static_cast<double>(origin_ns()) + view.start(), view.ns_per_px(), view.width()};
  }
};

// Indexes a finalized trace.
std::unique_ptr<Document> make_document(trace::Trace trace, std::string title,
                                        std::string path = {});

struct LoadResult {
  std::unique_ptr<Document> document;  // null on failure
  std::string error;                   // "file.json: byte 1234: expected ..." on failure
};
LoadResult load_document(const std::filesystem::path& path);

}  // namespace pipeprof::viewer
