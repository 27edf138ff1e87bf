// The timeline canvas of TimelineView: time ruler, lane labels, rows, the selected range, hover
// tooltips and the mouse and keyboard controls.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "timeline_view.h"

namespace pipeprof::viewer {
namespace {

constexpr Rgba kLabelBackground = rgba(24, 26, 30);
constexpr Rgba kGrid = rgba(255, 255, 255, 16);
constexpr Rgba kRangeFill = rgba(110, 160, 255, 45);
constexpr Rgba kRangeEdge = rgba(140, 180, 255, 220);

bool key_pressed(int glfw_key) {
  return ImGui::IsKeyPressed(glfw_key, true);
}

}  // namespace

void TimelineView::draw_canvas(ImVec2 pos, ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float left = pos.x + metrics_.label_width;
  const float right = pos.x + size.x;
  const float rows_top = pos.y + metrics_.ruler_height;
  const float bottom = pos.y + size.y;
  view_.set_width(std::max(1.0f, right - left));
  if (!fitted_) fit();
  if (pending_range_ns_) {
    view_.show(pending_range_ns_->first, pending_range_ns_->second);
    pending_range_ns_.reset();
  }
  rows_height_ = std::max(0.0f, bottom - rows_top);
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, layout_.height() - rows_height_));

  ImGui::SetCursorScreenPos(pos);
  ImGui::InvisibleButton("##canvas", ImVec2(std::max(1.0f, size.x), std::max(1.0f, size.y)),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  handle_mouse(left, rows_top, bottom);

  draw->PushClipRect(ImVec2(left, rows_top), ImVec2(right, bottom), true);
  for (const double t : tick_times(view_, 90.0)) {
    const float x = left + static_cast<float>(view_.to_px(t));
    draw->AddLine(ImVec2(x, rows_top), ImVec2(x, bottom), kGrid);
  }
  draw_rows(draw, left, right, rows_top, bottom);
  draw_range(draw, left, right, rows_top, bottom);
  draw->PopClipRect();

  draw->PushClipRect(ImVec2(left, pos.y), ImVec2(right, rows_top), true);
  draw_ruler(draw, left, right, pos.y, rows_top);
  draw->PopClipRect();

  draw->PushClipRect(ImVec2(pos.x, pos.y), ImVec2(left, bottom), true);
  draw_labels(draw, left, rows_top, bottom);
  draw->PopClipRect();

  // Where the rows continue below or above: a thin scroll indicator on the right edge.
  if (layout_.height() > rows_height_ && rows_height_ > 0.0f) {
    const float frac = rows_height_ / layout_.height();
    const float y0 = rows_top + scroll_y_ / layout_.height() * rows_height_;
    draw->AddRectFilled(ImVec2(right - 5.0f, y0), ImVec2(right - 1.0f, y0 + frac * rows_height_),
                        rgba(255, 255, 255, 60), 2.0f);
  }
}

void TimelineView::draw_ruler(ImDrawList* draw, float left, float right, float top, float bottom) {
  draw->AddRectFilled(ImVec2(left, top), ImVec2(right, bottom), rgba(40, 43, 50));
  const double step = tick_step(view_.ns_per_px(), 90.0);
  for (const double t : tick_times(view_, 90.0)) {
    const float x = left + static_cast<float>(view_.to_px(t));
    draw->AddLine(ImVec2(x, bottom - 6.0f), ImVec2(x, bottom), rgba(200, 200, 200));
    const std::string text = format_tick(t, step);
    draw->AddText(ImVec2(x + 3.0f, top + 3.0f), rgba(210, 210, 210), text.c_str());
  }
  draw->AddLine(ImVec2(left, bottom - 1.0f), ImVec2(right, bottom - 1.0f), rgba(90, 96, 110));
}

