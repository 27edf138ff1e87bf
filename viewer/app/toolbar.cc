// The toolbar of TimelineView: open, fit, search, flows, statistics, help, and what is shown.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>

#include "timeline_view.h"

namespace pipeprof::viewer {

void TimelineView::draw_toolbar(float width) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(ImVec2(0.0f, 0.0f), ImVec2(width, metrics_.toolbar_height), rgba(44, 47, 54));
  ImGui::SetCursorPos(ImVec2(6.0f, (metrics_.toolbar_height - ImGui::GetFrameHeight()) * 0.5f));
  if (ImGui::Button("Open...")) open_dialog_.open();
  ImGui::SameLine();
  if (ImGui::Button("Fit")) fit();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220.0f);
  if (focus_search_) {
    ImGui::SetKeyboardFocusHere();
    focus_search_ = false;
  }
  std::string text = search_;
  if (ImGui::InputTextWithHint("##search", "search names (Ctrl+F)", &text)) set_search(text);
  ImGui::SameLine();
  ImGui::Checkbox("Flows", &show_flows_);
  ImGui::SameLine();
  if (ImGui::Button("Statistics")) stats_.toggle();
  ImGui::SameLine();
  if (ImGui::Button("Steps")) steps_.toggle();
  ImGui::SameLine();
  if (ImGui::Button("Help")) help_.toggle();
  ImGui::SameLine();

  std::string status = "view " + format_duration(view_.end() - view_.start());
  if (range_) status += "   range " + format_duration(range_->second - range_->first);
  if (!search_.empty() && !filters_.empty()) {
    size_t names = 0;
    for (const NameFilter& f : filters_)
      names += f.matching_names();
    status += "   " + std::to_string(names) + " names match";
  }
  size_t spans = 0;
  for (const auto& doc : docs_)
    spans += doc->trace.span_count();
  status += "   " + std::to_string(spans) + " spans";
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(status.c_str());
}

}  // namespace pipeprof::viewer
