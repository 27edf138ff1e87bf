// A Gantt chart of a trace as one standalone SVG: one row per lane (CPU thread or GPU stream) and
// nesting level, spans as rectangles coloured by name (a name prefers the same colour in
// every chart; two names of one chart never share one), a time axis in milliseconds from the
// trace's start, and a legend of the names that take the most time.
//
// Level of detail: spans narrower than `merge_px` that follow each other within `merge_px` are
// drawn as one block with a count in its tooltip (in the colour of their name when they all share
// it, grey otherwise), so a chart has at most a few hundred shapes per row whatever the trace's
// size. Lanes beyond `max_lanes`, levels beyond `max_depth` and shapes beyond `max_shapes` are
// left out and the chart says so.
#pragma once

#include <cstddef>
#include <string>

#include "pipeprof/trace/trace.h"

namespace pipeprof::results {

struct GanttOptions {
  int width = 960;  // pixels
  int max_lanes = 24;
  int max_depth = 3;  // nesting levels drawn per lane
  double merge_px = 3;
  size_t max_shapes = 5000;
  size_t legend_names = 12;
};

// `trace` must be finalized (as load_chrome_json returns it).
std::string gantt_svg(const trace::Trace& trace, const std::string& title,
                      const GanttOptions& options = {});

}  // namespace pipeprof::results