void TimelineView::draw_rows(ImDrawList* draw, float left, float right, float top, float bottom) {
  if (docs_.empty()) {
    draw->AddText(ImVec2(left + 20.0f, top + 20.0f), rgba(200, 200, 200),
                  "No trace open: press Ctrl+O, drop a .json file here, or press F1 for help.");
    return;
  }
  std::vector<RowContext> contexts;
  for (uint32_t d = 0; d < docs_.size(); ++d)
    contexts.push_back(row_context(draw, d, left, right, top, bottom));
  const auto [first, last] = layout_.rows_between(scroll_y_, scroll_y_ + rows_height_);
  for (size_t i = first; i < last; ++i) {
    const Row& row = layout_.rows()[i];
    const RowContext& ctx = contexts[row.doc];
    switch (row.kind) {
      case RowKind::kDocumentHeader:
        draw_document_header(ctx, row);
        break;
      case RowKind::kProcessHeader:
        draw_process_header(ctx, row, layout_options_.collapsed.count({row.doc, row.index}) != 0);
        break;
      case RowKind::kThreadLane:
        draw_thread_lane(ctx, row);
        break;
      case RowKind::kGpuLane:
        draw_gpu_lane(ctx, row);
        break;
      case RowKind::kCounter:
        draw_counter_row(ctx, row);
        break;
    }
    const float y = ctx.screen_y(row.y + row.height) - 0.5f;
    draw->AddLine(ImVec2(left, y), ImVec2(right, y), rgba(255, 255, 255, 12));
  }
  if (show_flows_) {
    for (const RowContext& ctx : contexts)
      draw_flows(ctx);
  }
}

void TimelineView::draw_labels(ImDrawList* draw, float right, float top, float bottom) {
  draw->AddRectFilled(ImVec2(0.0f, top - metrics_.ruler_height), ImVec2(right, bottom),
                      kLabelBackground);
  const auto [first, last] = layout_.rows_between(scroll_y_, scroll_y_ + rows_height_);
  for (size_t i = first; i < last; ++i) {
    const Row& row = layout_.rows()[i];
    const float y = top - scroll_y_ + row.y;
    const Document& doc = *docs_[row.doc];
    std::string text = row_label(doc, row);
    float indent = 18.0f;
    Rgba colour = rgba(200, 200, 200);
    if (row.kind == RowKind::kProcessHeader) {
      const bool collapsed = layout_options_.collapsed.count({row.doc, row.index}) != 0;
      text = (collapsed ? "+ " : "- ") + text;
      indent = 4.0f;
      colour = rgba(255, 255, 255);
    } else if (row.kind == RowKind::kDocumentHeader) {
      indent = 4.0f;
      colour = rgba(255, 220, 140);
    } else if (row.kind == RowKind::kGpuLane) {
      colour = rgba(160, 230, 170);
    } else if (row.kind == RowKind::kCounter) {
      colour = rgba(170, 190, 230);
    }
    draw->AddText(ImVec2(indent, y + 3.0f), colour, text.c_str());
  }
  draw->AddLine(ImVec2(right - 1.0f, top - metrics_.ruler_height), ImVec2(right - 1.0f, bottom),
                rgba(90, 96, 110));
}

void TimelineView::draw_range(ImDrawList* draw, float left, float right, float top, float bottom) {
  if (!range_) return;
  const float x0 = left + static_cast<float>(view_.to_px(range_->first));
  const float x1 = left + static_cast<float>(view_.to_px(range_->second));
  draw->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom), kRangeFill);
  draw->AddLine(ImVec2(x0, top), ImVec2(x0, bottom), kRangeEdge);
  draw->AddLine(ImVec2(x1, top), ImVec2(x1, bottom), kRangeEdge);
  const std::string text = format_duration(range_->second - range_->first);
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  const float cx = std::clamp((x0 + x1) * 0.5f - size.x * 0.5f, left + 2.0f, right - size.x - 2.0f);
  draw->AddRectFilled(ImVec2(cx - 4.0f, top + 2.0f),
                      ImVec2(cx + size.x + 4.0f, top + size.y + 6.0f), rgba(20, 30, 60, 230), 3.0f);
  draw->AddText(ImVec2(cx, top + 4.0f), rgba(255, 255, 255), text.c_str());
}

