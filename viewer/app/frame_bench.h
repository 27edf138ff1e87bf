// --bench-frames: renders frames offscreen with varied zoom and prints per-frame times.
#pragma once

#include <chrono>

namespace pipeprof::viewer {

class GlWindow;
class TimelineView;

struct StartupTimes {
  std::chrono::steady_clock::time_point start;  // when main() began
  double load_ms = 0.0;                         // reading and indexing the traces
};

// Prints the time to the first frame, then the CPU time per frame (building the user interface
// and submitting it to OpenGL) and the time including the software rasterizer (glFinish).
int run_frame_bench(GlWindow& window, TimelineView& view, int frames, const StartupTimes& startup);

}  // namespace pipeprof::viewer
