// A small structural check of a JSON document against results/schema/results.schema.json: every
// "required" key is present, "type", "const" and "enum" hold, no key outside "properties" where
// "additionalProperties" is false, through "properties", "items" and local "$ref"s. It is not a full JSON Schema validator (none is packaged); it is what keeps the writer
// and the schema from drifting apart.
#pragma once

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipeprof::results::testing {

inline bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

inline void check_schema(const nlohmann::json& root, const nlohmann::json& schema,
                         const nlohmann::json& value, const std::string& path,
                         std::vector<std::string>& problems) {
  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    const std::string target = ref->get<std::string>();  // "#/$defs/name"
    const nlohmann::json& resolved = root.at(nlohmann::json::json_pointer(target.substr(1)));
    check_schema(root, resolved, value, path, problems);
  }
  if (auto c = schema.find("const"); c != schema.end() && *c != value) {
    problems.push_back(path + ": expected " + c->dump() + ", got " + value.dump());
  }
  if (auto e = schema.find("enum"); e != schema.end() &&
                                     std::find(e->begin(), e->end(), value) == e->end()) {
    problems.push_back(path + ": expected one of " + e->dump() + ", got " + value.dump());
  }
  if (auto t = schema.find("type"); t != schema.end()) {
    bool ok = false;
    if (t->is_string()) {
      ok = has_type(value, t->get<std::string>());
    } else {
      for (const auto& one : *t)
        ok |= has_type(value, one.get<std::string>());
    }
    if (!ok) {
      problems.push_back(path + ": expected type " + t->dump() + ", got " + value.dump());
      return;
    }
  }
  if (value.is_object()) {
    if (auto req = schema.find("required"); req != schema.end()) {
      for (const auto& key : *req)
        if (!value.contains(key.get<std::string>()))
          problems.push_back(path + ": missing required key " + key.dump());
    }
    if (auto props = schema.find("properties"); props != schema.end()) {
      for (const auto& [key, sub] : props->items())
        if (value.contains(key)) check_schema(root, sub, value[key], path + "." + key, problems);
    }
    if (auto extra = schema.find("additionalProperties"); extra != schema.end() && *extra == false) {
      const auto props = schema.find("properties");
      for (const auto& [key, v] : value.items())
        if (props == schema.end() || !props->contains(key))
          problems.push_back(path + ": key \"" + key + "\" is not in the schema");
    }
  }
  if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i)
        check_schema(root, *items, value[i], path + "[" + std::to_string(i) + "]", problems);
    }
  }
}

inline std::vector<std::string> schema_problems(const nlohmann::json& schema,
                                                const nlohmann::json& doc) {
  std::vector<std::string> problems;
  check_schema(schema, schema, doc, "$", problems);
  return problems;
}

// The problems, one per line.
inline std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += p + "\n";
  return out;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace pipeprof::results::testing
