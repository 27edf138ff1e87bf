#include "pipeprof/viewer/document.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/viewer/synthetic_trace.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::viewer {
namespace {

using testing_support::TempDir;

TEST(Document, IndexesEveryLaneAndCounter) {
  const auto doc = make_document(make_synthetic_trace(5000), "synthetic");
  EXPECT_EQ(doc->lanes.size(), doc->trace.lanes.size());
  EXPECT_EQ(doc->counters.size(), doc->trace.counters.size());
  EXPECT_GE(doc->trace.span_count(), 5000u);
  EXPECT_GT(doc->flows.size(), 0u);
  EXPECT_GT(doc->duration_ns(), 0.0);
  TimeView view;
  view.set_width(100);
  view.set_limits(0, doc->duration_ns());
  view.show(0, 100);
  const PixelWindow w = doc->window(view);
  EXPECT_EQ(w.t0_ns, static_cast<double>(doc->origin_ns()));
  EXPECT_EQ(w.ns_per_px, 1.0);
}

TEST(Document, LoadsAChromeJsonFile) {
  const TempDir tmp;
  const auto path = tmp.write("ok.json", R"({"traceEvents": [
    {"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 11, "dur": 1}]})");
  const LoadResult r = load_document(path);
  ASSERT_TRUE(r.document) << r.error;
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.document->trace.span_count(), 2u);
  EXPECT_EQ(r.document->title, path.filename().string());
  EXPECT_EQ(r.document->lanes.at(0).depth_count(), 2u);
}

TEST(Document, AMalformedFileIsAnErrorNamingTheFileAndOffset) {
  const TempDir tmp;
  const auto path = tmp.write("bad.json", R"({"traceEvents": [{"ph": "X", "name": )");
  const LoadResult r = load_document(path);
  EXPECT_FALSE(r.document);
  EXPECT_NE(r.error.find("bad.json"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("byte"), std::string::npos) << r.error;
}

TEST(Document, AMissingFileIsAnError) {
  const LoadResult r = load_document("/nonexistent/dir/trace.json");
  EXPECT_FALSE(r.document);
  EXPECT_NE(r.error.find("/nonexistent/dir/trace.json"), std::string::npos) << r.error;
}

TEST(SyntheticTrace, KinetoStyleTraceReadsBack) {
  std::ostringstream out;
  const size_t spans = write_kineto_style_trace(out, 64 * 1024);
  EXPECT_GE(out.str().size(), 64u * 1024u);
  const trace::Trace t = trace::parse_chrome_json(out.str(), "kineto");
  EXPECT_EQ(t.span_count(), spans);
  size_t gpu_lanes = 0;
  for (const trace::Lane& l : t.lanes)
    gpu_lanes += l.kind == trace::LaneKind::kGpuStream ? 1 : 0;
  EXPECT_EQ(gpu_lanes, 4u);
  EXPECT_EQ(t.flows.size(), spans / 4);
  EXPECT_EQ(t.metadata.at("format"), "kineto");
}

TEST(SyntheticTrace, IsDeterministicAndNested) {
  const trace::Trace a = make_synthetic_trace(3000, 5);
  const trace::Trace b = make_synthetic_trace(3000, 5);
  ASSERT_EQ(a.span_count(), b.span_count());
  EXPECT_EQ(a.end_ns(), b.end_ns());
  uint32_t deepest = 0;
  for (const trace::Lane& l : a.lanes)
    deepest = std::max(deepest, l.max_depth);
  EXPECT_EQ(deepest, 3u);  // epoch > step > get_next
}

}  // namespace
}  // namespace pipeprof::viewer
