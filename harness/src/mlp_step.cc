#include "mlp_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "pipeprof/trace/clock.h"

namespace pipeprof::harness {
namespace {

constexpr float kLearningRate = 0.05F;

// out[m x n] = a[m x k] * b[k x n]   (row-major; i-k-j order so the inner loop vectorizes)
void matmul(const float* a, const float* b, float* out, int m, int k, int n) {
  std::fill(out, out + static_cast<size_t>(m) * n, 0.0F);
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      const float av = a[static_cast<size_t>(i) * k + p];
      const float* brow = b + static_cast<size_t>(p) * n;
      float* orow = out + static_cast<size_t>(i) * n;
      for (int j = 0; j < n; ++j)
        orow[j] += av * brow[j];
    }
  }
}

// out[k x n] = a^T * b  with a[m x k], b[m x n]
void matmul_at_b(const float* a, const float* b, float* out, int m, int k, int n) {
  std::fill(out, out + static_cast<size_t>(k) * n, 0.0F);
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      const float av = a[static_cast<size_t>(i) * k + p];
      const float* brow = b + static_cast<size_t>(i) * n;
      float* orow = out + static_cast<size_t>(p) * n;
      for (int j = 0; j < n; ++j)
        orow[j] += av * brow[j];
    }
  }
}

// out[m x k] = a * b^T  with a[m x n], b[k x n]
void matmul_a_bt(const float* a, const float* b, float* out, int m, int n, int k) {
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      float s = 0;
      const float* arow = a + static_cast<size_t>(i) * n;
      const float* brow = b + static_cast<size_t>(p) * n;
      for (int j = 0; j < n; ++j)
        s += arow[j] * brow[j];
      out[static_cast<size_t>(i) * k + p] = s;
    }
  }
}

}  // namespace

MlpStep::MlpStep(double target_ms, int batch, int inputs, int classes)
    : target_ms_(target_ms), batch_(batch), inputs_(inputs), classes_(classes) {
  if (target_ms <= 0) throw StepError("cpu step: the target time must be positive");
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  x_.resize(static_cast<size_t>(batch_) * inputs_);
  for (auto& v : x_)
    v = normal(rng);
  labels_.resize(static_cast<size_t>(batch_));
  for (int i = 0; i < batch_; ++i)
    labels_[static_cast<size_t>(i)] = static_cast<int>(rng() % classes_);

  // Calibration: the step's cost is linear in the hidden width; measure and rescale until one step
  // lands within 10% of the target (three rounds at most), using the median of a few steps.
  int hidden = 64;
  for (int round = 0; round < 4; ++round) {
    resize(hidden);
    std::vector<int64_t> times;
    for (int i = 0; i < 5; ++i) {
      const int64_t t0 = trace::now_ns();
      train_step();
      times.push_back(trace::now_ns() - t0);
    }
    std::nth_element(times.begin(), times.begin() + 2, times.end());
    const double ms = static_cast<double>(times[2]) / 1e6;
    const double ratio = target_ms_ / std::max(ms, 1e-6);
    if (std::abs(ratio - 1.0) < 0.1) break;
    hidden = std::clamp(static_cast<int>(std::lround(hidden * ratio)), 1, 1 << 16);
  }
  resize(hidden);  // fresh weights, so training starts from scratch
}

void MlpStep::resize(int hidden) {
  hidden_ = hidden;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  const float s1 = 1.0F / std::sqrt(static_cast<float>(inputs_));
  const float s2 = 1.0F / std::sqrt(static_cast<float>(hidden_));
  w1_.resize(static_cast<size_t>(inputs_) * hidden_);
  for (auto& v : w1_)
    v = normal(rng) * s1;
  w2_.resize(static_cast<size_t>(hidden_) * classes_);
  for (auto& v : w2_)
    v = normal(rng) * s2;
  h_.assign(static_cast<size_t>(batch_) * hidden_, 0);
  grad_h_.assign(h_.size(), 0);
  grad_w1_.assign(w1_.size(), 0);
  grad_w2_.assign(w2_.size(), 0);
  logits_.assign(static_cast<size_t>(batch_) * classes_, 0);
  grad_logits_.assign(logits_.size(), 0);
}

std::string MlpStep::name() const {
  return fmt::format("cpu:{}", target_ms_);
}

double MlpStep::train_step() {
  // Forward.
  matmul(x_.data(), w1_.data(), h_.data(), batch_, inputs_, hidden_);
  for (auto& v : h_)
    v = std::max(v, 0.0F);
  matmul(h_.data(), w2_.data(), logits_.data(), batch_, hidden_, classes_);
  // Softmax cross-entropy and its gradient.
  double loss = 0;
  for (int i = 0; i < batch_; ++i) {
    float* row = logits_.data() + static_cast<size_t>(i) * classes_;
    float* grow = grad_logits_.data() + static_cast<size_t>(i) * classes_;
    const float mx = *std::max_element(row, row + classes_);
    double sum = 0;
    for (int j = 0; j < classes_; ++j)
      sum += std::exp(static_cast<double>(row[j] - mx));
    const int label = labels_[static_cast<size_t>(i)];
    for (int j = 0; j < classes_; ++j) {
      const double p = std::exp(static_cast<double>(row[j] - mx)) / sum;
      grow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) / batch_);
    }
    loss -= (static_cast<double>(row[label] - mx) - std::log(sum)) / batch_;
  }
  // Backward.
  matmul_at_b(h_.data(), grad_logits_.data(), grad_w2_.data(), batch_, hidden_, classes_);
  matmul_a_bt(grad_logits_.data(), w2_.data(), grad_h_.data(), batch_, classes_, hidden_);
  for (size_t i = 0; i < h_.size(); ++i) {
    if (h_[i] <= 0) grad_h_[i] = 0;
  }
  matmul_at_b(x_.data(), grad_h_.data(), grad_w1_.data(), batch_, inputs_, hidden_);
  // SGD.
  for (size_t i = 0; i < w1_.size(); ++i)
    w1_[i] -= kLearningRate * grad_w1_[i];
  for (size_t i = 0; i < w2_.size(); ++i)
    w2_[i] -= kLearningRate * grad_w2_[i];
  return loss;
}

void MlpStep::run(const pipelines::Element& /*batch*/) {
  loss_ = train_step();
}

}  // namespace pipeprof::harness
