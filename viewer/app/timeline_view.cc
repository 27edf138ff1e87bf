#include "timeline_view.h"

#include <algorithm>
#include <cstdio>

namespace pipeprof::viewer {

TimelineView::TimelineView(ScreenMetrics metrics) : metrics_(metrics) {}

void TimelineView::set_documents(std::vector<std::unique_ptr<Document>> docs) {
  docs_ = std::move(docs);
  doc_ptrs_.clear();
  colours_.clear();
  filters_.assign(docs_.size(), NameFilter{});
  double longest = 0.0;
  for (const auto& doc : docs_) {
    doc_ptrs_.push_back(doc.get());
    std::vector<Rgba> colours(doc->trace.strings.size());
    for (trace::StrId id = 0; id < colours.size(); ++id)
      colours[id] = name_colour(doc->trace.strings.str(id));
    colours_.push_back(std::move(colours));
    longest = std::max(longest, doc->duration_ns());
  }
  layout_options_.collapsed.clear();
  layout_options_.document_headers = docs_.size() > 1;
  selected_.reset();
  range_.reset();
  scroll_y_ = 0.0f;
  set_search(search_);
  rebuild_layout();
  view_.set_limits(0.0, longest);
  fitted_ = false;
  stats_.invalidate();
  steps_.invalidate();
}

bool TimelineView::open_files(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<Document>> loaded;
  bool ok = true;
  for (const std::string& path : paths) {
    LoadResult r = load_document(path);
    if (r.document) {
      loaded.push_back(std::move(r.document));
    } else {
      report_error(r.error);
      ok = false;
    }
  }
  if (!loaded.empty()) set_documents(std::move(loaded));
  return ok;
}

void TimelineView::show_range_ms(double start_ms, double end_ms) {
  pending_range_ns_ = std::make_pair(start_ms * 1e6, end_ms * 1e6);
  fitted_ = true;
}

void TimelineView::fit() {
  view_.fit();
  fitted_ = true;
}

void TimelineView::report_error(const std::string& message) {
  std::fprintf(stderr, "pipeprof-viewer: %s\n", message.c_str());
  pending_errors_.push_back(message);
}

const trace::Span* TimelineView::selected_span() const {
  if (!selected_ || selected_->doc >= docs_.size()) return nullptr;
  const trace::Trace& t = docs_[selected_->doc]->trace;
  if (selected_->lane >= t.lanes.size() || selected_->span >= t.lanes[selected_->lane].spans.size())
    return nullptr;
  return &t.lanes[selected_->lane].spans[selected_->span];
}

void TimelineView::zoom_to(double rel_start_ns, double rel_end_ns) {
  const double margin = std::max(1.0, (rel_end_ns - rel_start_ns) * 0.1);
  view_.show(rel_start_ns - margin, rel_end_ns + margin);
  fitted_ = true;
}

void TimelineView::select(std::optional<SpanRef> span) {
  selected_ = span;
  stats_.invalidate();
}

void TimelineView::rebuild_layout() {
  layout_ = TimelineLayout(doc_ptrs_, layout_options_);
}

void TimelineView::set_search(const std::string& text) {
  search_ = text;
  for (size_t d = 0; d < docs_.size(); ++d) {
    filters_[d].set_text(text);
    filters_[d].prepare(docs_[d]->trace.strings);
  }
  stats_.invalidate();
}

RowContext TimelineView::row_context(ImDrawList* draw, uint32_t doc, float left, float right,
                                     float top, float bottom) const {
  RowContext ctx;
  ctx.draw = draw;
  ctx.doc = docs_[doc].get();
  ctx.doc_index = doc;
  ctx.view = &view_;
  ctx.layout = &layout_;
  ctx.filter = &filters_[doc];
  ctx.colours = &colours_[doc];
  ctx.selected = selected_;
  ctx.origin = ImVec2(left, top - scroll_y_);
  ctx.left = left;
  ctx.right = right;
  ctx.clip_top = top;
  ctx.clip_bottom = bottom;
  return ctx;
}

void TimelineView::frame(float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(0.0f, 0.0f));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0.0f, 0.0f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  ImGui::PushStyleColor(ImGuiCol_WindowBg, kCanvasBackground);
  constexpr ImGuiWindowFlags kFlags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                      ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings |
                                      ImGuiWindowFlags_NoBringToFrontOnFocus |
                                      ImGuiWindowFlags_NoScrollWithMouse;
  ImGui::Begin("##pipeprof-viewer", nullptr, kFlags);
  ImGui::PopStyleColor();
  ImGui::PopStyleVar(2);
  draw_toolbar(width);
  draw_canvas(ImVec2(0.0f, metrics_.toolbar_height),
              ImVec2(width, std::max(1.0f, height - metrics_.toolbar_height)));
  ImGui::End();

  if (const auto path = open_dialog_.draw()) open_files({*path});
  stats_.draw(*this);
  steps_.draw(*this);
  details_.draw(*this);
  help_.draw();
  draw_error_window();
  handle_keys();
}

void TimelineView::draw_error_window() {
  if (shown_error_.empty() && !pending_errors_.empty()) {
    shown_error_ = pending_errors_.front();
    pending_errors_.erase(pending_errors_.begin());
    ImGui::OpenPopup("Error");
  }
  if (ImGui::BeginPopupModal("Error", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
    ImGui::TextUnformatted(shown_error_.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::Button("OK") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter)) ||
        ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
      shown_error_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace pipeprof::viewer
