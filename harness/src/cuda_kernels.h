// The CUDA step's own kernels (cuda_kernels.cu), launched on a stream. Each returns the launch's
// error (cudaGetLastError), so the caller checks it like any other CUDA call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace pipeprof::harness {

// x[i] = base[i] + 0.1 * (bytes[i % nbytes] / 255 - 0.5): the batch's bytes perturb a fixed input.
cudaError_t launch_features(const unsigned char* bytes, size_t nbytes, const float* base, float* x,
                            size_t n, cudaStream_t stream);
// w[i] = stddev * a standard normal drawn from (seed, i) by a counter-based hash and Box-Muller:
// weights initialized on the device, whatever their size, in one pass.
cudaError_t launch_normal_fill(float* w, size_t n, float stddev, uint64_t seed,
                               cudaStream_t stream);
// h = max(h, 0)
cudaError_t launch_relu(float* h, size_t n, cudaStream_t stream);
// dh = 0 where h (a ReLU's output) is 0
cudaError_t launch_relu_backward(const float* h, float* dh, size_t n, cudaStream_t stream);
// Row-wise softmax cross-entropy: *loss += mean loss (zero it first), grad = d(mean loss)/d(logits).
cudaError_t launch_softmax_xent(const float* logits, const int* labels, float* grad, float* loss,
                                int rows, int classes, cudaStream_t stream);

}  // namespace pipeprof::harness
