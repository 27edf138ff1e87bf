#include "spec_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/memory_limit.h"

namespace pipeprof::pipelines::spec_detail {
namespace {

const nlohmann::json kMissing;  // null: stands for an absent key

std::string positive_or_autotune(int64_t min) {
  return min == 1 ? "a positive integer or \"autotune\""
                  : fmt::format("an integer >= {} or \"autotune\"", min);
}

}  // namespace

std::string describe(const nlohmann::json& value) {
  if (value.is_null()) return "nothing";
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Fields::Fields(const nlohmann::json& object, std::string where, ElementScope scope)
    : object_(object), where_(std::move(where)), scope_(scope) {
  if (!object_.is_object()) {
    throw SpecError(fmt::format("{}: expected an object, got {}", where_, describe(object_)));
  }
}

void Fields::fail(const std::string& key, const std::string& expected,
                  const nlohmann::json& got) const {
  throw SpecError(fmt::format("{}: expected {}, got {}", path(key), expected, describe(got)));
}

const nlohmann::json& Fields::raw(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end()) fail(key, "a value", kMissing);
  return *it;
}

std::optional<double> Fields::reference(const std::string& key, double placeholder) const {
  const auto& v = object_.at(key);
  if (!v.is_string()) return std::nullopt;
  static const std::regex kRef(R"(\$element(?:\[(\d+)\])?)");
  std::smatch m;
  const std::string s = v.get<std::string>();
  if (!std::regex_match(s, m, kRef)) return std::nullopt;
  if (!scope_.allowed) {
    throw SpecError(
        fmt::format("{}: \"{}\" is only available inside an interleave's pipeline", path(key), s));
  }
  if (scope_.outer == nullptr) return placeholder;
  const size_t k = m[1].matched ? std::stoul(m[1].str()) : 0;
  if (k >= scope_.outer->size()) {
    throw SpecError(fmt::format("{}: \"{}\" refers to component {}, but the element has {}",
                                path(key), s, k, scope_.outer->size()));
  }
  try {
    return (*scope_.outer)[k].as_double();
  } catch (const std::exception& e) {
    throw SpecError(fmt::format("{}: \"{}\": {}", path(key), s, e.what()));
  }
}

int64_t Fields::integer(const std::string& key, std::optional<int64_t> fallback, int64_t min,
                        int64_t max) const {
  const std::string expected = min == 0   ? "a non-negative integer"
                               : min == 1 ? "a positive integer"
                               : min == std::numeric_limits<int64_t>::min()
                                   ? "an integer"
                                   : fmt::format("an integer >= {}", min);
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (fallback) return *fallback;
    fail(key, expected, kMissing);
  }
  int64_t value = 0;
  if (auto ref = reference(key, static_cast<double>(std::max<int64_t>(min, 0)))) {
    if (*ref != std::floor(*ref)) fail(key, expected + " (from the element)", *ref);
    value = static_cast<int64_t>(*ref);
  } else if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max)) {
    fail(key, fmt::format("an integer <= {}", max), *it);
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
  } else if (it->is_number_float() && it->get<double>() == std::floor(it->get<double>()) &&
             std::abs(it->get<double>()) < 9.2e18) {
    value = static_cast<int64_t>(it->get<double>());
  } else {
    fail(key, expected, *it);
  }
  if (value < min) fail(key, expected, value);
  if (value > max) fail(key, fmt::format("an integer <= {}", max), value);
  return value;
}

double Fields::number(const std::string& key, std::optional<double> fallback, double min) const {
  const std::string expected = min == 0 ? "a non-negative number" : "a number";
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (fallback) return *fallback;
    fail(key, expected, kMissing);
  }
  double value = 0;
  if (auto ref = reference(key, std::max(min, 0.0))) {
    value = *ref;
  } else if (it->is_number()) {
    value = it->get<double>();
  } else {
    fail(key, expected, *it);
  }
  if (!std::isfinite(value) || value < min) fail(key, expected, value);
  return value;
}

bool Fields::boolean(const std::string& key, std::optional<bool> fallback) const {
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (fallback) return *fallback;
    fail(key, "true or false", kMissing);
  }
  if (!it->is_boolean()) fail(key, "true or false", *it);
  return it->get<bool>();
}

std::string Fields::string(const std::string& key, std::optional<std::string> fallback) const {
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (fallback) return *fallback;
    fail(key, "a string", kMissing);
  }
  if (!it->is_string()) fail(key, "a string", *it);
  return it->get<std::string>();
}

