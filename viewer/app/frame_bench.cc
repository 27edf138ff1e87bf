#include "frame_bench.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "gl_window.h"
#include "pipeprof/viewer/span_stats.h"
#include "timeline_view.h"

namespace pipeprof::viewer {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void print_times(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const auto at = [&](double p) {
    const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size())));
    return ms[std::clamp<size_t>(rank, 1, ms.size()) - 1];
  };
  std::printf("%-34s mean %7.3f ms   p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms\n", what, mean,
              at(50.0), at(99.0), ms.back());
}

// CPU time of the calling thread: unlike wall time it does not count time the thread waits while
// other processes (or Mesa's rasterizer threads) use the cores.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

int run_frame_bench(GlWindow& window, TimelineView& view, int frames, const StartupTimes& startup) {
  const auto w = static_cast<float>(window.width());
  const auto h = static_cast<float>(window.height());
  // The first frame, as a user would see it: everything fitted.
  window.new_frame();
  view.frame(w, h);
  window.render();
  window.finish();
  const double first_frame_ms = ms_since(startup.start);

  size_t spans = 0;
  double longest = 0.0;
  for (const auto& doc : view.documents()) {
    spans += doc->trace.span_count();
    longest = std::max(longest, doc->duration_ns());
  }
  std::printf("trace: %zu spans, %zu trace(s), %s long; frame %dx%d\n", spans,
              view.documents().size(), format_duration(longest).c_str(), window.width(),
              window.height());
  std::printf("startup: load and index %.1f ms, first frame on screen %.1f ms after start\n",
              startup.load_ms, first_frame_ms);

  std::vector<double> cpu_ms, wall_ms, total_ms;
  cpu_ms.reserve(static_cast<size_t>(frames));
  wall_ms.reserve(static_cast<size_t>(frames));
  total_ms.reserve(static_cast<size_t>(frames));
  uint64_t rng = 12345;
  for (int i = 0; i < frames; ++i) {
    // Zoom levels from the whole trace down to 1/4^11 of it, centred at pseudo-random places.
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    const double centre = longest * static_cast<double>(rng >> 11) / 9007199254740992.0;
    const double half = 0.5 * longest * std::pow(0.25, i % 12);
    view.time_view().show(centre - half, centre + half);
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ms();
    window.new_frame();
    view.frame(w, h);
    window.render();
    cpu_ms.push_back(thread_cpu_ms() - c0);
    wall_ms.push_back(ms_since(t0));
    window.finish();
    total_ms.push_back(ms_since(t0));
  }
  std::printf("%d frames:\n", frames);
  print_times("  CPU time (UI build + GL submit)", cpu_ms);
  print_times("  wall time, same work", wall_ms);
  print_times("  wall time with rasterization", total_ms);
  std::printf("  CPU mean by zoom (visible fraction of the trace):");
  for (int level = 0; level < std::min(frames, 12); ++level) {
    double sum = 0.0;
    int n = 0;
    for (size_t i = static_cast<size_t>(level); i < cpu_ms.size(); i += 12, ++n)
      sum += cpu_ms[i];
    std::printf("%s 4^-%d: %.2f ms", level == 0 ? "" : ",", level, sum / n);
  }
  std::printf("\n");
  return 0;
}

}  // namespace pipeprof::viewer
