#include "pipeprof/pipelines/time_distribution.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

namespace pipeprof::pipelines {
namespace {

std::string shown(const nlohmann::json& v) {
  // fmt, not "\"" + std::string&&: GCC 12 at -O3 reports a false -Wrestrict overlap in the latter.
  return v.is_string() ? fmt::format("\"{}\"", v.get<std::string>()) : v.dump();
}

// A number of the mapping (YAML may hand numbers over as strings: "0.3").
double number(const nlohmann::json& map, const std::string& key, const std::string& where,
              double min, bool positive) {
  if (!map.contains(key)) throw std::invalid_argument(fmt::format("{}: expected a key `{}`", where, key));
  const nlohmann::json& v = map.at(key);
  double x = NAN;
  if (v.is_number()) {
    x = v.get<double>();
  } else if (v.is_string()) {
    try {
      size_t used = 0;
      x = std::stod(v.get<std::string>(), &used);
      if (used != v.get<std::string>().size()) x = NAN;
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): reported below
    }
  }
  if (!std::isfinite(x) || x < min || (positive && x <= 0)) {
    throw std::invalid_argument(fmt::format("{}.{}: expected a number {} {}, got {}", where, key,
                                            positive ? ">" : ">=", min, shown(v)));
  }
  return x;
}

void only(const nlohmann::json& map, const std::vector<std::string>& known,
          const std::string& where) {
  for (const auto& [key, value] : map.items()) {
    bool ok = false;
    for (const auto& k : known)
      ok = ok || k == key;
    if (!ok) {
      throw std::invalid_argument(
          fmt::format("{}: unknown key `{}` (expected {})", where, key, fmt::join(known, ", ")));
    }
  }
}

}  // namespace

TimeDistribution TimeDistribution::constant(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    throw std::invalid_argument(fmt::format("a time of {} s", seconds));
  TimeDistribution d;
  d.a_ = seconds;
  return d;
}

TimeDistribution TimeDistribution::parse(const nlohmann::json& value, const std::string& where) {
  TimeDistribution d;
  if (value.is_null()) return d;
  if (value.is_number() || value.is_string()) {
    d.a_ = number(nlohmann::json{{"time", value}}, "time", where, 0, false);
    return d;
  }
  if (!value.is_object()) {
    throw std::invalid_argument(
        fmt::format("{}: expected a time in seconds or a distribution, got {}", where, shown(value)));
  }
  if (value.empty()) return d;  // DLIO: an empty mapping is no time at all
  if (!value.contains("type")) {
    only(value, {"mean", "stdev"}, where);
    d.a_ = number(value, "mean", where, 0, false);
    if (value.contains("stdev")) {
      d.kind_ = Kind::kNormal;
      d.b_ = number(value, "stdev", where, 0, false);
    }
    return d;
  }
  const nlohmann::json& type = value.at("type");
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  if (t == "normal") {
    only(value, {"type", "mean", "stdev"}, where);
    d.kind_ = Kind::kNormal;
    d.a_ = number(value, "mean", where, 0, false);
    d.b_ = value.contains("stdev") ? number(value, "stdev", where, 0, false) : 0;
  } else if (t == "uniform") {
    only(value, {"type", "min", "max"}, where);
    d.kind_ = Kind::kUniform;
    d.a_ = number(value, "min", where, 0, false);
    d.b_ = number(value, "max", where, d.a_, false);
  } else if (t == "gamma") {
    only(value, {"type", "shape", "scale"}, where);
    d.kind_ = Kind::kGamma;
    d.a_ = number(value, "shape", where, 0, true);
    d.b_ = number(value, "scale", where, 0, true);
  } else if (t == "exponential") {
    only(value, {"type", "scale"}, where);
    d.kind_ = Kind::kExponential;
    d.a_ = number(value, "scale", where, 0, true);
  } else if (t == "poisson") {
    only(value, {"type", "lam"}, where);
    d.kind_ = Kind::kPoisson;
    d.a_ = number(value, "lam", where, 0, false);
  } else {
    throw std::invalid_argument(fmt::format(
        "{}.type: expected normal, uniform, gamma, exponential or poisson, got {}", where,
        shown(type)));
  }
  return d;
}

double TimeDistribution::mean() const {
  switch (kind_) {
    case Kind::kConstant:
      return a_;
    case Kind::kNormal: {
      // The mean of |X| for X ~ N(a, b): the folded normal's.
      if (b_ == 0) return a_;
      const double z = a_ / b_;
      return b_ * std::sqrt(2 / M_PI) * std::exp(-z * z / 2) + a_ * std::erf(z / std::sqrt(2.0));
    }
    case Kind::kUniform:
      return (a_ + b_) / 2;
    case Kind::kGamma:
      return a_ * b_;
    case Kind::kExponential:
    case Kind::kPoisson:
      return a_;
  }
  return a_;
}

double TimeDistribution::sample(std::mt19937_64& rng) const {
  double x = a_;
  switch (kind_) {
    case Kind::kConstant:
      break;
    case Kind::kNormal:
      if (b_ > 0) x = std::normal_distribution<double>(a_, b_)(rng);
      break;
    case Kind::kUniform:
      x = b_ > a_ ? std::uniform_real_distribution<double>(a_, b_)(rng) : a_;
      break;
    case Kind::kGamma:
      x = std::gamma_distribution<double>(a_, b_)(rng);
      break;
    case Kind::kExponential:
      x = std::exponential_distribution<double>(1 / a_)(rng);
      break;
    case Kind::kPoisson:
      x = a_ > 0 ? static_cast<double>(std::poisson_distribution<int64_t>(a_)(rng)) : 0;
      break;
  }
  return std::abs(x);
}

nlohmann::json TimeDistribution::to_json() const {
  switch (kind_) {
    case Kind::kConstant:
      return a_;
    case Kind::kNormal:
      return {{"type", "normal"}, {"mean", a_}, {"stdev", b_}};
    case Kind::kUniform:
      return {{"type", "uniform"}, {"min", a_}, {"max", b_}};
    case Kind::kGamma:
      return {{"type", "gamma"}, {"shape", a_}, {"scale", b_}};
    case Kind::kExponential:
      return {{"type", "exponential"}, {"scale", a_}};
    case Kind::kPoisson:
      return {{"type", "poisson"}, {"lam", a_}};
  }
  return a_;
}

std::string TimeDistribution::describe() const {
  switch (kind_) {
    case Kind::kConstant:
      return fmt::format("{:g} s", a_);
    case Kind::kNormal:
      return fmt::format("normal({:g} s, stdev {:g} s)", a_, b_);
    case Kind::kUniform:
      return fmt::format("uniform({:g} s, {:g} s)", a_, b_);
    case Kind::kGamma:
      return fmt::format("gamma(shape {:g}, scale {:g} s)", a_, b_);
    case Kind::kExponential:
      return fmt::format("exponential(scale {:g} s)", a_);
    case Kind::kPoisson:
      return fmt::format("poisson({:g}) s", a_);
  }
  return "?";
}

}  // namespace pipeprof::pipelines
