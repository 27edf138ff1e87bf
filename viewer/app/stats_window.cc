#include <imgui.h>

#include <string>

#include "timeline_view.h"
#include "windows.h"

namespace pipeprof::viewer {

void StatsWindow::open(Source source) {
  open_ = true;
  source_ = source;
  invalidate();
}

std::string StatsWindow::key(const TimelineView& view) const {
  std::string k = std::to_string(static_cast<int>(source_)) + "|" +
                  std::to_string(view.documents().size()) + "|";
  switch (source_) {
    case Source::kSelectedName:
      if (const auto s = view.selected()) {
        if (const trace::Span* span = view.selected_span())
          k += std::to_string(s->doc) + ":" + std::to_string(span->name);
      }
      break;
    case Source::kSearch:
      k += view.search_text();
      break;
    case Source::kRange:
      if (const auto r = view.range())
        k += std::to_string(r->first) + ":" + std::to_string(r->second) + "|" + view.search_text();
      break;
  }
  return k;
}

void StatsWindow::recompute(const TimelineView& view) {
  sections_.clear();
  const auto& docs = view.documents();
  // The selected span's name, looked up by text in every trace (ids differ between traces).
  std::string name_text;
  if (source_ == Source::kSelectedName) {
    const trace::Span* span = view.selected_span();
    if (span == nullptr) return;
    name_text = std::string(docs[view.selected()->doc]->trace.name(*span));
  }
  if (source_ == Source::kRange && !view.range()) return;
  for (size_t d = 0; d < docs.size(); ++d) {
    const Document& doc = *docs[d];
    SpanQuery query;
    Section section;
    section.title = doc.title;
    switch (source_) {
      case Source::kSelectedName: {
        const trace::StrId id = doc.trace.strings.find(name_text);
        if (id == trace::kNoStr) continue;
        query.name = id;
        section.what = "spans named '" + name_text + "'";
        break;
      }
      case Source::kSearch:
        query.filter = &view.filter(d);
        section.what = view.search_text().empty() ? "all spans"
                                                  : "spans matching '" + view.search_text() + "'";
        break;
      case Source::kRange: {
        const auto [a, b] = *view.range();
        const auto origin = static_cast<double>(doc.origin_ns());
        query.range =
            std::make_pair(static_cast<int64_t>(origin + a), static_cast<int64_t>(origin + b));
        if (!view.search_text().empty()) query.filter = &view.filter(d);
        section.what = "spans inside the selected " + format_duration(b - a);
        break;
      }
    }
    section.stats = compute_stats(collect_durations(doc.trace, query));
    auto top = totals_by_name(doc.trace, query);
    if (top.size() > 15) top.resize(15);
    for (const NameTotal& t : top)
      section.top_names.push_back(t.name == trace::kNoStr ? "(unnamed)"
                                                          : doc.trace.strings.str(t.name));
    section.top = std::move(top);
    sections_.push_back(std::move(section));
  }
}

void StatsWindow::draw(TimelineView& view) {
  if (!open_) return;
  ImGui::SetNextWindowSize(ImVec2(520.0f, 480.0f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x - 540.0f, 60.0f),
                          ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Statistics", &open_)) {
    ImGui::End();
    return;
  }
  int source = static_cast<int>(source_);
  ImGui::RadioButton("selected span's name", &source, static_cast<int>(Source::kSelectedName));
  ImGui::SameLine();
  ImGui::RadioButton("search", &source, static_cast<int>(Source::kSearch));
  ImGui::SameLine();
  ImGui::RadioButton("selected range", &source, static_cast<int>(Source::kRange));
  source_ = static_cast<Source>(source);
  if (const std::string k = key(view); k != cache_key_) {
    cache_key_ = k;
    recompute(view);
  }
  if (sections_.empty()) {
    ImGui::TextDisabled(source_ == Source::kSelectedName ? "Click a span to select it."
                        : source_ == Source::kRange ? "Shift-drag or right-drag to select a range."
                                                    : "No spans.");
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    const Section& s = sections_[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::Separator();
    ImGui::Text("%s: %s", s.title.c_str(), s.what.c_str());
    const SpanStats& st = s.stats;
    if (ImGui::BeginTable("stats", 4, ImGuiTableFlags_SizingFixedFit)) {
      auto cell = [](const char* label, const std::string& value) {
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", label);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(value.c_str());
      };
      cell("count", std::to_string(st.count));
      cell("total", format_duration(static_cast<double>(st.total_ns)));
      cell("mean", format_duration(st.mean_ns));
      cell("p50", format_duration(static_cast<double>(st.p50_ns)));
      cell("p90", format_duration(static_cast<double>(st.p90_ns)));
      cell("p99", format_duration(static_cast<double>(st.p99_ns)));
      cell("min", format_duration(static_cast<double>(st.min_ns)));
      cell("max", format_duration(static_cast<double>(st.max_ns)));
      ImGui::EndTable();
    }
    if (!st.histogram.counts.empty()) {
      const std::string overlay =
          format_duration(st.histogram.lo_ns) + " .. " + format_duration(st.histogram.hi_ns);
      ImGui::PlotHistogram("##histogram", st.histogram.counts.data(),
                           static_cast<int>(st.histogram.counts.size()), 0, overlay.c_str(), 0.0f,
                           FLT_MAX, ImVec2(-1.0f, 90.0f));
    }
    if (s.top.size() > 1 && ImGui::TreeNode("by name (largest total first)")) {
      for (size_t n = 0; n < s.top.size(); ++n) {
        ImGui::Text("%8zu  %12s  %s", s.top[n].count,
                    format_duration(static_cast<double>(s.top[n].total_ns)).c_str(),
                    s.top_names[n].c_str());
      }
      ImGui::TreePop();
    }
    ImGui::PopID();
  }
  ImGui::End();
}

}  // namespace pipeprof::viewer
