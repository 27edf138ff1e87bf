#include "pipeprof/harness/step.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "cuda_step.h"
#include "mlp_step.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness {
namespace {

class SleepStep final : public Step {
 public:
  explicit SleepStep(double ms) : ms_(ms), ns_(static_cast<int64_t>(ms * 1e6)) {}
  std::string name() const override { return fmt::format("sleep:{}", ms_); }
  double target_ms() const override { return ms_; }
  void run(const pipelines::Element&) override { pipelines::precise_sleep_for(ns_); }

 private:
  double ms_;
  int64_t ns_;
};

class NoStep final : public Step {
 public:
  std::string name() const override { return "none"; }
  double target_ms() const override { return 0; }
  void run(const pipelines::Element&) override {}
};

double parse_ms(const std::string& name, const std::string& value) {
  double ms = 0;
  const auto* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, ms);
  if (ec != std::errc() || ptr != end || !std::isfinite(ms) || ms < 0) {
    throw StepError(fmt::format("step '{}': expected a non-negative time in ms after ':', got '{}'",
                                name, value));
  }
  // An hour: longer than any training step, and far from where the nanosecond clock overflows.
  constexpr double kMaxMs = 3.6e6;
  if (ms > kMaxMs) {
    throw StepError(fmt::format("step '{}': {} ms is longer than the longest step allowed, {:g} ms "
                                "(an hour)",
                                name, value, kMaxMs));
  }
  return ms;
}

struct ParsedStep {
  std::string kind;  // none, auto, sleep, cpu, cuda
  double ms = 0;
};

ParsedStep parse_step(const std::string& name) {
  if (name == "none" || name == "auto") return {name, 0};
  const auto colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  if (colon == std::string::npos || (kind != "sleep" && kind != "cpu" && kind != "cuda")) {
    throw StepError(fmt::format(
        "unknown step '{}' (expected sleep:<ms>, cpu:<ms>, cuda:<ms>, none or auto)", name));
  }
  const double ms = parse_ms(name, name.substr(colon + 1));
  if (kind != "sleep" && ms <= 0) {
    throw StepError(fmt::format("step '{}': a {} step needs a positive time", name, kind));
  }
  return {kind, ms};
}

}  // namespace

double Step::last_loss() const {
  return std::numeric_limits<double>::quiet_NaN();
}

bool cuda_step_available(std::string* why_not) {
  // Asked once: the answer cannot change while the process runs, and asking initializes CUDA.
  static const std::pair<bool, std::string> answer = [] {
    std::string why;
    const bool ok = cuda_device_usable(&why);
    return std::pair{ok, why};
  }();
  if (why_not != nullptr) *why_not = answer.second;
  return answer.first;
}

void check_step_name(const std::string& name) {
  (void)parse_step(name);
}

StepChoice make_step(const std::string& name, const std::string& experiment_default) {
  const ParsedStep parsed = parse_step(name);
  if (parsed.kind == "none") return {std::make_unique<NoStep>(), ""};
  if (parsed.kind == "auto") {
    std::string why;
    if (cuda_step_available(&why)) {
      // The experiment's own step time, on the GPU.
      const ParsedStep own = parse_step(experiment_default == "auto" ? "sleep:10" : experiment_default);
      if (own.kind == "none") return {std::make_unique<NoStep>(), ""};  // measures the pipeline alone
      return make_step(fmt::format("cuda:{}", own.ms > 0 ? own.ms : 10.0));
    }
    StepChoice c = make_step(experiment_default == "auto" ? "sleep:10" : experiment_default);
    c.notice = fmt::format("step auto: {}; using the experiment's step {}", why, c.step->name());
    return c;
  }
  if (parsed.kind == "sleep") return {std::make_unique<SleepStep>(parsed.ms), ""};
  if (parsed.kind == "cpu") return {std::make_unique<MlpStep>(parsed.ms), ""};
  std::string why;
  if (!cuda_step_available(&why))
    throw StepError(fmt::format("step '{}': unavailable: {}", name, why));
  return {make_cuda_step(parsed.ms), ""};
}

}  // namespace pipeprof::harness
