// The CPU training step: a two-layer perceptron (input -> hidden, ReLU -> classes) trained with
// softmax cross-entropy and plain SGD on a fixed synthetic batch, single-threaded. The hidden width
// is calibrated so one step takes about the target time on this machine.
#pragma once

#include <vector>

#include "pipeprof/harness/step.h"

namespace pipeprof::harness {

class MlpStep final : public Step {
 public:
  // Calibrates the hidden width to `target_ms` (takes a few dozen steps' time).
  explicit MlpStep(double target_ms, int batch = 32, int inputs = 256, int classes = 10);

  std::string name() const override;
  double target_ms() const override { return target_ms_; }
  void run(const pipelines::Element& batch) override;
  double last_loss() const override { return loss_; }
  int hidden() const { return hidden_; }

 private:
  void resize(int hidden);
  double train_step();  // returns the loss

  double target_ms_;
  int batch_, inputs_, classes_, hidden_ = 0;
  std::vector<float> x_, w1_, w2_, h_, logits_, grad_logits_, grad_h_, grad_w1_, grad_w2_;
  std::vector<int> labels_;
  double loss_ = 0;
};

}  // namespace pipeprof::harness
