#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <system_error>

#include "windows.h"

namespace pipeprof::viewer {

void OpenDialog::open() {
  open_requested_ = true;
  std::error_code ec;
  if (folder_.empty()) folder_ = std::filesystem::current_path(ec);
  if (path_.empty()) path_ = folder_.string() + "/";
  list(folder_);
}

void OpenDialog::list(const std::filesystem::path& folder) {
  entries_.clear();
  error_.clear();
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  if (ec) {
    error_ = folder.string() + ": " + ec.message();
    return;
  }
  folder_ = folder;
  for (const auto& entry : it) {
    std::error_code type_ec;
    const bool dir = entry.is_directory(type_ec);
    const std::string name = entry.path().filename().string();
    if (dir || entry.path().extension() == ".json") entries_.emplace_back(name, dir);
  }
  std::sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second : a.first < b.first;  // folders first
  });
}

std::optional<std::string> OpenDialog::draw() {
  if (open_requested_) {
    ImGui::OpenPopup("Open trace");
    open_requested_ = false;
  }
  std::optional<std::string> chosen;
  ImGui::SetNextWindowSize(ImVec2(560.0f, 420.0f), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open trace", nullptr)) return chosen;
  ImGui::TextUnformatted("Path (a .json trace, or a folder to list):");
  ImGui::SetNextItemWidth(-1.0f);
  const bool entered = ImGui::InputText("##path", &path_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::TextDisabled("%s", folder_.string().c_str());
  const float list_height =
      ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() * 2;
  if (ImGui::BeginChild("files", ImVec2(0.0f, list_height), true)) {
    if (ImGui::Selectable("../", false, ImGuiSelectableFlags_AllowDoubleClick) &&
        ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
      list(folder_.parent_path());
    }
    for (const auto& [name, dir] : entries_) {
      const std::string label = dir ? name + "/" : name;
      const std::string full = (folder_ / name).string();
      if (ImGui::Selectable(label.c_str(), path_ == full, ImGuiSelectableFlags_AllowDoubleClick)) {
        path_ = full;
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
          if (dir) {
            list(folder_ / name);
            break;  // entries_ changed
          }
          chosen = full;
        }
      }
    }
  }
  ImGui::EndChild();
  if (!error_.empty()) ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.4f, 1.0f), "%s", error_.c_str());
  const bool open_clicked = ImGui::Button("Open");
  ImGui::SameLine();
  const bool cancel =
      ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
  if ((entered || open_clicked) && !chosen) {
    std::error_code ec;
    if (std::filesystem::is_directory(path_, ec)) {
      list(path_);
    } else {
      chosen = path_;
    }
  }
  if (chosen || cancel) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
  return chosen;
}

}  // namespace pipeprof::viewer
