// The GPU step and its timeline (label gpu): each test skips, saying why, where no CUDA device is
// usable (or pipeprof was built without CUDA).
#include <gtest/gtest.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../src/cuda_step.h"
#include "pipeprof/pipelines/host_regions.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/trace/gpu_tracer.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::harness {
namespace {

#define SKIP_WITHOUT_GPU()                                                   \
  do {                                                                       \
    std::string why;                                                         \
    if (!cuda_step_available(&why)) GTEST_SKIP() << "no usable GPU: " << why; \
  } while (false)

// Whether a library whose file name holds `part` is loaded in this process.
bool library_loaded(const char* part) {
  struct Search {
    const char* part;
    bool found = false;
  } search{part};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->part) != nullptr)
          s->found = true;
        return s->found ? 1 : 0;
      },
      &search);
  return search.found;
}

// cuBLAS is not linked: a process that never trains on the GPU does not pay for its initialisers
// (0.3 s and 200 MB at every start). It is opened when first needed, with or without a device.
TEST(CudaStep, CublasIsOpenedOnFirstUseNotAtStart) {
  ASSERT_FALSE(library_loaded("libcublas"));
  std::string why;
  if (!cuda_blas_usable(&why)) GTEST_SKIP() << why;
  EXPECT_TRUE(library_loaded("libcublas"));
  EXPECT_TRUE(why.empty()) << why;
}

pipelines::Element batch_of(size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>((i * 131) & 0xff);
  return {pipelines::Tensor::from_vector(data)};
}

TEST(CudaStep, CalibratesAndTheLossFallsOver50Steps) {
  SKIP_WITHOUT_GPU();
  auto step = make_step("cuda:5").step;
  EXPECT_EQ(step->name(), "cuda:5");
  const CudaStepInfo info = cuda_step_info(*step);
  EXPECT_GT(info.hidden, 0);
  EXPECT_FALSE(info.device.empty());
  // Calibration lands near the target (or at the width the device's memory allows).
  EXPECT_GT(info.calibrated_ms, 0);
  EXPECT_LT(info.calibrated_ms, 5 * 2.0) << "hidden " << info.hidden;
  const pipelines::Element batch = batch_of(256 * 1024);
  std::vector<double> losses;
  for (int i = 0; i < 50; ++i) {
    step->run(batch);
    losses.push_back(step->last_loss());
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << i;
  }
  EXPECT_LT(losses.back(), 0.5 * losses.front())
      << "first " << losses.front() << ", last " << losses.back();
}

