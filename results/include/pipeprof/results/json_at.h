// Reading JSON documents with every error naming the file and the JSON path of the bad value:
// a JsonAt says where a value is, and each value is read through one of these helpers, which throw
// ResultsError("<file>: <path>: <what>"). The results file's records and the other JSON documents
// pipeprof reads (storage profiles) share them.
//
//   const JsonAt at{"profile.json", ""};
//   const double mib = json_read::number(doc, "mib_per_s", at);   // "profile.json: mib_per_s: ..."
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pipeprof::results {

// Where a record is read from: the file (for messages) and the JSON path of the value.
struct JsonAt {
  std::string source;  // file name, or "<memory>"
  std::string path;    // e.g. "experiments[3].workload"
  JsonAt at(std::string_view key) const;
  JsonAt at(size_t index) const;
  [[noreturn]] void fail(const std::string& what) const;
};

namespace json_read {

// A value of a type, else ResultsError naming `at` (missing: "missing required key").
const nlohmann::json& object(const nlohmann::json& j, const JsonAt& at);
// The value at `key` (nullptr when absent or null).
const nlohmann::json* find(const nlohmann::json& j, std::string_view key);
const nlohmann::json& need(const nlohmann::json& j, std::string_view key, const JsonAt& at);
double as_number(const nlohmann::json& v, const JsonAt& at);
int64_t as_integer(const nlohmann::json& v, const JsonAt& at);
std::string as_text(const nlohmann::json& v, const JsonAt& at);
bool as_flag(const nlohmann::json& v, const JsonAt& at);
double number(const nlohmann::json& j, std::string_view key, const JsonAt& at);
int64_t integer(const nlohmann::json& j, std::string_view key, const JsonAt& at);
std::string text(const nlohmann::json& j, std::string_view key, const JsonAt& at);
std::optional<double> opt_number(const nlohmann::json& j, std::string_view key, const JsonAt& at);
std::optional<int64_t> opt_integer(const nlohmann::json& j, std::string_view key, const JsonAt& at);
std::optional<std::string> opt_text(const nlohmann::json& j, std::string_view key, const JsonAt& at);
bool flag(const nlohmann::json& j, std::string_view key, const JsonAt& at, bool otherwise);
std::vector<double> numbers(const nlohmann::json& j, std::string_view key, const JsonAt& at);

// The array at `key` (empty when there is none), each item read by `read(item, its path)`.
template <class Read>
auto list(const nlohmann::json& j, std::string_view key, const JsonAt& at, Read read) {
  using T = decltype(read(j, at));
  std::vector<T> out;
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return out;
  const JsonAt here = at.at(key);
  if (!v->is_array()) here.fail(std::string("expected an array, got ") + v->type_name());
  for (size_t i = 0; i < v->size(); ++i)
    out.push_back(read((*v)[i], here.at(i)));
  return out;
}

// The object at `key`, read by `read(object, its path)`, when there is one.
template <class Read>
auto part(const nlohmann::json& j, std::string_view key, const JsonAt& at, Read read) {
  using T = decltype(read(j, at));
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return std::optional<T>();
  const JsonAt here = at.at(key);
  return std::optional<T>(read(object(*v, here), here));
}

}  // namespace json_read
}  // namespace pipeprof::results
