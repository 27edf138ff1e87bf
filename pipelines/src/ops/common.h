// Helpers shared by the operations' implementations.
#pragma once

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines::ops {

// The outcome of one pull: an element, the end of the sequence (no value, no error) or an error.
struct Result {
  std::optional<Element> value;
  std::exception_ptr error;

  bool end() const { return !value && !error; }
  // Returns the element or the end; rethrows the error.
  std::optional<Element> take() {
    if (error) std::rethrow_exception(error);
    return std::move(value);
  }
};

// Runs `pull` and captures its outcome as a Result, wrapping foreign exceptions in a PipelineError
// that names `stage`.
template <typename Pull>
Result capture(const std::string& stage, Pull&& pull) {
  Result r;
  try {
    r.value = pull();
  } catch (const PipelineError&) {
    r.error = std::current_exception();
  } catch (const std::exception& e) {
    r.error = std::make_exception_ptr(PipelineError(stage, e.what()));
  } catch (...) {
    r.error = std::make_exception_ptr(PipelineError(stage, "unknown exception"));
  }
  return r;
}

// Calls `fn`, turning any exception that is not already a PipelineError into one naming `stage`
// (as capture() does: a foreign exception becomes "unknown exception").
template <typename Fn>
decltype(auto) with_stage(const std::string& stage, Fn&& fn) {
  try {
    return fn();
  } catch (const PipelineError&) {
    throw;
  } catch (const std::exception& e) {
    throw PipelineError(stage, e.what());
  } catch (...) {
    throw PipelineError(stage, "unknown exception");
  }
}

// A parallelism or buffer size as it appears in a spec: an integer or "autotune".
inline nlohmann::json tunable_json(int64_t value) {
  return value == kAutotune ? nlohmann::json("autotune") : nlohmann::json(value);
}

// The display name "<op> '<name>'" used by stages that carry a function.
inline std::string named_stage(std::string_view op, const std::string& name) {
  return std::string(op) + " '" + name + "'";
}

// The callable's spec fields {"fn": name, "args": {...}}; throws SpecError for a C++ lambda.
template <typename C>
void add_callable_json(nlohmann::json& out, std::string_view key, const C& callable,
                       std::string_view op) {
  if (!callable.serializable) {
    throw SpecError(std::string(op) + " '" + callable.name +
                    "': a C++ callable has no registry name and cannot be written to a spec");
  }
  out[std::string(key)] = callable.name;
  if (!callable.args.is_null() && !callable.args.empty()) out["args"] = callable.args;
}

}  // namespace pipeprof::pipelines::ops
