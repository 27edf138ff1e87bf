// What the report's sections read from a results document's entries, and how they print it.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pipeprof::results::report_fields {

// The number at `key`, when there is one.
inline std::optional<double> opt_number(const nlohmann::json& x, const char* key) {
  if (auto it = x.find(key); it != x.end() && it->is_number()) return it->get<double>();
  return std::nullopt;
}

// The string at `key`, else "".
inline std::string str(const nlohmann::json& x, const char* key) {
  if (auto it = x.find(key); it != x.end() && it->is_string()) return it->get<std::string>();
  return "";
}

// A number with `digits` decimals, or "-" for none.
inline std::string num(const std::optional<double>& v, int digits) {
  return v ? fmt::format("{:.{}f}", *v, digits) : std::string("-");
}

// Markdown table cells: no pipes or line breaks.
inline std::string cell(std::string text) {
  for (char& c : text)
    if (c == '|' || c == '\n') c = ' ';
  return text;
}

}  // namespace pipeprof::results::report_fields
