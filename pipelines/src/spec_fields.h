// Reads the fields of one JSON object of a spec, turning every problem into a SpecError of the
// form "<where>.<key>: expected <what>, got <value>", where `where` is "<source>: <json path>".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::spec_detail {

// What "$element" refers to while a nested pipeline is parsed: the outer element, or (when the
// spec is only being validated) nothing, in which case references resolve to a valid placeholder.
struct ElementScope {
  bool allowed = false;            // inside interleave's pipeline
  const Element* outer = nullptr;  // nullptr while validating
};

class Fields {
 public:
  Fields(const nlohmann::json& object, std::string where, ElementScope scope = {});

  const std::string& where() const { return where_; }
  const nlohmann::json& raw_object() const { return object_; }
  ElementScope scope() const { return scope_; }
  std::string path(const std::string& key) const { return where_ + "." + key; }
  bool has(const std::string& key) const { return object_.contains(key); }
  const nlohmann::json& raw(const std::string& key) const;  // required

  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt,
                  int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  double number(const std::string& key, std::optional<double> fallback = std::nullopt,
                double min = -std::numeric_limits<double>::infinity()) const;
  bool boolean(const std::string& key, std::optional<bool> fallback = std::nullopt) const;
  std::string string(const std::string& key,
                     std::optional<std::string> fallback = std::nullopt) const;
  // A positive integer (or within [min, max]) or "autotune" (kAutotune).
  int64_t tunable(const std::string& key, std::optional<int64_t> fallback, int64_t min = 1,
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  // An object (or the empty object when absent and optional).
  const nlohmann::json& object(const std::string& key, bool required = false) const;
  // A list of shapes: `shape` (one shape) or `shapes` (a list of shapes).
  std::vector<Shape> shapes() const;
  // A tensor value or element: a JSON number/array, or "$element" / "$element[k]".
  Element element(const std::string& key, const std::string& dtype_key) const;

  // Fails on any key not in `known`.
  void only(std::initializer_list<const char*> known) const;

  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const nlohmann::json& got) const;

 private:
  // Resolves "$element" / "$element[k]" at `key` to a number; nullopt if not a reference.
  std::optional<double> reference(const std::string& key, double placeholder) const;

  const nlohmann::json& object_;
  std::string where_;
  ElementScope scope_;
};

// "got ..." text for a JSON value: short, and says "nothing" for a missing value.
std::string describe(const nlohmann::json& value);

}  // namespace pipeprof::pipelines::spec_detail
