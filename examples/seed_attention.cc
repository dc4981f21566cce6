// The seed's example (Mirage's attention demo) in kiln: Q [64,1,128],
// K [64,128,4096], V [64,4096,128] in f16, softmax(Q @ K) @ V written as
// plain tensor code. With a GPU, the first realize() hands the trace's
// region to the superoptimizer (search, verification, NVRTC, timing against
// the default lowering; the result cached on disk under KILN_CACHE_DIR), and
// later calls with the same shapes launch the cached kernel. The result is
// checked against the CPU reference executor running the same code.
//
//   seed_attention [--cpu] [--log]
//     --cpu  run on the CPU reference alone (also what happens without a GPU)
//     --log  print the search's report for the region to stderr
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "jit/options.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/search_trace.h"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Tensor;

Tensor Attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  return kiln::matmul(kiln::softmax(kiln::matmul(q, k), -1), v);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "seed_attention: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool cpu_only = false, log = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cpu") == 0) {
      cpu_only = true;
    } else if (std::strcmp(argv[i], "--log") == 0) {
      log = true;
    } else {
      std::fprintf(stderr, "usage: seed_attention [--cpu] [--log]\n");
      return 2;
    }
  }
  // The inputs, made on the CPU (K scaled as ../shared/bench/peers.py does).
  const Tensor q = kiln::random_normal({64, 1, 128}, 1, 0, 1, DType::kF16);
  const Tensor k = kiln::random_normal({64, 128, 4096}, 2, 0, 0.1, DType::kF16);
  const Tensor v = kiln::random_normal({64, 4096, 128}, 3, 0, 1, DType::kF16);
  for (const Tensor* t : {&q, &k, &v}) {
    if (absl::Status s = t->realize(); !s.ok()) return Fail(s.ToString());
  }
  // The reference: the same code on the CPU reference executor, in f32.
  const auto reference_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> want = kiln::cast(Attention(q, k, v), DType::kF32).to_host<float>();
  if (!want.ok()) return Fail(want.status().ToString());
  const double reference_seconds = Seconds(reference_start);

  Device device = Device::Cpu();
  if (!cpu_only) {
    if (absl::Status s = kiln::InitCuda(); s.ok()) {
      device = Device::Cuda();
      kiln::TraceSearchOptions options;
      const kiln::jit::CacheOptions cache = kiln::jit::CacheOptions::FromEnvironment();
      if (cache.disk) options.search.cache_dir = cache.directory;
      options.log = log;
      kiln::EnableSuperoptimizer(*kiln::GetCudaExecutor(), options);
    } else {
      std::printf("no GPU (%s): the CPU reference alone\n", std::string(s.message()).c_str());
    }
  }
  if (device.type == kiln::DeviceType::kCpu) {
    std::printf("softmax(Q @ K) @ V, Q [64,1,128] K [64,128,4096] V [64,4096,128] f16, on the CPU: %.3f s\n",
                reference_seconds);
    return 0;
  }

  const Tensor dq = kiln::to(q, device), dk = kiln::to(k, device), dv = kiln::to(v, device);
  for (const Tensor* t : {&dq, &dk, &dv}) {
    if (absl::Status s = t->realize(); !s.ok()) return Fail(s.ToString());
  }
  kiln::CudaExecutor& executor = *kiln::GetCudaExecutor();
  // First call: the trace is new, so its region is searched (or its result
  // read from the disk cache), compiled and launched.
  const auto first_start = std::chrono::steady_clock::now();
  const Tensor out = Attention(dq, dk, dv);
  if (absl::Status s = out.realize(); !s.ok()) return Fail(s.ToString());
  absl::StatusOr<std::vector<float>> got = kiln::cast(out, DType::kF32).to_host<float>();
  if (!got.ok()) return Fail(got.status().ToString());
  const double first_seconds = Seconds(first_start);

  // Later calls: the same code recorded again hits the cached plan. Each
  // run waits for its kernels and reports their GPU time (profiling on).
  constexpr int kCalls = 20;
  executor.set_profile(true);
  executor.ResetStats();
  for (int i = 0; i < kCalls; ++i) {
    if (absl::Status s = Attention(dq, dk, dv).realize(); !s.ok()) return Fail(s.ToString());
  }
  const kiln::CudaExecutorStats warm = executor.stats();
  executor.set_profile(false);

  // Checked against the CPU: the largest difference, as a fraction of the
  // output's largest magnitude (f16 storage rounds at about 1e-3).
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want->size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs((*want)[i])));
    const double d = std::fabs(static_cast<double>((*got)[i]) - (*want)[i]);
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  const double error = worst / std::max(scale, 1e-30);
  const double launches = static_cast<double>(warm.launches) / kCalls;
  std::printf("softmax(Q @ K) @ V, Q [64,1,128] K [64,128,4096] V [64,4096,128] f16, on the GPU\n");
  std::printf("  first call (search or cache, compile, run): %.3f s\n", first_seconds);
  std::printf("  later calls: %.1f us on the GPU, %.1f us on the host, %.0f kernel launch(es) each (%d calls, %lld plans reused)\n",
              warm.gpu_seconds / kCalls * 1e6, warm.host_seconds / kCalls * 1e6, launches, kCalls,
              static_cast<long long>(warm.plan_hits));
  std::printf("  max |GPU - CPU| / max |CPU| = %.2e (CPU reference %.3f s)\n", error, reference_seconds);
  if (!(error <= 1e-2)) return Fail("the GPU result does not match the CPU reference");
  std::printf("  matches the CPU reference\n");
  return 0;
}