int64_t Fields::tunable(const std::string& key, std::optional<int64_t> fallback, int64_t min,
                        int64_t max) const {
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (fallback) return *fallback;
    fail(key, positive_or_autotune(min), kMissing);
  }
  if (it->is_string() && it->get<std::string>() == "autotune") return -1;  // kAutotune
  if (it->is_number_integer() && it->get<int64_t>() >= min) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max)) {
      fail(key, fmt::format("an integer <= {} or \"autotune\"", max), *it);
    }
    if (it->get<int64_t>() > max)
      fail(key, fmt::format("an integer <= {} or \"autotune\"", max), *it);
    return it->get<int64_t>();
  }
  if (it->is_string() && reference(key, static_cast<double>(min)))
    return integer(key, std::nullopt, min);
  fail(key, positive_or_autotune(min), *it);
}

const nlohmann::json& Fields::object(const std::string& key, bool required) const {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = object_.find(key);
  if (it == object_.end()) {
    if (required) fail(key, "an object", kMissing);
    return kEmpty;
  }
  if (!it->is_object()) fail(key, "an object", *it);
  return *it;
}

std::vector<Shape> Fields::shapes() const {
  auto read_shape = [&](const nlohmann::json& v, const std::string& key) {
    if (!v.is_array()) fail(key, "a shape (a list of non-negative integers)", v);
    Shape shape;
    long double values = 1;
    for (const auto& d : v) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 ||
          (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t{INT64_MAX})) {
        fail(key, "a shape (a list of non-negative integers)", v);
      }
      shape.push_back(d.get<int64_t>());
      values *= static_cast<long double>(shape.back());
    }
    // The tensors are float32: 4 bytes a value.
    check_fits_in_memory(path(key), fmt::format("a float32 tensor of shape {}", v.dump()),
                         values > static_cast<long double>(INT64_MAX / 4)
                             ? INT64_MAX / 4
                             : static_cast<int64_t>(values),
                         4);
    return shape;
  };
  if (has("shape") == has("shapes")) {
    throw SpecError(fmt::format("{}: expected exactly one of \"shape\" or \"shapes\"", where_));
  }
  if (has("shape")) return {read_shape(raw("shape"), "shape")};
  const auto& list = raw("shapes");
  if (!list.is_array() || list.empty()) fail("shapes", "a non-empty list of shapes", list);
  std::vector<Shape> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(read_shape(list[i], fmt::format("shapes[{}]", i)));
  return out;
}

Element Fields::element(const std::string& key, const std::string& dtype_key) const {
  const auto& v = raw(key);
  static const std::regex kRef(R"(\$element(?:\[(\d+)\])?)");
  std::smatch m;
  const std::string text = v.is_string() ? v.get<std::string>() : std::string();
  if (v.is_string() && std::regex_match(text, m, kRef)) {
    if (!scope_.allowed) {
      throw SpecError(fmt::format("{}: \"{}\" is only available inside an interleave's pipeline",
                                  path(key), text));
    }
    if (scope_.outer == nullptr) return scalar_element(0);
    if (!m[1].matched) return *scope_.outer;
    const size_t k = std::stoul(m[1].str());
    if (k >= scope_.outer->size()) {
      throw SpecError(fmt::format("{}: \"{}\" refers to component {}, but the element has {}",
                                  path(key), text, k, scope_.outer->size()));
    }
    return Element{(*scope_.outer)[k]};
  }
  std::optional<DType> dtype;
  if (has(dtype_key)) {
    try {
      dtype = parse_dtype(string(dtype_key));
    } catch (const std::invalid_argument& e) {
      fail(dtype_key, "bool, uint8, int32, int64, float32 or float64", raw(dtype_key));
    }
  }
  try {
    return Element{Tensor::from_json(v, dtype ? &*dtype : nullptr)};
  } catch (const std::invalid_argument& e) {
    throw SpecError(fmt::format("{}: {}", path(key), e.what()));
  }
}

void Fields::only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : object_.items()) {
    bool ok = false;
    for (const char* k : known)
      ok = ok || key == k;
    if (!ok && known.size() == 0) {
      throw SpecError(fmt::format("{}: unknown key \"{}\" (this takes no arguments)", where_, key));
    }
    if (!ok) {
      throw SpecError(fmt::format("{}: unknown key \"{}\" (expected one of: {})", where_, key,
                                  fmt::join(known, ", ")));
    }
  }
}

}  // namespace pipeprof::pipelines::spec_detail
