#include "pipeprof/results/gantt_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "svg.h"

namespace pipeprof::results {
namespace {

constexpr int kLabelWidth = 190;
constexpr int kRowHeight = 14;
constexpr int kLaneGap = 5;
constexpr int kTop = 44;  // title and axis
constexpr const char* kMixedColour = "#9e9e9e";

struct Block {
  double x0 = 0, x1 = 0;
  std::string_view name;
  bool mixed = false;
  size_t count = 0;
  int64_t dur_ns = 0;  // of the single span (count == 1)
};

std::string shape(const Block& b, double y, const svg::ColourMap& colours) {
  const double w = std::max(b.x1 - b.x0, 0.5);
  const char* colour = b.mixed ? kMixedColour : colours.colour(b.name);
  std::string tip = b.count == 1
                        ? fmt::format("{} ({:.3f} ms)", b.name, static_cast<double>(b.dur_ns) / 1e6)
                    : b.mixed ? fmt::format("{} spans", b.count)
                              : fmt::format("{} x {}", b.count, b.name);
  std::string out = fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title>"
      "</rect>\n",
      b.x0, y, w, kRowHeight - 2, colour, svg::escape(tip));
  const size_t chars = static_cast<size_t>((w - 4) / 6.5);
  if (b.count == 1 && chars >= 4) {
    std::string label(b.name.substr(0, chars));
    if (label.size() < b.name.size()) label.replace(label.size() - 1, 1, "~");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" class=\"s\">{}</text>\n", b.x0 + 2,
                       y + kRowHeight - 5, svg::escape(label));
  }
  return out;
}

}  // namespace

