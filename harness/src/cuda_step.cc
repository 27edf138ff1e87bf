// The GPU training step; see cuda_step.h. Every CUDA and cuBLAS call is checked and every resource
// is owned by a small RAII wrapper, so a failure anywhere (calibration included) throws StepError
// naming the call and releases what was made.
//
// cuBLAS is opened (dlopen) when a step first needs it instead of being linked: its libraries'
// initialisers (libcublasLt's) cost every process that links them about 0.3 s and 200 MB at start,
// whether it ever trains on the GPU or not (`pipeprof --help`, `analyze`, the Python module).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_kernels.h"
#include "cuda_step.h"
#include "pipeprof/pipelines/host_regions.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness {
namespace {

constexpr float kLearningRate = 0.05F;

[[noreturn]] void fail(const char* call, const char* what, const char* file, int line) {
  throw StepError(fmt::format("cuda step: {} failed: {} ({}:{})", call, what, file, line));
}

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    fail(call, fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e)).c_str(), file,
         line);
  }
}

// The cuBLAS functions the step calls, from the library opened on first use (the `_v2` symbols
// that cublas_v2.h's names stand for). Throws StepError naming the library or symbol when they are
// missing; a later call tries again.
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasSaxpy_v2) saxpy = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
};

// Where the CUDA runtime this program uses lies: cuBLAS is looked for beside it first, then on the
// loader's usual paths.
std::string runtime_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr)
    return {};
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
}

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    const std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
    void* lib = nullptr;
    if (const std::string folder = runtime_folder(); !folder.empty())
      lib = ::dlopen((folder + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      throw StepError(fmt::format("cuda step: cuBLAS ({}) could not be loaded: {}", name,
                                  why != nullptr ? why : "not found"));
    }
    // Kept open for the process's life: handles made from it may outlive any one step.
    CublasApi a;
    const auto resolve = [&](auto& f, const char* symbol) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(lib, symbol));
      if (f == nullptr)
        throw StepError(fmt::format("cuda step: {} has no {}", name, symbol));
    };
    resolve(a.create, "cublasCreate_v2");
    resolve(a.destroy, "cublasDestroy_v2");
    resolve(a.set_stream, "cublasSetStream_v2");
    resolve(a.sgemm, "cublasSgemm_v2");
    resolve(a.saxpy, "cublasSaxpy_v2");
    resolve(a.status_string, "cublasGetStatusString");
    resolve(a.status_name, "cublasGetStatusName");
    return a;
  }();
  return api;
}

void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    const CublasApi& api = cublas_api();
    fail(call, fmt::format("{} ({})", api.status_string(s), api.status_name(s)).c_str(), file,
         line);
  }
}

#define PIPEPROF_CHECK(call) check((call), #call, __FILE__, __LINE__)
// A cuBLAS call through the opened library, named as cuBLAS names it.
#define PIPEPROF_CUBLAS(api, function, name, ...) \
  check((api).function(__VA_ARGS__), name, __FILE__, __LINE__)