void TimelineView::handle_mouse(float left, float top, float bottom) {
  ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered();
  const ImVec2 m = io.MousePos;
  const double x = static_cast<double>(m.x - left);
  const float content_y = m.y - top + scroll_y_;
  const bool in_rows = hovered && m.x >= left && m.y >= top && m.y < bottom;
  const bool in_labels = hovered && m.x < left && m.y >= top;

  if (hovered && io.MouseWheel != 0.0f) {
    if (io.KeyShift || in_labels) {
      scroll_y_ -= io.MouseWheel * 60.0f;
    } else {
      view_.zoom_at(std::clamp(x, 0.0, view_.width()), std::pow(1.25, io.MouseWheel));
    }
  }
  if (hovered && io.MouseWheelH != 0.0f) view_.pan_px(io.MouseWheelH * 40.0);

  if (hovered && drag_ == Drag::kNone) {
    const bool left_click = ImGui::IsMouseClicked(ImGuiMouseButton_Left);
    const bool right_click = ImGui::IsMouseClicked(ImGuiMouseButton_Right);
    if (left_click || right_click) {
      drag_ = right_click || io.KeyShift ? Drag::kSelect : Drag::kPan;
      press_pos_ = m;
      dragged_ = false;
      press_time_ = view_.to_time(std::clamp(x, 0.0, view_.width()));
    }
  }
  if (drag_ != Drag::kNone) {
    if (std::abs(m.x - press_pos_.x) + std::abs(m.y - press_pos_.y) > 3.0f) dragged_ = true;
    if (dragged_ && drag_ == Drag::kPan) {
      view_.pan_px(io.MouseDelta.x);
      scroll_y_ -= io.MouseDelta.y;
    }
    if (dragged_ && drag_ == Drag::kSelect) {
      const double t = view_.to_time(std::clamp(x, 0.0, view_.width()));
      range_ = std::make_pair(std::min(press_time_, t), std::max(press_time_, t));
      stats_.invalidate();
    }
    const bool released =
        !ImGui::IsMouseDown(ImGuiMouseButton_Left) && !ImGui::IsMouseDown(ImGuiMouseButton_Right);
    if (released) {
      const Drag was = drag_;
      drag_ = Drag::kNone;
      if (!dragged_ && was == Drag::kSelect) {
        range_.reset();
        stats_.invalidate();
      }
      if (!dragged_ && was == Drag::kPan) {
        // A click: fold or unfold a process, pick a span, zoom into a folded run, or deselect.
        if (in_labels) {
          if (const auto r = layout_.row_at(content_y)) {
            const Row& row = layout_.rows()[*r];
            if (row.kind == RowKind::kProcessHeader) {
              const auto key = std::make_pair(row.doc, row.index);
              if (!layout_options_.collapsed.erase(key)) layout_options_.collapsed.insert(key);
              rebuild_layout();
            }
          }
        } else if (in_rows) {
          const auto hit = hit_test(layout_, doc_ptrs_, view_, x, content_y);
          if (hit && hit->item) {
            const Row& row = layout_.rows()[hit->row];
            const Document& doc = *docs_[row.doc];
            if (hit->item->folded()) {
              zoom_to(static_cast<double>(hit->item->start_ns - doc.origin_ns()),
                      static_cast<double>(hit->item->end_ns - doc.origin_ns()));
            } else {
              select(SpanRef{row.doc, row.index, hit->item->span});
            }
          } else {
            select(std::nullopt);
          }
        }
      }
    }
  }
  if (in_rows && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    if (const trace::Span* s = selected_span()) {
      const auto origin = static_cast<double>(docs_[selected_->doc]->origin_ns());
      zoom_to(static_cast<double>(s->start_ns) - origin, static_cast<double>(s->end_ns()) - origin);
    }
  }
  if (in_rows && (drag_ == Drag::kNone || !dragged_)) {
    if (const auto hit = hit_test(layout_, doc_ptrs_, view_, x, content_y); hit && hit->item)
      draw_tooltip(*hit);
  }
}

