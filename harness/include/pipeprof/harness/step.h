// Training steps: what the consumer runs on every element. One interface, chosen by a name:
//   sleep:<ms>  sleeps precisely (the documents' step)
//   cpu:<ms>    a real multi-layer-perceptron training step on the host (forward, backward, SGD),
//               one thread, sized by calibration so that one step takes about <ms>
//   cuda:<ms>   the same on a GPU (reported as unavailable when not built or no GPU)
//   none        no step (the vectorization experiments)
//   auto        cuda when a GPU is usable, else the experiment's own sleep step, with one notice
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::harness {

// A step name that cannot be used: unknown, malformed, or (cuda) unavailable here.
class StepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Step {
 public:
  virtual ~Step() = default;
  // The canonical name, e.g. "sleep:10".
  virtual std::string name() const = 0;
  // The time one step is meant to take, in ms (what the ideal-time simulator assumes).
  virtual double target_ms() const = 0;
  // Runs one training step on `batch`.
  virtual void run(const pipelines::Element& batch) = 0;
  // The last step's training loss, where the step trains something (NaN otherwise).
  virtual double last_loss() const;
};

struct StepChoice {
  std::unique_ptr<Step> step;
  std::string notice;  // non-empty when `auto` fell back (print it once)
};

// Makes the step `name` ("sleep:10", "cpu:10", "cuda:10", "none", "auto"). `experiment_default` is
// the experiment's own step, used by `auto` when no GPU is usable. Throws StepError.
StepChoice make_step(const std::string& name, const std::string& experiment_default = "sleep:10");

// Checks a step name without building the step (a cpu step calibrates, which takes time).
// Throws StepError for a malformed name; cuda:<ms> is well-formed even where it cannot run.
void check_step_name(const std::string& name);

// Whether a CUDA step can run here (built with CUDA and a device is present).
bool cuda_step_available(std::string* why_not = nullptr);

}  // namespace pipeprof::harness