// Owners. Destructors never throw: a release that fails during unwinding is ignored.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    PIPEPROF_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(1, n) * sizeof(T)));
  }
  ~DeviceArray() {
    if (p_ != nullptr) (void)cudaFree(p_);
  }
  DeviceArray(DeviceArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(o.n_) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    PIPEPROF_CHECK(cudaMallocHost(&p_, std::max<size_t>(1, bytes)));
  }
  ~PinnedBuffer() {
    if (p_ != nullptr) (void)cudaFreeHost(p_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(o.bytes_) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { PIPEPROF_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { PIPEPROF_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class Cublas {
 public:
  Cublas() : api_(cublas_api()) { PIPEPROF_CUBLAS(api_, create, "cublasCreate", &h_); }
  ~Cublas() { (void)api_.destroy(h_); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  cublasHandle_t get() const { return h_; }
  const CublasApi& api() const { return api_; }

 private:
  const CublasApi& api_;
  cublasHandle_t h_ = nullptr;
};

// Selects device 0 before the other members create streams, events and the cuBLAS handle on it.
struct DeviceZero {
  DeviceZero() { PIPEPROF_CHECK(cudaSetDevice(0)); }
};

// The step whose observer is installed (host_regions.h), so an older step's destruction does not
// remove a newer one's.
std::atomic<const void*> g_observer_owner{nullptr};

class CudaStep final : public Step {
 public:
  CudaStep(double target_ms, int batch, int inputs, int classes)
      : target_ms_(target_ms), batch_(batch), inputs_(inputs), classes_(classes) {
    if (target_ms <= 0) throw StepError("cuda step: the target time must be positive");
    cudaDeviceProp prop{};
    PIPEPROF_CHECK(cudaGetDeviceProperties(&prop, 0));
    device_ = prop.name;
    PIPEPROF_CUBLAS(blas_.api(), set_stream, "cublasSetStream", blas_.get(), compute_.get());

    const size_t nx = static_cast<size_t>(batch_) * inputs_;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0F, 1.0F);
    std::vector<float> base(nx);
    for (auto& v : base)
      v = normal(rng);
    std::vector<int> labels(static_cast<size_t>(batch_));
    for (auto& l : labels)
      l = static_cast<int>(rng() % static_cast<unsigned>(classes_));
    base_ = DeviceArray<float>(nx);
    x_ = DeviceArray<float>(nx);
    labels_ = DeviceArray<int>(labels.size());
    staging_ = PinnedBuffer(nx);  // the model reads at most one byte per feature
    batch_bytes_ = DeviceArray<unsigned char>(nx);
    loss_device_ = DeviceArray<float>(1);
    loss_host_ = PinnedBuffer(sizeof(float));
    PIPEPROF_CHECK(cudaMemcpy(base_.get(), base.data(), nx * sizeof(float), cudaMemcpyHostToDevice));
    PIPEPROF_CHECK(cudaMemcpy(labels_.get(), labels.data(), labels.size() * sizeof(int),
                              cudaMemcpyHostToDevice));
    calibrate();
    // A shared-memory store's arena is registered with the driver once, so batches that live in it
    // are copied to the device straight from the mapping.
    g_observer_owner = this;
    pipelines::set_host_region_observer(
        {[this](void* region, size_t bytes) { register_region(region, bytes); },
         [this](void* region, size_t bytes) { unregister_region(region, bytes); }});
  }

  ~CudaStep() override {
    const void* self = this;
    if (g_observer_owner.compare_exchange_strong(self, nullptr))
      pipelines::set_host_region_observer({});
  }
  CudaStep(const CudaStep&) = delete;
  CudaStep& operator=(const CudaStep&) = delete;

  std::string name() const override { return fmt::format("cuda:{}", target_ms_); }
  double target_ms() const override { return target_ms_; }
  double last_loss() const override { return loss_; }

  void run(const pipelines::Element& batch) override {
    // Stage the bytes the model reads (the first tensor's, up to one per feature) in pinned memory
    // so the copy engine can move them while the host goes on.
    size_t n = 0;
    const void* source = staging_.get();
    if (!batch.empty()) {
      n = std::min(batch.front().nbytes(), staging_.bytes());
      const std::byte* data = batch.front().data();
      if (n > 0 && in_registered_region(data, n)) {
        source = data;  // already pinned: no staging copy
        ++direct_copies_;
      } else if (n > 0) {
        std::memcpy(staging_.get(), data, n);
        ++staged_copies_;
      }
    }
    train_step(source, n);
  }

  CudaStepInfo info() const {
    std::lock_guard lock(regions_mu_);
    CudaStepInfo i;
    i.batch = batch_;
    i.inputs = inputs_;
    i.hidden = hidden_;
    i.classes = classes_;
    i.passes = passes_;
    i.calibrated_ms = calibrated_ms_;
    i.device = device_;
    i.direct_copies = direct_copies_.load();
    i.staged_copies = staged_copies_.load();
    i.registered_regions = regions_.size();
    return i;
  }

 private:
  void register_region(void* base, size_t bytes) {
    const cudaError_t e = cudaHostRegister(base, bytes, cudaHostRegisterDefault);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it
      std::fprintf(stderr,
                   "pipeprof: cuda step: cannot register a %zu-byte shared-memory arena (%s); its "
                   "batches are staged through pinned memory\n",
                   bytes, cudaGetErrorString(e));
      return;
    }
    std::lock_guard lock(regions_mu_);
    regions_.emplace_back(static_cast<const std::byte*>(base), bytes);
  }

  void unregister_region(void* base, size_t bytes) {
    std::lock_guard lock(regions_mu_);
    const auto it = std::find(regions_.begin(), regions_.end(),
                              std::pair{static_cast<const std::byte*>(base), bytes});
    if (it == regions_.end()) return;
    // Copies from the region must be done before it stops being pinned.
    (void)cudaStreamSynchronize(copy_.get());
    (void)cudaHostUnregister(base);
    regions_.erase(it);
  }

  bool in_registered_region(const std::byte* p, size_t n) const {
    std::lock_guard lock(regions_mu_);
    return std::any_of(regions_.begin(), regions_.end(), [&](const auto& r) {
      return r.first <= p && p + n <= r.first + r.second;
    });
  }

  void resize(int hidden) {
    hidden_ = hidden;
    const size_t h = static_cast<size_t>(hidden);
    w1_ = DeviceArray<float>(static_cast<size_t>(inputs_) * h);
    w2_ = DeviceArray<float>(h * classes_);
    dw1_ = DeviceArray<float>(static_cast<size_t>(inputs_) * h);
    dw2_ = DeviceArray<float>(h * classes_);
    h_ = DeviceArray<float>(static_cast<size_t>(batch_) * h);
    dh_ = DeviceArray<float>(static_cast<size_t>(batch_) * h);
    logits_ = DeviceArray<float>(static_cast<size_t>(batch_) * classes_);
    dlogits_ = DeviceArray<float>(static_cast<size_t>(batch_) * classes_);
    // He-style initialization, drawn on the device: a wide layer holds billions of weights, which
    // the host would take minutes to draw.
    PIPEPROF_CHECK(launch_normal_fill(w1_.get(), w1_.size(),
                                      std::sqrt(2.0F / static_cast<float>(inputs_)), 7,
                                      compute_.get()));
    PIPEPROF_CHECK(launch_normal_fill(w2_.get(), w2_.size(), std::sqrt(2.0F / static_cast<float>(h)),
                                      8, compute_.get()));
    // Also the constructor's uploads: a copy from pageable memory may return before its DMA is
    // done, and the compute stream does not wait for the legacy stream.
    PIPEPROF_CHECK(cudaDeviceSynchronize());
  }

  // Row-major C[m x n] = alpha * op(A) op(B) + beta * C, with op(A) m x k and op(B) k x n, on the
  // compute stream. cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T.
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
            float* c, float beta = 0.0F) {
    const float alpha = 1.0F;
    const int lda = trans_a ? m : k;
    const int ldb = trans_b ? k : n;
    PIPEPROF_CUBLAS(blas_.api(), sgemm, "cublasSgemm", blas_.get(),
                    trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                    k, &alpha, b, ldb, a, lda, &beta, c, n);
  }

  void sgd(DeviceArray<float>& w, const DeviceArray<float>& dw, float rate) {
    const float step = -rate;
    PIPEPROF_CUBLAS(blas_.api(), saxpy, "cublasSaxpy", blas_.get(), static_cast<int>(w.size()),
                    &step, dw.get(), 1, w.get(), 1);
  }

  // One step on `nbytes` staged bytes; returns once the loss is back on the host.
  void train_step(const void* source, size_t nbytes) {
    const size_t nx = static_cast<size_t>(batch_) * inputs_;
    const size_t nh = static_cast<size_t>(batch_) * hidden_;
    cudaStream_t compute = compute_.get();
    if (nbytes > 0) {
      PIPEPROF_CHECK(cudaMemcpyAsync(batch_bytes_.get(), source, nbytes,
                                     cudaMemcpyHostToDevice, copy_.get()));
    }
    PIPEPROF_CHECK(cudaEventRecord(copied_.get(), copy_.get()));
    PIPEPROF_CHECK(cudaStreamWaitEvent(compute, copied_.get(), 0));
    PIPEPROF_CHECK(launch_features(batch_bytes_.get(), nbytes, base_.get(), x_.get(), nx, compute));
    // Passes over the batch (gradient steps): more than one where the widest layer the device
    // holds is still short of the target time.
    for (int pass = 0; pass < passes_; ++pass) {
      // Forward.
      gemm(false, false, batch_, hidden_, inputs_, x_.get(), w1_.get(), h_.get());
      PIPEPROF_CHECK(launch_relu(h_.get(), nh, compute));
      gemm(false, false, batch_, classes_, hidden_, h_.get(), w2_.get(), logits_.get());
      PIPEPROF_CHECK(cudaMemsetAsync(loss_device_.get(), 0, sizeof(float), compute));
      PIPEPROF_CHECK(launch_softmax_xent(logits_.get(), labels_.get(), dlogits_.get(),
                                         loss_device_.get(), batch_, classes_, compute));
      // Backward.
      gemm(true, false, hidden_, classes_, batch_, h_.get(), dlogits_.get(), dw2_.get());
      gemm(false, true, batch_, hidden_, classes_, dlogits_.get(), w2_.get(), dh_.get());
      PIPEPROF_CHECK(launch_relu_backward(h_.get(), dh_.get(), nh, compute));
      gemm(true, false, inputs_, hidden_, batch_, x_.get(), dh_.get(), dw1_.get());
      // Update.
      // The output layer's rate shrinks with the width: each logit sums `hidden` updated weights.
      sgd(w1_, dw1_, kLearningRate);
      sgd(w2_, dw2_, kLearningRate * std::min(1.0F, 256.0F / static_cast<float>(hidden_)));
    }
    PIPEPROF_CHECK(cudaMemcpyAsync(loss_host_.get(), loss_device_.get(), sizeof(float),
                                   cudaMemcpyDeviceToHost, compute));
    PIPEPROF_CHECK(cudaStreamSynchronize(compute));
    loss_ = static_cast<double>(*static_cast<const float*>(loss_host_.get()));
  }

  // The step's cost grows about linearly with the hidden width: measure, rescale, repeat until one
  // step lands within 10% of the target. The width is capped (by the device's free memory, by
  // cuBLAS's int sizes, and at 2^18 units so that no weight array passes 1 GiB); a longer target
  // than the widest layer reaches takes several passes over the batch.
  void calibrate() {
    size_t free_bytes = 0, total_bytes = 0;
    PIPEPROF_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    // Per hidden unit: w1, dw1 (inputs each), w2, dw2 (classes each), h, dh (batch each).
    const size_t per_unit = sizeof(float) * (2 * static_cast<size_t>(inputs_) + 2 * classes_ +
                                             2 * static_cast<size_t>(batch_));
    const size_t int_bound = static_cast<size_t>(std::numeric_limits<int>::max()) /
                             static_cast<size_t>(std::max({inputs_, batch_, classes_}));
    const int max_hidden = static_cast<int>(
        std::max<size_t>(16, std::min({free_bytes / 2 / per_unit, kMaxHidden, int_bound})));
    int hidden = std::min(256, max_hidden);
    passes_ = 1;
    int measured_hidden = 0, measured_passes = 0;  // what calibrated_ms_ was measured with
    // A long target is timed over fewer steps.
    const int timed = target_ms_ >= 200 ? 2 : 5;
    for (int round = 0; round < 10; ++round) {
      if (hidden != hidden_) resize(hidden);
      train_step(nullptr, 0);  // warm-up: cuBLAS picks its kernels
      std::vector<int64_t> times;
      for (int i = 0; i < timed; ++i) {
        const int64_t t0 = trace::now_ns();
        train_step(nullptr, 0);
        times.push_back(trace::now_ns() - t0);
      }
      std::sort(times.begin(), times.end());
      calibrated_ms_ = static_cast<double>(times[times.size() / 2]) / 1e6;
      measured_hidden = hidden;
      measured_passes = passes_;
      if (std::abs(calibrated_ms_ - target_ms_) <= 0.1 * target_ms_) break;
      const double ratio = target_ms_ / std::max(calibrated_ms_, 1e-3);
      if (hidden == max_hidden && ratio > 1) {
        // The widest layer is short of the target: enough passes, each over a layer narrowed to
        // its share of the target.
        const double total = std::min(passes_ * ratio, double{kMaxPasses});
        passes_ = static_cast<int>(std::ceil(total));
        hidden = std::clamp(static_cast<int>(hidden * total / passes_), 16, max_hidden);
        continue;
      }
      // Small widths are dominated by fixed launch costs: grow at most 16x per round.
      const int next = std::clamp(static_cast<int>(hidden * std::clamp(ratio, 1.0 / 16, 16.0)), 16,
                                  max_hidden);
      if (next == hidden) break;  // at a bound: the target is out of reach
      hidden = next;
    }
    // The last measured setting (a change decided in the last round was never measured), with
    // fresh weights: calibration trained them.
    passes_ = measured_passes;
    resize(measured_hidden);
  }

  static constexpr size_t kMaxHidden = size_t{1} << 18;
  static constexpr int kMaxPasses = 100000;

  double target_ms_;
  int batch_, inputs_, classes_, hidden_ = 0;
  int passes_ = 1;  // forward/backward/update passes per step
  double calibrated_ms_ = 0;
  double loss_ = std::nan("");
  std::string device_;
  DeviceZero device_zero_;
  Stream copy_, compute_;
  Event copied_;
  Cublas blas_;
  PinnedBuffer staging_, loss_host_;
  DeviceArray<unsigned char> batch_bytes_;
  DeviceArray<float> base_, x_, w1_, w2_, dw1_, dw2_, h_, dh_, logits_, dlogits_, loss_device_;
  DeviceArray<int> labels_;
  std::atomic<int64_t> direct_copies_{0}, staged_copies_{0};
  mutable std::mutex regions_mu_;
  std::vector<std::pair<const std::byte*, size_t>> regions_;
};

}  // namespace

bool cuda_device_usable(std::string* why_not) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  std::string why;
  if (e == cudaErrorNoDevice || (e == cudaSuccess && devices < 1)) {
    why = "no CUDA device";
  } else if (e == cudaErrorInsufficientDriver) {
    why = "the CUDA driver is missing or older than the runtime";
  } else if (e != cudaSuccess) {
    why = fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(e),
                      cudaGetErrorName(e));
  }
  if (why.empty()) (void)cuda_blas_usable(&why);
  if (why_not != nullptr) *why_not = why;
  return why.empty();
}

bool cuda_blas_usable(std::string* why_not) {
  try {
    (void)cublas_api();
  } catch (const StepError& e) {
    if (why_not != nullptr) *why_not = e.what();
    return false;
  }
  if (why_not != nullptr) why_not->clear();
  return true;
}

std::unique_ptr<Step> make_cuda_step(double target_ms) {
  return std::make_unique<CudaStep>(target_ms, 256, 1024, 10);
}

CudaStepInfo cuda_step_info(const Step& step) {
  if (const auto* s = dynamic_cast<const CudaStep*>(&step)) return s->info();
  return {};
}

}  // namespace pipeprof::harness
