#include "pipeprof/pipelines/simulation.h"

#include <cmath>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines::sim {
namespace {

const nlohmann::json kNull;

}  // namespace

Elem to_elem(const Element& element) {
  if (element.empty() || element[0].num_elements() != 1) return Elem{};
  try {
    return Elem{element[0].as_double()};
  } catch (const std::exception&) {
    return Elem{};
  }
}

Element to_element(double value) {
  if (value == std::floor(value) && std::abs(value) < 9.2e18)
    return scalar_element(static_cast<int64_t>(value));
  return Element{Tensor::scalar<double>(value)};
}

const nlohmann::json& SimStage::value(std::string_view key) const {
  auto it = stage_.find(std::string(key));
  if (it != stage_.end()) return *it;
  const FieldSpec* f = op_.field(key);
  return f ? f->fallback : kNull;
}

int64_t SimStage::integer(std::string_view key) const {
  return value(key).get<int64_t>();
}

double SimStage::number(std::string_view key) const {
  return value(key).get<double>();
}

bool SimStage::boolean(std::string_view key) const {
  return value(key).get<bool>();
}

std::string SimStage::string(std::string_view key) const {
  return value(key).get<std::string>();
}

bool SimStage::is_autotune(std::string_view key) const {
  const auto& v = value(key);
  return v.is_string() && v.get<std::string>() == "autotune";
}

int64_t SimStage::tunable(std::string_view key) const {
  return is_autotune(key) ? kAutotune : integer(key);
}

double SimStage::capacity(std::string_view key) const {
  if (!is_autotune(key)) return static_cast<double>(integer(key));
  if (context_.bound) return kUnbounded;
  const FieldSpec* f = op_.field(key);
  const int64_t start = f && f->knob ? f->knob->start : 0;
  return static_cast<double>(start > 0 ? start : context_.autotune_parallelism);
}

}  // namespace pipeprof::pipelines::sim
