// The viewer's feature windows, one class per window, each implemented in its own file:
// stats_window.cc, steps_window.cc, details_panel.cc, help_window.cc, open_dialog.cc.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/viewer/span_stats.h"
#include "pipeprof/viewer/step_bars.h"

namespace pipeprof::viewer {

class TimelineView;

// Statistics of span durations (count, total, mean, p50, p90, p99, histogram) for the selected
// span's name, the search text, or the selected time range; one section per open trace.
class StatsWindow {
 public:
  enum class Source { kSelectedName, kSearch, kRange };
  void open(Source source);
  void toggle() { open_ = !open_; }
  bool is_open() const { return open_; }
  void draw(TimelineView& view);
  void invalidate() { cache_key_.clear(); }

 private:
  struct Section {
    std::string title;
    std::string what;
    SpanStats stats;
    std::vector<NameTotal> top;  // by total time (range source)
    std::vector<std::string> top_names;
  };
  std::string key(const TimelineView& view) const;
  void recompute(const TimelineView& view);

  bool open_ = false;
  Source source_ = Source::kSelectedName;
  std::string cache_key_;
  std::vector<Section> sections_;
};

// One stacked bar per training step (TensorBoard's step-time categories), the verdict and the
// suggestions, per open trace; clicking a bar zooms the timeline to that step.
class StepsWindow {
 public:
  void toggle() { open_ = !open_; }
  void set_open(bool open) { open_ = open; }
  bool is_open() const { return open_; }
  void draw(TimelineView& view);
  void invalidate() { models_.clear(); }

 private:
  bool open_ = false;
  std::vector<StepsModel> models_;  // per document, computed when the window first needs them
};

// The selected span: name, category, lane, start, duration, nesting, and its args as JSON.
class DetailsPanel {
 public:
  void draw(TimelineView& view);
};

// The keys and mouse actions.
class HelpWindow {
 public:
  void toggle() { open_ = !open_; }
  bool is_open() const { return open_; }
  void draw();

 private:
  bool open_ = false;
};

// Open a trace: a path field and the folder's listing (folders and .json files).
class OpenDialog {
 public:
  void open();
  // The chosen file when the user opens one this frame.
  std::optional<std::string> draw();

 private:
  void list(const std::filesystem::path& folder);

  bool open_requested_ = false;
  std::string path_;
  std::filesystem::path folder_;
  std::vector<std::pair<std::string, bool>> entries_;  // name, is a folder
  std::string error_;
};

}  // namespace pipeprof::viewer
