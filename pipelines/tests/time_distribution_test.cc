// DLIO's time values (pipeprof/pipelines/time_distribution.h), and the map functions that use
// them and stand in for a read sample: sleep_time and nbytes.
#include "pipeprof/pipelines/time_distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace {

using Kind = TimeDistribution::Kind;

double sample_mean(const TimeDistribution& d, int n = 20000) {
  std::mt19937_64 rng(1);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = d.sample(rng);
    EXPECT_GE(x, 0);
    sum += x;
  }
  return sum / n;
}

std::string error_of(const nlohmann::json& v) {
  try {
    TimeDistribution::parse(v, "w.yaml: train.computation_time");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << v.dump();
  return {};
}

TEST(TimeDistribution, EveryFormDlioWrites) {
  EXPECT_EQ(TimeDistribution::parse(0.323, "t").kind(), Kind::kConstant);
  EXPECT_DOUBLE_EQ(TimeDistribution::parse(0.323, "t").mean(), 0.323);
  EXPECT_DOUBLE_EQ(TimeDistribution::parse("0.5", "t").mean(), 0.5);  // YAML may give strings
  EXPECT_TRUE(TimeDistribution::parse(nlohmann::json::object(), "t").zero());
  EXPECT_EQ(TimeDistribution::parse({{"mean", 0.3}}, "t").kind(), Kind::kConstant);
  EXPECT_EQ(TimeDistribution::parse({{"mean", 0.3}, {"stdev", 0.1}}, "t").kind(), Kind::kNormal);
  const struct {
    nlohmann::json v;
    Kind kind;
    double mean;
  } cases[] = {
      {{{"type", "normal"}, {"mean", 0.3}, {"stdev", 0.01}}, Kind::kNormal, 0.3},
      {{{"type", "uniform"}, {"min", 0.1}, {"max", 0.3}}, Kind::kUniform, 0.2},
      {{{"type", "gamma"}, {"shape", 2.0}, {"scale", 0.05}}, Kind::kGamma, 0.1},
      {{{"type", "exponential"}, {"scale", 0.2}}, Kind::kExponential, 0.2},
      {{{"type", "poisson"}, {"lam", 3.0}}, Kind::kPoisson, 3.0},
  };
  for (const auto& c : cases) {
    const TimeDistribution d = TimeDistribution::parse(c.v, "t");
    EXPECT_EQ(d.kind(), c.kind) << c.v.dump();
    EXPECT_NEAR(d.mean(), c.mean, 1e-9) << c.v.dump();
    EXPECT_NEAR(sample_mean(d), c.mean, c.mean * 0.03) << c.v.dump();
    EXPECT_EQ(TimeDistribution::parse(d.to_json(), "t").to_json(), d.to_json());
  }
}

TEST(TimeDistribution, DrawsAreMadePositiveAsDlioMakesThem) {
  // N(0, 1) folded: |X| has the mean sqrt(2 / pi); no draw is negative.
  const TimeDistribution d = TimeDistribution::parse({{"mean", 0.0}, {"stdev", 1.0}}, "t");
  EXPECT_NEAR(d.mean(), std::sqrt(2 / M_PI), 1e-9);
  EXPECT_NEAR(sample_mean(d), std::sqrt(2 / M_PI), 0.02);
}

TEST(TimeDistribution, ErrorsNameTheKey) {
  EXPECT_EQ(error_of(-1), "w.yaml: train.computation_time.time: expected a number >= 0, got -1");
  EXPECT_EQ(error_of({{"stdev", 1}}), "w.yaml: train.computation_time: expected a key `mean`");
  EXPECT_NE(error_of({{"type", "zipf"}}).find(".type: expected normal, uniform"), std::string::npos);
  EXPECT_NE(error_of({{"type", "uniform"}, {"min", 1}}).find("expected a key `max`"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "gamma"}, {"shape", 0}, {"scale", 1}}).find(".shape: expected a number > 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"mean", 1}, {"sd", 1}}).find("unknown key `sd`"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json::array({1})).find("expected a time in seconds or a distribution"),
            std::string::npos);
}

TEST(WorkloadFunctions, SleepTimeSleepsItsDrawAndNbytesCountsTheElement) {
  const Function sleep = make_function("sleep_time", {{"time", 0.01}});
  const int64_t t0 = trace::now_ns();
  const Element e = sleep.fn(Element{Tensor::scalar<int64_t>(3)});
  EXPECT_GE(trace::now_ns() - t0, 10'000'000);
  EXPECT_EQ(e.at(0).as_int64(), 3);
  EXPECT_NEAR(sleep.sim.latency_ms, 10, 1e-9);
  EXPECT_THROW(make_function("sleep_time", {{"time", {{"type", "zipf"}}}}), SpecError);
  EXPECT_THROW(make_function("sleep_time", {}), SpecError);

  const Function nbytes = make_function("nbytes", {});
  const Element n = nbytes.fn(Element{Tensor(DType::kUInt8, {3, 5}), Tensor(DType::kInt64, {2})});
  ASSERT_EQ(n.size(), 1U);
  EXPECT_EQ(n[0].dtype(), DType::kInt64);
  EXPECT_EQ(n[0].as_int64(), 15 + 16);
}

}  // namespace
}  // namespace pipeprof::pipelines