void TimelineView::draw_tooltip(const Hit& hit) {
  const Row& row = layout_.rows()[hit.row];
  const Document& doc = *docs_[row.doc];
  const DrawItem& item = *hit.item;
  const auto rel = [&](int64_t t) { return static_cast<double>(t - doc.origin_ns()); };
  ImGui::BeginTooltip();
  if (item.folded()) {
    ImGui::Text("%u spans folded together", item.count);
    ImGui::Text("from %s to %s (%s)", format_duration(rel(item.start_ns)).c_str(),
                format_duration(rel(item.end_ns)).c_str(),
                format_duration(static_cast<double>(item.end_ns - item.start_ns)).c_str());
    ImGui::TextDisabled("zoom in (or click) to see them one by one");
  } else {
    const trace::Span& s = doc.trace.lanes[row.index].spans[item.span];
    const std::string name(doc.trace.name(s));
    ImGui::TextUnformatted(name.empty() ? "(unnamed)" : name.c_str());
    ImGui::Separator();
    ImGui::Text("start     %s", format_duration(rel(s.start_ns)).c_str());
    ImGui::Text("duration  %s", format_duration(static_cast<double>(s.dur_ns)).c_str());
    if (s.category != trace::kNoStr)
      ImGui::Text("category  %s", doc.trace.strings.str(s.category).c_str());
    ImGui::Text("depth     %u", s.depth);
    if (s.args != trace::kNoArgs && s.args < doc.trace.args.size()) {
      std::string args = doc.trace.args[s.args];
      if (args.size() > 400) args = args.substr(0, 400) + " ...";
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 35.0f);
      ImGui::Text("args      %s", args.c_str());
      ImGui::PopTextWrapPos();
    }
  }
  ImGui::EndTooltip();
}

void TimelineView::handle_keys() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) return;
  const double step_px = view_.width() * 0.1;
  if (key_pressed(GLFW_KEY_LEFT) || key_pressed(GLFW_KEY_A)) view_.pan_px(step_px);
  if (key_pressed(GLFW_KEY_RIGHT) || key_pressed(GLFW_KEY_D)) view_.pan_px(-step_px);
  if (key_pressed(GLFW_KEY_UP)) scroll_y_ -= 40.0f;
  if (key_pressed(GLFW_KEY_DOWN)) scroll_y_ += 40.0f;
  if (key_pressed(GLFW_KEY_PAGE_UP)) scroll_y_ -= rows_height_ * 0.9f;
  if (key_pressed(GLFW_KEY_PAGE_DOWN)) scroll_y_ += rows_height_ * 0.9f;
  if (key_pressed(GLFW_KEY_W) || key_pressed(GLFW_KEY_EQUAL) || key_pressed(GLFW_KEY_KP_ADD))
    view_.zoom_at(view_.width() * 0.5, 1.25);
  if (key_pressed(GLFW_KEY_S) || key_pressed(GLFW_KEY_MINUS) || key_pressed(GLFW_KEY_KP_SUBTRACT))
    view_.zoom_at(view_.width() * 0.5, 0.8);
  if (ImGui::IsKeyPressed(GLFW_KEY_F, false) || ImGui::IsKeyPressed(GLFW_KEY_HOME, false)) {
    if (io.KeyCtrl) {
      focus_search_ = true;
    } else {
      fit();
    }
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    range_.reset();
    select(std::nullopt);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_Z, false)) {
    if (range_) {
      zoom_to(range_->first, range_->second);
    } else if (const trace::Span* s = selected_span()) {
      const auto origin = static_cast<double>(docs_[selected_->doc]->origin_ns());
      zoom_to(static_cast<double>(s->start_ns) - origin, static_cast<double>(s->end_ns()) - origin);
    }
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_L, false)) show_flows_ = !show_flows_;
  if (ImGui::IsKeyPressed(GLFW_KEY_T, false)) stats_.toggle();
  bool help = ImGui::IsKeyPressed(GLFW_KEY_F1, false);
  for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
    help = help || io.InputQueueCharacters[i] == '?';  // whatever the keyboard layout
  if (help) help_.toggle();
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_O, false)) open_dialog_.open();
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) quit_ = true;
}

}  // namespace pipeprof::viewer
