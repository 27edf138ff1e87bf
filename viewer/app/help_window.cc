#include <imgui.h>

#include "windows.h"

namespace pipeprof::viewer {

void HelpWindow::draw() {
  if (!open_) return;
  ImGui::SetNextWindowSize(ImVec2(460.0f, 0.0f), ImGuiCond_FirstUseEver);
  if (ImGui::Begin("Help", &open_, ImGuiWindowFlags_AlwaysAutoResize)) {
    static constexpr const char* kKeys[][2] = {
        {"mouse wheel", "zoom in and out at the cursor"},
        {"Shift + wheel", "scroll the lanes up and down"},
        {"drag", "pan the timeline (and scroll the lanes)"},
        {"Shift + drag, right drag", "select a time range (its duration is shown)"},
        {"click a span", "select it: details panel"},
        {"double click", "zoom to the selected span"},
        {"click a folded block", "zoom into the spans it folds"},
        {"click a process name", "fold or unfold its lanes"},
        {"Left/Right, A/D", "pan"},
        {"W/S, +/-", "zoom in and out"},
        {"Up/Down, PgUp/PgDn", "scroll the lanes"},
        {"F, Home", "fit the whole trace"},
        {"Z", "zoom to the selected range or span"},
        {"Ctrl+F", "search names (matches are highlighted, others dimmed)"},
        {"T", "statistics window"},
        {"L", "show or hide flow arrows"},
        {"Ctrl+O", "open a trace (or drop files onto the window)"},
        {"Esc", "clear the selection"},
        {"F1, ?", "this help"},
        {"Ctrl+Q", "quit"}};
    if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      for (const auto& row : kKeys) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextUnformatted(row[0]);
        ImGui::TableSetColumnIndex(1);
        ImGui::TextUnformatted(row[1]);
      }
      ImGui::EndTable();
    }
    ImGui::TextDisabled("Spans narrower than 3 px fold into grey blocks labelled with a count.");
  }
  ImGui::End();
}

}  // namespace pipeprof::viewer
