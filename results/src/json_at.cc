#include "pipeprof/results/json_at.h"

#include <fmt/format.h>

#include "pipeprof/results/results_error.h"

namespace pipeprof::results {

JsonAt JsonAt::at(std::string_view key) const {
  return {source, path.empty() ? std::string(key) : fmt::format("{}.{}", path, key)};
}

JsonAt JsonAt::at(size_t index) const { return {source, fmt::format("{}[{}]", path, index)}; }

void JsonAt::fail(const std::string& what) const {
  throw ResultsError(fmt::format("{}: {}: {}", source, path.empty() ? "$" : path, what));
}

namespace json_read {

const nlohmann::json& object(const nlohmann::json& j, const JsonAt& at) {
  if (!j.is_object()) at.fail(fmt::format("expected an object, got {}", j.type_name()));
  return j;
}

const nlohmann::json* find(const nlohmann::json& j, std::string_view key) {
  auto it = j.find(std::string(key));
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

const nlohmann::json& need(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) at.fail(fmt::format("missing required key \"{}\"", key));
  return *v;
}

double as_number(const nlohmann::json& v, const JsonAt& at) {
  if (!v.is_number()) at.fail(fmt::format("expected a number, got {}", v.dump()));
  return v.get<double>();
}

int64_t as_integer(const nlohmann::json& v, const JsonAt& at) {
  if (!v.is_number_integer()) at.fail(fmt::format("expected an integer, got {}", v.dump()));
  return v.get<int64_t>();
}

std::string as_text(const nlohmann::json& v, const JsonAt& at) {
  if (!v.is_string()) at.fail(fmt::format("expected a string, got {}", v.dump()));
  return v.get<std::string>();
}

bool as_flag(const nlohmann::json& v, const JsonAt& at) {
  if (!v.is_boolean()) at.fail(fmt::format("expected true or false, got {}", v.dump()));
  return v.get<bool>();
}

double number(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  return as_number(need(j, key, at), at.at(key));
}

int64_t integer(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  return as_integer(need(j, key, at), at.at(key));
}

std::string text(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  return as_text(need(j, key, at), at.at(key));
}

std::optional<double> opt_number(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  const nlohmann::json* v = find(j, key);
  return v ? std::optional<double>(as_number(*v, at.at(key))) : std::nullopt;
}

std::optional<int64_t> opt_integer(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  const nlohmann::json* v = find(j, key);
  return v ? std::optional<int64_t>(as_integer(*v, at.at(key))) : std::nullopt;
}

std::optional<std::string> opt_text(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  const nlohmann::json* v = find(j, key);
  return v ? std::optional<std::string>(as_text(*v, at.at(key))) : std::nullopt;
}

bool flag(const nlohmann::json& j, std::string_view key, const JsonAt& at, bool otherwise) {
  const nlohmann::json* v = find(j, key);
  return v ? as_flag(*v, at.at(key)) : otherwise;
}

std::vector<double> numbers(const nlohmann::json& j, std::string_view key, const JsonAt& at) {
  return list(j, key, at, [](const nlohmann::json& v, const JsonAt& a) { return as_number(v, a); });
}

}  // namespace json_read
}  // namespace pipeprof::results