std::string gantt_svg(const trace::Trace& t, const std::string& title, const GanttOptions& o) {
  const int plot_width = o.width - kLabelWidth - 10;
  const int64_t t0 = t.start_ns();
  const double span_ns = static_cast<double>(std::max<int64_t>(1, t.end_ns() - t0));
  auto x_of = [&](int64_t ns) {
    return kLabelWidth + static_cast<double>(ns - t0) / span_ns * plot_width;
  };

  // Lanes with spans, in display order.
  std::vector<uint32_t> lanes;
  for (const auto& p : t.processes)
    for (uint32_t l : p.lanes)
      if (!t.lanes[l].spans.empty()) lanes.push_back(l);
  const size_t lanes_left_out =
      lanes.size() > static_cast<size_t>(o.max_lanes) ? lanes.size() - o.max_lanes : 0;
  if (lanes_left_out) lanes.resize(static_cast<size_t>(o.max_lanes));

  // Total time per name over what is drawn: orders the legend and the colour assignment.
  std::map<std::string_view, int64_t> time_by_name;
  for (uint32_t l : lanes)
    for (const trace::Span& s : t.lanes[l].spans)
      if (static_cast<int>(s.depth) < o.max_depth) time_by_name[t.name(s)] += s.dur_ns;
  std::vector<std::pair<std::string_view, int64_t>> names(time_by_name.begin(), time_by_name.end());
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  svg::ColourMap colours;
  for (const auto& [name, ns] : names)
    colours.assign(name);

  std::string body;
  size_t shapes = 0;
  bool truncated = false, depth_cut = false;
  double y = kTop;
  for (uint32_t l : lanes) {
    const trace::Lane& lane = t.lanes[l];
    const int depth =
        std::min<int>(static_cast<int>(std::max<uint32_t>(lane.max_depth, 1)), o.max_depth);
    depth_cut |= static_cast<int>(lane.max_depth) > o.max_depth;
    std::string label = lane.name.empty() ? fmt::format("thread {}", lane.tid) : lane.name;
    const auto& process = t.processes[lane.process];
    if (t.processes.size() > 1 && !process.name.empty()) label = process.name + ": " + label;
    if (label.size() > 28) label = label.substr(0, 27) + "~";
    const double lane_height = depth * kRowHeight;
    body +=
        fmt::format("<rect x=\"0\" y=\"{:.0f}\" width=\"{}\" height=\"{:.0f}\" class=\"lane\"/>\n",
                    y - 1, o.width, lane_height + 2);
    body += fmt::format("<text x=\"4\" y=\"{:.0f}\" class=\"l\">{}</text>\n", y + kRowHeight - 4,
                        svg::escape(label));
    for (int d = 0; d < depth && !truncated; ++d) {
      const double row_y = y + d * kRowHeight;
      Block pending;
      auto flush = [&] {
        if (pending.count == 0) return;
        body += shape(pending, row_y, colours);
        ++shapes;
        pending = Block{};
      };
      for (const trace::Span& s : lane.spans) {
        if (static_cast<int>(s.depth) != d) continue;
        const std::string_view name = t.name(s);
        const double x0 = x_of(s.start_ns), x1 = x_of(s.end_ns());
        const bool narrow = x1 - x0 < o.merge_px;
        // A narrow span joins a block of narrow spans that ends less than merge_px before it.
        const bool pending_narrow = pending.count > 1 || pending.x1 - pending.x0 < o.merge_px;
        if (narrow && pending.count > 0 && pending_narrow && x0 - pending.x1 < o.merge_px) {
          pending.x1 = std::max(pending.x1, x1);
          pending.mixed |= pending.name != name;
          ++pending.count;
          continue;
        }
        flush();
        if (shapes >= o.max_shapes) {
          truncated = true;
          break;
        }
        pending = Block{.x0 = x0, .x1 = x1, .name = name, .count = 1, .dur_ns = s.dur_ns};
      }
      flush();
    }
    y += lane_height + kLaneGap;
  }

  // Axis: ticks in ms from the trace's start, with grid lines over the rows.
  std::string axis;
  const double total_ms = span_ns / 1e6;
  const double step = svg::tick_step(total_ms, 8);
  for (double v = 0; v <= total_ms + 1e-9; v += step) {
    const double x = kLabelWidth + v / total_ms * plot_width;
    axis += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" class=\"grid\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"t\">{4}</text>\n",
        x, kTop - 6, y, kTop - 9, svg::tick_label(v));
  }

  // Legend: the names with the most time, largest first (ties by name, for a stable order).
  if (names.size() > o.legend_names) names.resize(o.legend_names);
  std::string legend;
  double ly = y + 8;
  double lx = kLabelWidth;
  for (const auto& [name, ns] : names) {
    std::string label(name.substr(0, 30));
    const double w = 18 + 6.5 * static_cast<double>(label.size()) + 14;
    if (lx + w > o.width) {
      lx = kLabelWidth;
      ly += 16;
    }
    legend += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"12\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.0f}\" class=\"s\">{}</text>\n",
        lx, ly, colours.colour(name), lx + 16, ly + 9, svg::escape(label));
    lx += w;
  }
  std::string notes;
  double ny = ly + 28;
  auto note = [&](const std::string& text) {
    notes += fmt::format("<text x=\"{}\" y=\"{:.0f}\" class=\"s\">{}</text>\n", kLabelWidth, ny,
                         svg::escape(text));
    ny += 14;
  };
  if (lanes_left_out) note(fmt::format("{} more lanes not drawn", lanes_left_out));
  if (depth_cut) note(fmt::format("nesting deeper than {} levels not drawn", o.max_depth));
  if (truncated) note(fmt::format("truncated after {} shapes", o.max_shapes));
  if (lanes.empty()) note("the trace has no spans");
  const double height = ny + 4;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0} {1:.0f}\" font-family=\"sans-serif\">\n"
      "<style>.l{{font-size:11px}}.s{{font-size:10px}}.t{{font-size:10px;text-anchor:middle}}"
      ".h{{font-size:13px;font-weight:bold}}.grid{{stroke:#ddd;stroke-width:1}}"
      ".lane{{fill:#f6f6f6}}</style>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"4\" y=\"16\" class=\"h\">{2}</text>\n"
      "<text x=\"4\" y=\"{3}\" class=\"s\">ms</text>\n",
      o.width, height, svg::escape(title), kTop - 9);
  out += axis;
  out += body;
  out += legend;
  out += notes;
  out += "</svg>\n";
  return out;
}

}  // namespace pipeprof::results
