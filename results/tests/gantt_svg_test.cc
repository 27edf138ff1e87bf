#include "pipeprof/results/gantt_svg.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "svg.h"

namespace pipeprof::results {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

trace::Trace two_lanes() {
  trace::Trace t;
  const uint32_t main = t.thread_lane(1, 1);
  t.lanes[main].name = "main";
  const trace::StrId step = t.strings.intern("step");
  const trace::StrId wait = t.strings.intern("wait <input>");
  for (int i = 0; i < 10; ++i) {
    t.lanes[main].spans.push_back({.start_ns = i * 20'000'000, .dur_ns = 10'000'000, .name = step});
    t.lanes[main].spans.push_back(
        {.start_ns = i * 20'000'000 + 10'000'000, .dur_ns = 10'000'000, .name = wait});
  }
  const uint32_t worker = t.thread_lane(1, 2);
  t.lanes[worker].name = "worker";
  t.lanes[worker].spans.push_back({.start_ns = 0, .dur_ns = 200'000'000, .name = step});
  t.finalize();
  return t;
}

TEST(GanttSvg, DrawsEverySpanOfASmallTraceWithStableColours) {
  const std::string svg = gantt_svg(two_lanes(), "test");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(count(svg, "<rect x=\"") - 2 /* lane backgrounds */ - 2 /* legend */, 21u) << svg;
  EXPECT_NE(svg.find("wait &lt;input&gt;"), std::string::npos);  // escaped
  EXPECT_NE(svg.find(">main</text>"), std::string::npos);
  EXPECT_NE(svg.find(">worker</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"" + svg::colour_for("step") + "\""), 10u + 1 + 1);  // + legend
  EXPECT_EQ(svg, gantt_svg(two_lanes(), "test"));                                  // deterministic
}

TEST(GanttSvg, ManyTinySpansAreMergedAndTheChartStaysSmall) {
  trace::Trace t;
  const trace::StrId names[] = {t.strings.intern("map"), t.strings.intern("batch")};
  for (int lane = 0; lane < 8; ++lane) {
    const uint32_t l = t.thread_lane(1, lane + 1);
    for (int i = 0; i < 50'000; ++i) {
      t.lanes[l].spans.push_back(
          {.start_ns = i * 2'000, .dur_ns = 1'500, .name = names[(i + lane) % 2]});
    }
    // One wide span per lane stays drawn on its own.
    t.lanes[l].spans.push_back({.start_ns = 100'000'001, .dur_ns = 20'000'000, .name = names[0]});
  }
  t.finalize();
  const std::string svg = gantt_svg(t, "big");
  EXPECT_LT(svg.size(), 300'000u) << svg.size();
  EXPECT_NE(svg.find(" spans</title>"), std::string::npos);  // merged, mixed names
  EXPECT_NE(svg.find("map (20.000 ms)"), std::string::npos);
}

TEST(GanttSvg, CapsLanesAndSaysSo) {
  trace::Trace t;
  const trace::StrId n = t.strings.intern("x");
  for (int lane = 0; lane < 30; ++lane) {
    t.lanes[t.thread_lane(1, lane + 1)].spans.push_back({.start_ns = 0, .dur_ns = 10, .name = n});
  }
  t.finalize();
  const std::string svg = gantt_svg(t, "lanes", {.max_lanes = 4});
  EXPECT_NE(svg.find("26 more lanes not drawn"), std::string::npos);
}

TEST(GanttSvg, EmptyTrace) {
  trace::Trace t;
  t.finalize();
  EXPECT_NE(gantt_svg(t, "empty").find("the trace has no spans"), std::string::npos);
}

TEST(Svg, Helpers) {
  EXPECT_EQ(svg::colour_for("step"), svg::colour_for("step"));
  // Within one chart, names never share a colour while the palette lasts.
  svg::ColourMap colours;
  std::set<std::string> seen;
  for (int i = 0; i < static_cast<int>(svg::kPaletteSize); ++i)
    seen.insert(colours.assign("name " + std::to_string(i)));
  EXPECT_EQ(seen.size(), svg::kPaletteSize);
  EXPECT_STREQ(colours.colour("name 3"), colours.assign("name 3"));
  EXPECT_TRUE(std::regex_match(svg::colour_for("x"), std::regex("#[0-9a-f]{6}")));
  EXPECT_DOUBLE_EQ(svg::tick_step(100, 8), 20);
  EXPECT_DOUBLE_EQ(svg::tick_step(0.9, 8), 0.2);
  EXPECT_EQ(svg::tick_label(0.2), "0.2");
  EXPECT_EQ(svg::tick_label(40), "40");
  EXPECT_EQ(svg::escape("a<b&'c'"), "a&lt;b&amp;&#39;c&#39;");
}

}  // namespace
}  // namespace pipeprof::results
