// A time that is a number or a random draw, in seconds, as DLIO workload files state them
// (train.computation_time, reader.preprocess_time, evaluation.eval_time):
//   0.323                                   a constant
//   {mean: 0.3}                             a constant
//   {mean: 0.3, stdev: 0.05}                normal
//   {type: normal, mean: 0.3, stdev: 0.05}  normal
//   {type: uniform, min: 0.1, max: 0.5}
//   {type: gamma, shape: 2, scale: 0.1}
//   {type: exponential, scale: 0.1}
//   {type: poisson, lam: 3}
// A draw is made positive as DLIO makes it (its absolute value), so a normal with a large stdev
// never gives a negative time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace pipeprof::pipelines {

class TimeDistribution {
 public:
  enum class Kind { kConstant, kNormal, kUniform, kGamma, kExponential, kPoisson };

  TimeDistribution() = default;
  static TimeDistribution constant(double seconds);

  // From a number or a mapping as above; throws std::invalid_argument naming `where` and the key
  // that is missing, unknown or out of range ("train.computation_time.stdev: expected a number >=
  // 0, got -1").
  static TimeDistribution parse(const nlohmann::json& value, const std::string& where);

  Kind kind() const { return kind_; }
  double mean() const;  // seconds: the distribution's mean, after the absolute value is not taken
  bool zero() const { return kind_ == Kind::kConstant && a_ == 0; }
  double sample(std::mt19937_64& rng) const;  // seconds, >= 0
  nlohmann::json to_json() const;             // the mapping form (a number for a constant)
  std::string describe() const;               // "0.323 s", "normal(0.3 s, 0.05 s)", ...

 private:
  Kind kind_ = Kind::kConstant;
  double a_ = 0, b_ = 0;  // constant: a; normal: mean, stdev; uniform: min, max; gamma: shape,
                          // scale; exponential: scale; poisson: lam
};

}  // namespace pipeprof::pipelines
