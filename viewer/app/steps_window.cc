#include <imgui.h>

#include <string>

#include "pipeprof/trace/analysis.h"
#include "timeline_view.h"
#include "windows.h"

namespace pipeprof::viewer {
namespace {

constexpr float kChartHeight = 150.0f;

void draw_legend() {
  for (size_t c = 0; c < trace::kStepCategories; ++c) {
    const auto cat = static_cast<trace::StepCategory>(c);
    const std::string name(trace::step_category_name(cat));
    const float h = ImGui::GetTextLineHeight();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float need = h + style.ItemSpacing.x * 2 + ImGui::CalcTextSize(name.c_str()).x;
    if (c > 0) {
      ImGui::SameLine();
      if (ImGui::GetContentRegionAvail().x < need) ImGui::NewLine();  // wrap the legend
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), category_colour(cat));
    ImGui::Dummy(ImVec2(h, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(name.c_str());
  }
}

// The stacked bars; returns the clicked bar.
std::optional<size_t> draw_chart(const StepsModel& m) {
  const float width = std::max(50.0f, ImGui::GetContentRegionAvail().x);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("chart", ImVec2(width, kChartHeight));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(origin, ImVec2(origin.x + width, origin.y + kChartHeight),
                      kCanvasBackground);
  const size_t n = m.bars.size();
  const double scale = m.max_ns > 0 ? static_cast<double>(kChartHeight) / m.max_ns : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const auto [x0, x1] = bar_extent(n, width, i);
    double y = origin.y + kChartHeight;
    for (size_t c = 0; c < trace::kStepCategories; ++c) {
      const double h = m.bars[i].segment_ns[c] * scale;
      if (h <= 0) continue;
      draw->AddRectFilled(ImVec2(origin.x + static_cast<float>(x0), static_cast<float>(y - h)),
                          ImVec2(origin.x + static_cast<float>(x1), static_cast<float>(y)),
                          category_colour(static_cast<trace::StepCategory>(c)));
      y -= h;
    }
  }
  if (!hovered) return std::nullopt;
  const auto hit = bar_at(n, width, ImGui::GetIO().MousePos.x - origin.x);
  if (!hit) return std::nullopt;
  const StepBar& b = m.bars[*hit];
  ImGui::BeginTooltip();
  ImGui::Text("%s: %s (click to zoom the timeline to it)", b.name.c_str(),
              format_duration(b.duration_ns()).c_str());
  ImGui::Text("DataLoader wait (raw): %s", format_duration(b.dataloader_ns).c_str());
  for (size_t c = 0; c < trace::kStepCategories; ++c) {
    const double pct = b.duration_ns() > 0 ? 100.0 * b.segment_ns[c] / b.duration_ns() : 0.0;
    ImGui::Text("  %-14s %12s  %5.1f%%",
                std::string(trace::step_category_name(static_cast<trace::StepCategory>(c))).c_str(),
                format_duration(b.segment_ns[c]).c_str(), pct);
  }
  ImGui::EndTooltip();
  return clicked ? hit : std::nullopt;
}

}  // namespace

void StepsWindow::draw(TimelineView& view) {
  if (!open_) return;
  const auto& docs = view.documents();
  if (models_.size() != docs.size()) {
    models_.clear();
    for (const auto& doc : docs)
      models_.push_back(make_steps_model(trace::analyze(doc->trace), doc->origin_ns()));
  }
  ImGui::SetNextWindowSize(ImVec2(640.0f, 360.0f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(20.0f, ImGui::GetIO().DisplaySize.y - 380.0f),
                          ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Steps", &open_)) {
    ImGui::End();
    return;
  }
  draw_legend();
  for (size_t d = 0; d < models_.size(); ++d) {
    const StepsModel& m = models_[d];
    ImGui::PushID(static_cast<int>(d));
    ImGui::Separator();
    ImGui::TextUnformatted(docs[d]->title.c_str());
    if (m.empty()) {
      ImGui::TextDisabled("No steps: no ProfilerStep#N spans and no train loop.");
      for (const std::string& n : m.notes)
        ImGui::TextWrapped("note: %s", n.c_str());
      ImGui::PopID();
      continue;
    }
    ImGui::Text("%zu steps (%s): input-bound %.1f%%, %s", m.bars.size(), m.source.c_str(),
                m.input_bound_pct, m.verdict.c_str());
    if (const auto clicked = draw_chart(m)) {
      const auto [a, b] = zoom_range(m.bars[*clicked]);
      view.zoom_to(a, b);
    }
    for (const std::string& s : m.suggestions)
      ImGui::TextWrapped("suggestion: %s", s.c_str());
    ImGui::PopID();
  }
  ImGui::End();
}

}  // namespace pipeprof::viewer
