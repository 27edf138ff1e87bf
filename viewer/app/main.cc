// pipeprof-viewer: a timeline viewer for pipeprof traces and Chrome-JSON traces of other tools.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "frame_bench.h"
#include "gl_window.h"
#include "pipeprof/viewer/document.h"
#include "pipeprof/viewer/options.h"
#include "pipeprof/viewer/synthetic_trace.h"
#include "timeline_view.h"

namespace pipeprof::viewer {
namespace {

using Clock = std::chrono::steady_clock;

int write_kineto(const ViewerOptions& o) {
  const auto bytes = static_cast<size_t>(o.kineto_mb * 1e6);
  const size_t spans = write_kineto_style_trace(o.write_kineto, bytes);
  std::printf("wrote %s: %zu spans, %.1f MB\n", o.write_kineto.c_str(), spans,
              static_cast<double>(bytes) / 1e6);
  return 0;
}

int screenshot(GlWindow& window, TimelineView& view, const std::string& path) {
  // A few frames so that ImGui settles the sizes of auto-sized windows.
  for (int i = 0; i < 3; ++i) {
    window.new_frame();
    view.frame(static_cast<float>(window.width()), static_cast<float>(window.height()));
    window.render();
  }
  window.finish();
  write_png(path, window.width(), window.height(), window.read_pixels());
  std::printf("wrote %s (%dx%d)\n", path.c_str(), window.width(), window.height());
  return 0;
}

int interactive(GlWindow& window, TimelineView& view) {
  while (!window.should_close() && !view.quit_requested()) {
    // Sleep until input arrives when idle; keep polling while a button is held (dragging).
    const bool busy = ImGui::GetIO().MouseDown[0] || ImGui::GetIO().MouseDown[1];
    window.new_frame(busy ? 0.0 : 0.05);
    if (auto dropped = window.take_dropped_paths(); !dropped.empty()) view.open_files(dropped);
    view.frame(static_cast<float>(window.width()), static_cast<float>(window.height()));
    window.render();
  }
  return 0;
}

struct Loaded {
  std::vector<std::unique_ptr<Document>> docs;
  std::vector<std::string> errors;
  double ms = 0.0;
};

Loaded load_all(const ViewerOptions& o) {
  Loaded out;
  const auto start = Clock::now();
  size_t synthetic = o.synthetic_spans;
  if (synthetic == 0 && o.bench_frames > 0 && o.files.empty()) synthetic = 1'000'000;
  if (synthetic > 0) {
    out.docs.push_back(make_document(make_synthetic_trace(synthetic),
                                     "synthetic (" + std::to_string(synthetic) + " spans)"));
  }
  for (const std::string& file : o.files) {
    LoadResult r = load_document(file);
    if (r.document) {
      out.docs.push_back(std::move(r.document));
    } else {
      out.errors.push_back(r.error);
    }
  }
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

int run(const ViewerOptions& o, Clock::time_point start) {
  if (!o.write_kineto.empty()) return write_kineto(o);
  const bool headless = !o.screenshot.empty() || o.bench_frames > 0;

  // Traces load on a second thread while the window and OpenGL start (load_all never throws
  // for a bad file; it reports it).
  auto loading = std::async(std::launch::async, load_all, std::cref(o));
  std::unique_ptr<GlWindow> window;
  std::string window_error;
  try {
    window = std::make_unique<GlWindow>(o.width, o.height, headless, "pipeprof-viewer");
  } catch (const std::runtime_error& e) {
    window_error = e.what();
  }
  Loaded loaded = loading.get();
  if (headless && !loaded.errors.empty()) {
    for (const std::string& e : loaded.errors)
      std::fprintf(stderr, "pipeprof-viewer: %s\n", e.c_str());
    return 2;
  }
  if (!window) throw std::runtime_error(window_error);

  TimelineView view;
  view.set_documents(std::move(loaded.docs));
  view.set_show_flows(o.flows);
  view.steps_window().set_open(o.steps);
  for (const std::string& e : loaded.errors)
    view.report_error(e);  // printed and shown; the viewer keeps running
  if (o.range_ms) view.show_range_ms(o.range_ms->first, o.range_ms->second);

  if (!o.screenshot.empty()) return screenshot(*window, view, o.screenshot);
  if (o.bench_frames > 0) return run_frame_bench(*window, view, o.bench_frames, {start, loaded.ms});
  return interactive(*window, view);
}

}  // namespace
}  // namespace pipeprof::viewer

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const auto parsed = pipeprof::viewer::parse_options(argc, argv);
  if (parsed.exit_code) {
    std::fputs(parsed.message.c_str(), *parsed.exit_code == 0 ? stdout : stderr);
    return *parsed.exit_code;
  }
  try {
    return pipeprof::viewer::run(parsed.options, start);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeprof-viewer: %s\n", e.what());
    return 1;
  }
}
