// The CUDA step of a build without CUDA: never usable.
#include "cuda_step.h"

namespace pipeprof::harness {

bool cuda_device_usable(std::string* why_not) {
  if (why_not != nullptr) *why_not = "pipeprof was built without CUDA";
  return false;
}

bool cuda_blas_usable(std::string* why_not) {
  return cuda_device_usable(why_not);
}

std::unique_ptr<Step> make_cuda_step(double target_ms) {
  (void)target_ms;
  throw StepError("cuda step: unavailable: pipeprof was built without CUDA");
}

CudaStepInfo cuda_step_info(const Step&) {
  return {};
}

}  // namespace pipeprof::harness
