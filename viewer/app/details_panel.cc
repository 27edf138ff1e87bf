#include <imgui.h>

#include <nlohmann/json.hpp>
#include <string>

#include "timeline_view.h"
#include "windows.h"

namespace pipeprof::viewer {

void DetailsPanel::draw(TimelineView& view) {
  const trace::Span* span = view.selected_span();
  if (span == nullptr) return;
  const SpanRef ref = *view.selected();
  const Document& doc = *view.documents()[ref.doc];
  const trace::Lane& lane = doc.trace.lanes[ref.lane];
  ImGui::SetNextWindowSize(ImVec2(420.0f, 320.0f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(20.0f, ImGui::GetIO().DisplaySize.y - 340.0f),
                          ImGuiCond_FirstUseEver);
  bool open = true;
  if (ImGui::Begin("Details", &open)) {
    const std::string name(doc.trace.name(*span));
    ImGui::TextWrapped("%s", name.empty() ? "(unnamed)" : name.c_str());
    ImGui::Separator();
    const auto rel = static_cast<double>(span->start_ns - doc.origin_ns());
    ImGui::Text("trace     %s", doc.title.c_str());
    ImGui::Text("lane      %s",
                lane.name.empty() ? std::to_string(lane.tid).c_str() : lane.name.c_str());
    ImGui::Text("start     %s", format_duration(rel).c_str());
    ImGui::Text("end       %s", format_duration(rel + static_cast<double>(span->dur_ns)).c_str());
    ImGui::Text("duration  %s", format_duration(static_cast<double>(span->dur_ns)).c_str());
    ImGui::Text("depth     %u", span->depth);
    if (span->category != trace::kNoStr)
      ImGui::Text("category  %s", doc.trace.strings.str(span->category).c_str());
    if (ImGui::Button("Zoom to span")) view.zoom_to(rel, rel + static_cast<double>(span->dur_ns));
    ImGui::SameLine();
    if (ImGui::Button("Statistics of this name"))
      view.stats_window().open(StatsWindow::Source::kSelectedName);
    if (span->args != trace::kNoArgs && span->args < doc.trace.args.size()) {
      ImGui::Separator();
      ImGui::TextUnformatted("args");
      const std::string& text = doc.trace.args[span->args];
      const auto parsed = nlohmann::json::parse(text, nullptr, false);
      const std::string shown = parsed.is_discarded() ? text : parsed.dump(2);
      ImGui::BeginChild("args", ImVec2(0.0f, 0.0f), true);
      ImGui::TextUnformatted(shown.c_str());
      ImGui::EndChild();
    }
  }
  ImGui::End();
  if (!open) view.select(std::nullopt);
}

}  // namespace pipeprof::viewer
