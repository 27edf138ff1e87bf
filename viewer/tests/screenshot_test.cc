// Runs pipeprof-viewer under xvfb-run (Mesa's software OpenGL), takes screenshots of a small trace
// at a fixed size and range, and checks the pixels: each span's palette colour where the layout
// puts it, the canvas background where nothing is. Skipped when xvfb-run is not installed.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/viewer/document.h"
#include "pipeprof/viewer/palette.h"
#include "pipeprof/viewer/step_bars.h"
#include "pipeprof/viewer/timeline_layout.h"
#include "test_traces.h"

namespace pipeprof::viewer {
namespace {

namespace fs = std::filesystem;
constexpr int kWidth = 800;
constexpr int kHeight = 300;
constexpr int64_t kMs = 1'000'000;

std::optional<fs::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

// alpha [0, 2) ms; beta [3, 5) ms with gamma [3.5, 4.5) ms inside; on one thread.
trace::Trace small_trace(const std::string& first_name = "alpha") {
  trace::Trace t;
  const uint32_t lane = t.thread_lane(1, 10);
  t.lanes[lane].name = "loader";
  const int64_t origin = 5'000'000'000;
  testing::add_span(t, lane, origin, 2 * kMs, first_name);
  testing::add_span(t, lane, origin + 3 * kMs, 2 * kMs, "beta");
  testing::add_span(t, lane, origin + 3 * kMs + kMs / 2, kMs, "gamma");
  t.finalize();
  return t;
}

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
  Rgba at(int x, int y) const {
    const size_t i =
        (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
    return rgba(pixels[i], pixels[i + 1], pixels[i + 2], 255);
  }
};

Image read_png(const fs::path& path) {
  Image image;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &image.width, &image.height, &channels, 4);
  if (data == nullptr) return image;
  image.pixels.assign(
      data, data + static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 4);
  stbi_image_free(data);
  return image;
}

class ScreenshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_program("xvfb-run")) GTEST_SKIP() << "xvfb-run not found";
    dir_ = fs::temp_directory_path() /
           ("pipeprof_viewer_shot_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Runs the viewer with `args` under xvfb-run; returns its exit status, stderr in `err_`.
  int run_viewer(const std::string& args) {
    const fs::path err = dir_ / "stderr.txt";
    const std::string cmd = "xvfb-run -a '" PIPEPROF_VIEWER_EXE "' " + args + " >'" +
                            (dir_ / "stdout.txt").string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    std::ifstream in(err);
    err_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Fraction of the span's interior (inset by 3 px, labels included) that has exactly `colour`.
  static double coverage(const Image& image, const TimelineLayout& layout, const Row& row,
                         size_t depth, const TimeView& view, double t0, double t1, Rgba colour) {
    const ScreenMetrics screen;
    const int x0 = static_cast<int>(screen.label_width + view.to_px(t0)) + 3;
    const int x1 = static_cast<int>(screen.label_width + view.to_px(t1)) - 3;
    const int y0 = static_cast<int>(screen.timeline_top() + layout.depth_top(row, depth)) + 3;
    const int y1 = y0 + static_cast<int>(layout.metrics().span_height) - 7;
    int hits = 0, total = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) {
        ++total;
        hits += image.at(x, y) == colour ? 1 : 0;
      }
    }
    return total == 0 ? 0.0 : static_cast<double>(hits) / total;
  }

  fs::path dir_;
  std::string err_;
};

TEST_F(ScreenshotTest, SpansAreDrawnWhereTheLayoutPutsThem) {
  const fs::path trace_path = dir_ / "small.json";
  trace::save_chrome_json(small_trace(), trace_path);
  const fs::path png = dir_ / "shot.png";
  ASSERT_EQ(run_viewer("'" + trace_path.string() + "' --screenshot '" + png.string() +
                       "' --size 800x300 --range 0:6"),
            0)
      << err_;
  const Image image = read_png(png);
  ASSERT_EQ(image.width, kWidth);
  ASSERT_EQ(image.height, kHeight);

  // The same layout and mapping the viewer used.
  const LoadResult loaded = load_document(trace_path);
  ASSERT_TRUE(loaded.document) << loaded.error;
  const std::vector<const Document*> docs = {loaded.document.get()};
  const TimelineLayout layout(docs, LayoutOptions{});
  const ScreenMetrics screen;
  TimeView view;
  view.set_width(kWidth - screen.label_width);
  view.set_limits(0.0, loaded.document->duration_ns());
  view.show(0.0, 6.0 * kMs);
  ASSERT_EQ(layout.rows().size(), 2u);  // process header, thread lane
  const Row& lane = layout.rows()[1];

  EXPECT_GT(coverage(image, layout, lane, 0, view, 0, 2 * kMs, name_colour("alpha")), 0.5);
  EXPECT_GT(coverage(image, layout, lane, 0, view, 3 * kMs, 5 * kMs, name_colour("beta")), 0.5);
  EXPECT_GT(coverage(image, layout, lane, 1, view, 3.5 * kMs, 4.5 * kMs, name_colour("gamma")),
            0.5);
  // Nothing between alpha and beta, nothing under alpha, nothing below the rows, nothing after
  // the last span.
  const auto px = [&](double t) { return static_cast<int>(screen.label_width + view.to_px(t)); };
  const auto mid = [&](size_t depth) {
    return static_cast<int>(screen.timeline_top() + layout.depth_top(lane, depth) +
                            layout.metrics().span_height * 0.5f);
  };
  EXPECT_EQ(image.at(px(2.5 * kMs), mid(0)), kCanvasBackground);
  EXPECT_EQ(image.at(px(0.5 * kMs), mid(1)), kCanvasBackground);
  EXPECT_EQ(image.at(px(5.5 * kMs), mid(0)), kCanvasBackground);
  EXPECT_EQ(image.at(px(2.5 * kMs), kHeight - 10), kCanvasBackground);
  // The span colours are not in the background.
  EXPECT_LT(coverage(image, layout, lane, 1, view, 0, 2 * kMs, name_colour("alpha")), 0.01);
}

