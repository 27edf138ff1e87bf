// The one view object of the viewer: the open traces, the time view, the layout, the search,
// the selection, and the feature windows. frame() draws the whole user interface once; the
// canvas (ruler, lane labels, rows, input) is in timeline_canvas.cc, the toolbar in toolbar.cc.
#pragma once

#include <imgui.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/viewer/document.h"
#include "pipeprof/viewer/name_filter.h"
#include "pipeprof/viewer/palette.h"
#include "pipeprof/viewer/time_view.h"
#include "pipeprof/viewer/timeline_layout.h"
#include "rows.h"
#include "windows.h"

namespace pipeprof::viewer {

class TimelineView {
 public:
  explicit TimelineView(ScreenMetrics metrics = {});

  // Replaces the open traces. Several traces are stacked on one relative time axis.
  void set_documents(std::vector<std::unique_ptr<Document>> docs);
  // Loads and opens files; failures are reported (stderr and an error window) and the traces
  // already open stay. Returns false when any file failed.
  bool open_files(const std::vector<std::string>& paths);

  void show_range_ms(double start_ms, double end_ms);
  void fit();
  void set_show_flows(bool show) { show_flows_ = show; }
  // Reports an error: printed on stderr and shown in a modal window.
  void report_error(const std::string& message);

  // Draws one frame of the whole interface into a window of the given size.
  void frame(float width, float height);

  // For the feature windows.
  const std::vector<std::unique_ptr<Document>>& documents() const { return docs_; }
  const NameFilter& filter(size_t doc) const { return filters_[doc]; }
  const std::string& search_text() const { return search_; }
  std::optional<SpanRef> selected() const { return selected_; }
  const trace::Span* selected_span() const;
  // The selected time range in each trace's relative time.
  std::optional<std::pair<double, double>> range() const { return range_; }
  TimeView& time_view() { return view_; }
  void zoom_to(double rel_start_ns, double rel_end_ns);
  void select(std::optional<SpanRef> span);
  StatsWindow& stats_window() { return stats_; }
  StepsWindow& steps_window() { return steps_; }
  bool quit_requested() const { return quit_; }

 private:
  void rebuild_layout();
  void set_search(const std::string& text);
  void draw_toolbar(float width);
  void draw_canvas(ImVec2 pos, ImVec2 size);
  void draw_ruler(ImDrawList* draw, float left, float right, float top, float bottom);
  void draw_rows(ImDrawList* draw, float left, float right, float top, float bottom);
  void draw_labels(ImDrawList* draw, float right, float top, float bottom);
  void draw_range(ImDrawList* draw, float left, float right, float top, float bottom);
  void handle_mouse(float left, float top, float bottom);
  void handle_keys();
  void draw_tooltip(const Hit& hit);
  void draw_error_window();
  RowContext row_context(ImDrawList* draw, uint32_t doc, float left, float right, float top,
                         float bottom) const;

  ScreenMetrics metrics_;
  std::vector<std::unique_ptr<Document>> docs_;
  std::vector<const Document*> doc_ptrs_;
  std::vector<std::vector<Rgba>> colours_;  // per document, per string id
  std::vector<NameFilter> filters_;         // per document (string ids differ)
  LayoutOptions layout_options_;
  TimelineLayout layout_;
  TimeView view_;
  bool fitted_ = false;
  std::optional<std::pair<double, double>> pending_range_ns_;  // applied once the width is known
  float scroll_y_ = 0.0f;
  float rows_height_ = 0.0f;  // visible height of the rows area

  std::string search_;
  bool focus_search_ = false;
  bool show_flows_ = false;
  std::optional<SpanRef> selected_;
  std::optional<std::pair<double, double>> range_;

  enum class Drag { kNone, kPan, kSelect };
  Drag drag_ = Drag::kNone;
  ImVec2 press_pos_;
  bool dragged_ = false;
  double press_time_ = 0.0;

  std::vector<std::string> pending_errors_;
  std::string shown_error_;
  bool quit_ = false;

  StatsWindow stats_;
  StepsWindow steps_;
  DetailsPanel details_;
  HelpWindow help_;
  OpenDialog open_dialog_;
};

}  // namespace pipeprof::viewer