// A step longer than the widest layer reaches (100 ms: about 10 passes of the widest layer on an
// H100) calibrates in seconds, its weights drawn on the device, and runs near its target.
TEST(CudaStep, ALongStepCalibratesInSecondsWithSeveralPasses) {
  SKIP_WITHOUT_GPU();
  const auto t0 = std::chrono::steady_clock::now();
  auto step = make_step("cuda:100").step;
  const double build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const CudaStepInfo info = cuda_step_info(*step);
  EXPECT_LT(build_s, 60) << "hidden " << info.hidden << ", passes " << info.passes;
  // The widest layer (2^18 units) takes about 10 ms a pass on an H100 or H200.
  EXPECT_GT(info.passes, 1) << "hidden " << info.hidden;
  EXPECT_NEAR(info.calibrated_ms, 100, 15) << "hidden " << info.hidden << ", passes "
                                           << info.passes;
  const pipelines::Element batch = batch_of(256 * 1024);
  std::vector<double> ms;
  for (int i = 0; i < 3; ++i) {
    const auto s0 = std::chrono::steady_clock::now();
    step->run(batch);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
    ASSERT_TRUE(std::isfinite(step->last_loss()));
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_NEAR(ms[1], 100, 25);
}

TEST(CudaStep, BatchesInARegisteredArenaAreCopiedStraightFromIt) {
  SKIP_WITHOUT_GPU();
  auto step = make_step("cuda:1").step;
  constexpr size_t kBytes = size_t{4} << 20;
  std::shared_ptr<std::byte> arena(static_cast<std::byte*>(std::aligned_alloc(4096, kBytes)),
                                   [](std::byte* p) { std::free(p); });
  ASSERT_NE(arena, nullptr);
  std::memset(arena.get(), 7, kBytes);
  pipelines::host_region_mapped(arena.get(), kBytes);  // as a shared-memory store does
  EXPECT_EQ(cuda_step_info(*step).registered_regions, 1u);
  const pipelines::Element in_arena{
      pipelines::Tensor::wrap(pipelines::DType::kUInt8, {static_cast<int64_t>(kBytes)}, arena)};
  step->run(in_arena);
  step->run(batch_of(4096));
  CudaStepInfo info = cuda_step_info(*step);
  EXPECT_EQ(info.direct_copies, 1);
  EXPECT_EQ(info.staged_copies, 1);
  EXPECT_TRUE(std::isfinite(step->last_loss()));
  pipelines::host_region_unmapped(arena.get(), kBytes);
  EXPECT_EQ(cuda_step_info(*step).registered_regions, 0u);
}

TEST(CudaStep, AutoPicksTheGpuWithTheExperimentsTime) {
  SKIP_WITHOUT_GPU();
  StepChoice c = make_step("auto", "sleep:4");
  EXPECT_EQ(c.step->name(), "cuda:4");
  EXPECT_TRUE(c.notice.empty()) << c.notice;
}

TEST(CudaStep, TraceHoldsTheStepsKernelsAndCopiesInsideItsTimeWindow) {
  SKIP_WITHOUT_GPU();
  std::string why;
  if (!trace::GpuTracer::available(&why)) GTEST_SKIP() << "CUPTI unusable: " << why;
  auto step = make_step("cuda:2").step;
  const pipelines::Element batch = batch_of(64 * 1024);
  trace::Recorder& rec = trace::Recorder::global();
  rec.start();
  trace::GpuTracer gpu;
  gpu.start();
  ASSERT_TRUE(gpu.collecting()) << gpu.notice();
  const trace::NameId step_name = rec.intern("test step");
  constexpr int kSteps = 5;
  for (int i = 0; i < kSteps; ++i) {
    trace::ScopedSpan s(step_name, trace::category::step());
    step->run(batch);
  }
  gpu.stop();
  trace::Trace t = rec.stop();
  EXPECT_EQ(gpu.dropped_records(), 0);

  const int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  const trace::Lane& cpu = t.lanes[t.thread_lane(::getpid(), tid)];
  std::vector<std::pair<int64_t, int64_t>> windows;
  int api_calls = 0;
  for (const trace::Span& s : cpu.spans) {
    if (t.name(s) == "test step") windows.emplace_back(s.start_ns, s.start_ns + s.dur_ns);
    if (t.strings.str(s.category) == "cuda_api") ++api_calls;
  }
  ASSERT_EQ(windows.size(), static_cast<size_t>(kSteps));
  EXPECT_GT(api_calls, kSteps * 5);

  int kernels = 0, copies = 0, gemms = 0, losses = 0;
  for (const trace::Lane& lane : t.lanes) {
    if (lane.kind != trace::LaneKind::kGpuStream) continue;
    for (const trace::Span& s : lane.spans) {
      const std::string name(t.name(s));
      // CUPTI maps GPU timestamps onto the host clock by interpolation: allow it 50 us.
      constexpr int64_t kSlackNs = 50'000;
      const bool inside = std::any_of(windows.begin(), windows.end(), [&](const auto& w) {
        return w.first - kSlackNs <= s.start_ns && s.start_ns + s.dur_ns <= w.second + kSlackNs;
      });
      EXPECT_TRUE(inside) << name << " at " << s.start_ns << " is outside every step";
      if (name.starts_with("Memcpy HtoD")) ++copies;
      if (name.starts_with("Memcpy")) continue;
      if (name == "Memset") continue;
      ++kernels;
      if (name.find("gemm") != std::string::npos || name.find("Gemm") != std::string::npos) ++gemms;
      if (name.find("softmax_xent") != std::string::npos) ++losses;
    }
  }
  EXPECT_EQ(copies, kSteps);   // one batch copy per step
  EXPECT_EQ(losses, kSteps);   // one loss kernel per step
  EXPECT_GE(gemms, 4 * kSteps) << "forward and backward GEMMs";
  EXPECT_GE(kernels, 9 * kSteps);
  EXPECT_GE(t.flows.size(), static_cast<size_t>(kernels)) << "a flow from each launch";
}

}  // namespace
}  // namespace pipeprof::harness
