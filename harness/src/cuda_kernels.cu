// The CUDA step's element-wise and loss kernels; the GEMMs are cuBLAS's (cuda_step.cc).
#include <algorithm>

#include "cuda_kernels.h"

namespace pipeprof::harness {
namespace {

unsigned blocks_for(size_t n, unsigned threads) {
  return static_cast<unsigned>(std::min<size_t>((n + threads - 1) / threads, 65535));
}

// x[i] = base[i] + 0.1 * (byte / 255 - 0.5), the batch's bytes repeated to fill x.
__global__ void features_kernel(const unsigned char* bytes, size_t nbytes, const float* base,
                                float* x, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float u = nbytes > 0 ? static_cast<float>(bytes[i % nbytes]) / 255.0F : 0.5F;
    x[i] = base[i] + 0.1F * (u - 0.5F);
  }
}

// SplitMix64's finalizer: a well-mixed 64-bit value for each counter.
__device__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void normal_fill_kernel(float* w, size_t n, float stddev, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t r = mix64(seed ^ mix64(i));
    // Two 24-bit uniforms: u1 in (0, 1] (its logarithm is finite), u2 in [0, 1).
    const float u1 = static_cast<float>((r >> 40) + 1) * (1.0F / 16777216.0F);
    const float u2 = static_cast<float>(r & 0xffffffULL) * (1.0F / 16777216.0F);
    w[i] = stddev * sqrtf(-2.0F * logf(u1)) * cospif(2.0F * u2);
  }
}

__global__ void relu_kernel(float* h, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    h[i] = fmaxf(h[i], 0.0F);
  }
}

// dh[i] = 0 where the unit was off (h is the ReLU's output).
__global__ void relu_backward_kernel(const float* h, float* dh, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (h[i] <= 0.0F) dh[i] = 0.0F;
  }
}

// One thread per row: softmax, cross-entropy (summed into *loss), and the gradient of the mean
// loss with respect to the logits.
__global__ void softmax_xent_kernel(const float* logits, const int* labels, float* grad,
                                    float* loss, int rows, int classes) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* z = logits + static_cast<size_t>(r) * classes;
  float* g = grad + static_cast<size_t>(r) * classes;
  float m = z[0];
  for (int c = 1; c < classes; ++c)
    m = fmaxf(m, z[c]);
  float sum = 0.0F;
  for (int c = 0; c < classes; ++c)
    sum += expf(z[c] - m);
  const int label = labels[r];
  for (int c = 0; c < classes; ++c) {
    const float p = expf(z[c] - m) / sum;
    g[c] = (p - (c == label ? 1.0F : 0.0F)) / static_cast<float>(rows);
  }
  atomicAdd(loss, (logf(sum) + m - z[label]) / static_cast<float>(rows));
}

}  // namespace

cudaError_t launch_features(const unsigned char* bytes, size_t nbytes, const float* base, float* x,
                            size_t n, cudaStream_t stream) {
  features_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(bytes, nbytes, base, x, n);
  return cudaGetLastError();
}

cudaError_t launch_normal_fill(float* w, size_t n, float stddev, uint64_t seed,
                               cudaStream_t stream) {
  normal_fill_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(w, n, stddev, seed);
  return cudaGetLastError();
}

cudaError_t launch_relu(float* h, size_t n, cudaStream_t stream) {
  relu_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(h, n);
  return cudaGetLastError();
}

cudaError_t launch_relu_backward(const float* h, float* dh, size_t n, cudaStream_t stream) {
  relu_backward_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(h, dh, n);
  return cudaGetLastError();
}

cudaError_t launch_softmax_xent(const float* logits, const int* labels, float* grad, float* loss,
                                int rows, int classes, cudaStream_t stream) {
  softmax_xent_kernel<<<(rows + 127) / 128, 128, 0, stream>>>(logits, labels, grad, loss, rows,
                                                               classes);
  return cudaGetLastError();
}

}  // namespace pipeprof::harness
