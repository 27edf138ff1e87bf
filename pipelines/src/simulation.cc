#include "pipeprof/pipelines/simulation.h"

#include <fmt/format.h>

#include <cmath>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines::sim {
namespace {

const nlohmann::json kNull;

}  // namespace

Elem to_elem(const Element& element) {
  double bytes = 0;
  for (const Tensor& t : element)
    bytes += static_cast<double>(t.nbytes());
  if (element.empty() || element[0].num_elements() != 1) return Elem{std::nullopt, bytes};
  try {
    return Elem{element[0].as_double(), bytes};
  } catch (const std::exception&) {
    return Elem{std::nullopt, bytes};
  }
}

namespace {

// `bytes` at `gb_per_s` (GB/s = 1e6 bytes per ms); NeedsMeasurement naming `who`, what it does
// with the bytes and the rate, when the rate was not measured.
Time at_rate(double bytes, double gb_per_s, std::string_view who, std::string_view verb,
             std::string_view per, std::string_view rate, std::string_view key) {
  if (bytes <= 0) return 0;
  if (gb_per_s <= 0) {
    throw NeedsMeasurement(
        fmt::format("{}: {} {:.0f} bytes per {} and the machine's {} was not "
                    "measured",
                    who, verb, bytes, per, rate),
        std::string(key));
  }
  return bytes / (gb_per_s * 1e6);
}

}  // namespace

Time SimContext::copy_ms(double bytes, std::string_view who) const {
  return at_rate(bytes, rates.memcpy_gb_per_s, who, "copies", "element", "memcpy bandwidth",
                 "memcpy_gb_per_s");
}

Time SimContext::fill_ms(double bytes, std::string_view who) const {
  return at_rate(bytes, rates.fill_gb_per_s, who, "fills", "call", "fill rate", "fill_gb_per_s");
}

Time SimContext::receive_ms(double bytes, std::string_view who) const {
  return at_rate(bytes, rates.socket_gb_per_s, who, "receives", "element through a socket",
                 "socket receive rate", "socket_gb_per_s");
}

Time SimContext::first_write_ms(double bytes, std::string_view who) const {
  return at_rate(bytes, rates.store_first_write_gb_per_s, who, "writes",
                 "producer's first element into store pages never written before",
                 "rate of first writes into a store", "store_first_write_gb_per_s");
}

nlohmann::json substitute_element(const nlohmann::json& j, double value, std::string_view who) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "$element" || s == "$element[0]") {
      if (value == static_cast<double>(static_cast<int64_t>(value)))
        return static_cast<int64_t>(value);
      return value;
    }
    if (s.rfind("$element[", 0) == 0)
      throw Unsupported(fmt::format("{} reads a component other than 0", who));
    return j;
  }
  if (j.is_array() || j.is_object()) {
    nlohmann::json out = j;
    for (auto& [k, v] : out.items())
      v = substitute_element(v, value, who);
    return out;
  }
  return j;
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