TEST_F(ScreenshotTest, CompareModeStacksBothTracesOnTheirOwnStart) {
  const fs::path a = dir_ / "a.json";
  const fs::path b = dir_ / "b.json";
  trace::save_chrome_json(small_trace("alpha"), a);
  trace::save_chrome_json(small_trace("delta"), b);
  const fs::path png = dir_ / "compare.png";
  ASSERT_EQ(run_viewer("--compare '" + a.string() + "' '" + b.string() + "' --screenshot '" +
                       png.string() + "' --size 800x300 --range 0:6"),
            0)
      << err_;
  const Image image = read_png(png);
  ASSERT_EQ(image.width, kWidth);
  const LoadResult la = load_document(a);
  const LoadResult lb = load_document(b);
  ASSERT_TRUE(la.document && lb.document);
  LayoutOptions options;
  options.document_headers = true;
  const TimelineLayout layout({la.document.get(), lb.document.get()}, options);
  ASSERT_EQ(layout.rows().size(), 6u);
  TimeView view;
  view.set_width(kWidth - ScreenMetrics{}.label_width);
  view.set_limits(0.0, la.document->duration_ns());
  view.show(0.0, 6.0 * kMs);
  EXPECT_GT(coverage(image, layout, layout.rows()[2], 0, view, 0, 2 * kMs, name_colour("alpha")),
            0.5);
  EXPECT_GT(coverage(image, layout, layout.rows()[5], 0, view, 0, 2 * kMs, name_colour("delta")),
            0.5);
}

// The steps window draws each step's categories in their colours: a PyTorch trace whose steps
// are mostly DataLoader wait shows the DataLoader colour, and without --steps it does not.
TEST_F(ScreenshotTest, StepsWindowDrawsTheStackedBars) {
  const fs::path torch = dir_ / "torch.json";
  std::ofstream(torch) << R"js([
    {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 0, "dur": 600},
    {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 600, "dur": 300},
    {"ph": "X", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
    {"ph": "X", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 600},
    {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1600, "dur": 300}])js";
  auto count = [](const Image& image, Rgba colour) {
    int n = 0;
    for (int y = 0; y < image.height; ++y)
      for (int x = 0; x < image.width; ++x)
        n += image.at(x, y) == colour ? 1 : 0;
    return n;
  };
  const Rgba loader = category_colour(trace::StepCategory::kDataLoader);
  const Rgba cpu = category_colour(trace::StepCategory::kCpuExec);
  const fs::path with = dir_ / "steps.png";
  ASSERT_EQ(run_viewer("'" + torch.string() + "' --steps --screenshot '" + with.string() +
                       "' --size 1000x700"),
            0)
      << err_;
  const Image shown = read_png(with);
  ASSERT_EQ(shown.width, 1000);
  // Two bars of about 250 px by 150 px, 60% DataLoader and 30% CPU Exec.
  EXPECT_GT(count(shown, loader), 2 * 200 * 80) << "DataLoader segments";
  EXPECT_GT(count(shown, cpu), 2 * 200 * 35) << "CPU Exec segments";
  const fs::path without = dir_ / "no_steps.png";
  ASSERT_EQ(run_viewer("'" + torch.string() + "' --screenshot '" + without.string() +
                       "' --size 1000x700"),
            0)
      << err_;
  EXPECT_EQ(count(read_png(without), loader), 0);
}

TEST_F(ScreenshotTest, AMalformedTraceFailsWithItsError) {
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << R"({"traceEvents": [{"ph": "X", "ts": 1, )";
  const fs::path png = dir_ / "never.png";
  EXPECT_EQ(run_viewer("'" + bad.string() + "' --screenshot '" + png.string() + "'"), 2);
  EXPECT_NE(err_.find("bad.json"), std::string::npos) << err_;
  EXPECT_NE(err_.find("byte"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(png));
}

}  // namespace
}  // namespace pipeprof::viewer
