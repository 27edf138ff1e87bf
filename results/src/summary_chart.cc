#include "summary_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "svg.h"

namespace pipeprof::results {
namespace {

constexpr int kWidth = 860;
constexpr int kLabelWidth = 200;
constexpr int kPlotWidth = 560;
constexpr int kBar = 10;
constexpr int kGroupGap = 12;
constexpr int kTop = 52;

struct Series {
  const char* colour;
  std::optional<double> ChartRow::*value;
};
constexpr Series kSeries[] = {{"#4e79a7", &ChartRow::measured_ms},
                              {"#59a14f", &ChartRow::ideal_ms},
                              {"#f28e2b", &ChartRow::seed_ms}};

double row_max(const ChartRow& r) {
  double m = 0;
  for (const auto& s : kSeries)
    if (r.*(s.value)) m = std::max(m, *(r.*(s.value)));
  return m;
}

// One panel: its rows on one linear axis, drawn from y0; returns the SVG and the panel's height.
std::pair<std::string, int> panel(const std::vector<const ChartRow*>& rows, int y0, bool titled,
                                  const ChartText& text) {
  double max_ms = 0;
  for (const ChartRow* r : rows)
    max_ms = std::max(max_ms, row_max(*r));
  const double step = svg::tick_step(max_ms > 0 ? max_ms : 1, 8);
  const double axis_max = std::max(step, std::ceil(max_ms / step) * step);
  auto x_of = [&](double ms) { return kLabelWidth + ms / axis_max * kPlotWidth; };
  const int group = 3 * kBar + kGroupGap;
  std::string out;
  if (titled) {
    out +=
        fmt::format("<text x=\"4\" y=\"{}\" class=\"l\" font-style=\"italic\">up to {}{}</text>\n",
                    y0 + 4, svg::tick_label(axis_max), text.unit.empty() ? std::string() : fmt::format(" {}", text.unit));
    y0 += 12;
  }
  const int top = y0 + 6;
  const int plot_bottom = top + static_cast<int>(rows.size()) * group;
  for (double v = 0; v <= axis_max + 1e-9; v += step) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"grid\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"t\">{4}</text>\n",
        x_of(v), top - 4, plot_bottom, plot_bottom + 14, svg::tick_label(v));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const ChartRow& r = *rows[i];
    const int y = top + static_cast<int>(i) * group;
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"l\" text-anchor=\"end\">{}</text>\n",
                       kLabelWidth - 6, y + static_cast<int>(1.5 * kBar) + 4, svg::escape(r.name));
    for (size_t k = 0; k < 3; ++k) {
      const auto& v = r.*(kSeries[k].value);
      if (!v) continue;
      const int by = y + static_cast<int>(k) * kBar;
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} {:.2f}"
          "{}</title></rect><text x=\"{:.1f}\" y=\"{}\" class=\"s\">{:.1f}</text>\n",
          kLabelWidth, by, std::max(0.0, x_of(*v) - kLabelWidth), kBar - 1, kSeries[k].colour,
          svg::escape(r.name), svg::escape(text.series[k]), *v,
          text.unit.empty() ? std::string() : fmt::format(" {}", svg::escape(text.unit)), x_of(*v) + 3,
          by + kBar - 1, *v);
    }
  }
  return {out, plot_bottom + 20 - y0 + (titled ? 12 : 0)};
}

}  // namespace

std::string summary_chart_svg(const std::vector<ChartRow>& rows, const ChartText& text) {
  // Panels: rows sorted by their largest value join the current panel while that value is at
  // most 10 times the panel's smallest; each panel keeps the input order and has its own axis, so
  // that second-long experiments do not flatten the bars of the 100 ms ones.
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return row_max(rows[a]) < row_max(rows[b]); });
  std::vector<int> panel_of(rows.size(), 0);
  int panels = 0;
  double panel_floor = -1;
  for (size_t i : order) {
    const double m = row_max(rows[i]);
    if (panel_floor < 0 || m > 10 * std::max(panel_floor, 1.0)) {
      if (panel_floor >= 0) ++panels;
      panel_floor = m;
    }
    panel_of[i] = panels;
  }
  std::string body;
  int y = kTop;
  for (int p = 0; p <= panels && !rows.empty(); ++p) {
    std::vector<const ChartRow*> panel_rows;
    for (size_t i = 0; i < rows.size(); ++i)
      if (panel_of[i] == p) panel_rows.push_back(&rows[i]);
    auto [svg_text, height] = panel(panel_rows, y, panels > 0, text);
    body += svg_text;
    y += height;
  }
  const int height = y + 4;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n"
      "<style>.l{{font-size:11px}}.s{{font-size:10px}}.t{{font-size:10px;text-anchor:middle}}"
      ".h{{font-size:13px;font-weight:bold}}.grid{{stroke:#ddd;stroke-width:1}}</style>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"4\" y=\"16\" class=\"h\">{2}</text>\n",
      kWidth, height, svg::escape(text.title));
  double lx = kLabelWidth;
  for (size_t k = 0; k < 3; ++k) {
    if (text.series[k].empty()) continue;  // a chart of fewer series
    out += fmt::format(
        "<rect x=\"{0:.0f}\" y=\"24\" width=\"12\" height=\"10\" fill=\"{1}\"/>"
        "<text x=\"{2:.0f}\" y=\"33\" class=\"s\">{3}</text>\n",
        lx, kSeries[k].colour, lx + 16, svg::escape(text.series[k]));
    lx += 140;
  }
  out += body;
  out += "</svg>\n";
  return out;
}

}  // namespace pipeprof::results
