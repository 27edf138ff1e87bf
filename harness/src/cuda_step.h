// The GPU training step (cuda:<ms>): a two-layer perceptron trained with softmax cross-entropy and
// SGD on the device. Per step:
//   copy stream:    the batch's bytes (host, staged in pinned memory) -> device, then an event
//   compute stream: waits for that event; bytes -> features kernel; forward GEMM, ReLU, GEMM
//                   (cuBLAS); loss kernel (softmax, cross-entropy, gradient); backward GEMMs; ReLU
//                   gradient; SGD updates; the loss back to pinned host memory; then the host
//                   waits for the compute stream.
// The hidden width is calibrated on construction so one step takes about the target time; a target
// beyond what the widest layer (2^18 units) reaches makes several such passes over each batch.
//
// Built only with CUDA (cuda_step.cc, kernels in cuda_kernels.cu); cuda_step_stub.cc otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pipeprof/harness/step.h"

namespace pipeprof::harness {

// Whether a CUDA step can run: built with CUDA, a driver and at least one device. Otherwise false
// with the reason.
bool cuda_device_usable(std::string* why_not);

// Opens cuBLAS, which a CUDA step does on its first use rather than at the program's start (its
// initialisers cost every process about 0.3 s). False with the reason where it cannot be opened or
// pipeprof was built without CUDA.
bool cuda_blas_usable(std::string* why_not);

// Builds and calibrates a cuda:<target_ms> step on device 0. Throws StepError (with the failing
// CUDA or cuBLAS call and its error) when the device cannot be used.
std::unique_ptr<Step> make_cuda_step(double target_ms);

// Facts about a CUDA step, for reports and tests (zeros for another kind of step).
struct CudaStepInfo {
  int batch = 0, inputs = 0, hidden = 0, classes = 0;
  int passes = 0;            // forward/backward/update passes over each batch
  double calibrated_ms = 0;  // the median step time measured by the calibration
  std::string device;        // e.g. "NVIDIA H100 80GB HBM3"
  int64_t direct_copies = 0;  // batches copied straight from a registered arena
  int64_t staged_copies = 0;  // batches staged through pinned memory first
  size_t registered_regions = 0;
};
CudaStepInfo cuda_step_info(const Step& step);

}  // namespace pipeprof::harness
