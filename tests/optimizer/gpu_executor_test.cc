// The CUDA executor's behaviour beyond single ops: kernel reuse across
// traces, symbolic decode loops, in-place cache updates, transfers, errors.
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::AllClose;
using testing::ReadF32;

std::shared_ptr<CudaExecutor> Gpu() {
  return InitCuda().ok() ? GetCudaExecutor() : nullptr;
}

#define KILN_REQUIRE_GPU()                                         \
  if (Gpu() == nullptr) GTEST_SKIP() << InitCuda().message()

Tensor DeviceRandom(Shape shape, uint64_t seed) {
  Tensor t = to(random_normal(shape, seed), Device::Cuda());
  EXPECT_TRUE(t.realize().ok());
  return t;
}

TEST(GpuExecutor, SecondRealizationOfAnIdenticalTraceCompilesNothing) {
  KILN_REQUIRE_GPU();
  const auto build = [](uint64_t seed) {
    Tensor x = DeviceRandom({13, 70}, seed);
    Tensor w = DeviceRandom({70, 33}, seed + 1);
    return softmax(matmul(rms_norm(x, 1e-5), w) * 0.5);
  };
  Tensor first = build(1);
  KILN_EXPECT_OK(first.realize());
  const CudaExecutorStats before = Gpu()->stats();
  Tensor second = build(7);
  KILN_EXPECT_OK(second.realize());
  const CudaExecutorStats after = Gpu()->stats();
  EXPECT_EQ(after.kernels_compiled, before.kernels_compiled);
  EXPECT_EQ(after.plans_built, before.plans_built);
  EXPECT_EQ(after.plan_hits, before.plan_hits + 1);
  Tensor cpu = softmax(matmul(rms_norm(to(DeviceRandom({13, 70}, 7), Device::Cpu()), 1e-5),
                              to(DeviceRandom({70, 33}, 8), Device::Cpu())) * 0.5);
  EXPECT_TRUE(AllClose(ReadF32(second), ReadF32(cpu), 1e-5, 1e-4));
}

TEST(GpuExecutor, DecodeLoopOfHundredStepsCompilesOnlyInItsFirstStep) {
  KILN_REQUIRE_GPU();
  const Symbol pos("pos", 127);
  Tensor cache = to(contiguous(zeros({2, 128, 16})), Device::Cuda());
  KILN_EXPECT_OK(cache.realize());
  Tensor cpu_cache = contiguous(zeros({2, 128, 16}));
  const void* storage = nullptr;
  int64_t compiled_after_first = -1;
  for (int64_t step = 0; step < 100; ++step) {
    Tensor k = to(random_normal({2, 1, 16}, step), Device::Cuda());
    Tensor q = to(random_normal({4, 1, 16}, 1000 + step), Device::Cuda());
    cache = slice_update(cache, k, 1, Dim(pos));
    Tensor out = attention(q, slice(cache, 1, 0, Dim(pos) + 1), slice(cache, 1, 0, Dim(pos) + 1),
                           {.causal = true});
    KILN_EXPECT_OK(RealizeAll({out, cache}, {{pos, step}}));
    if (step == 0) {
      compiled_after_first = Gpu()->stats().kernels_compiled;
      storage = cache.node()->data.storage->data();
    }
    // The cache is updated in place: no copy per step.
    EXPECT_EQ(cache.node()->data.storage->data(), storage) << "step " << step;
    cpu_cache = slice_update(cpu_cache, random_normal({2, 1, 16}, step), 1, step);
    if (step % 33 == 0) {
      Tensor cpu_out = attention(random_normal({4, 1, 16}, 1000 + step), slice(cpu_cache, 1, 0, step + 1),
                                 slice(cpu_cache, 1, 0, step + 1), {.causal = true});
      EXPECT_TRUE(AllClose(ReadF32(out), ReadF32(cpu_out), 1e-5, 1e-4)) << "step " << step;
    }
    KILN_EXPECT_OK(cpu_cache.realize());
  }
  EXPECT_EQ(Gpu()->stats().kernels_compiled, compiled_after_first);
}

TEST(GpuExecutor, TransfersRoundTripAndViewsNeedNoKernel) {
  KILN_REQUIRE_GPU();
  Tensor host = random_uniform({17, 5}, 3, -1, 1);
  Tensor device = to(host, Device::Cuda());
  KILN_EXPECT_OK(device.realize());
  const int64_t launches = Gpu()->stats().launches;
  Tensor t = transpose(device, 0, 1);
  KILN_EXPECT_OK(t.realize());
  EXPECT_EQ(Gpu()->stats().launches, launches);  // a view: metadata only
  EXPECT_EQ(t.node()->data.storage, device.node()->data.storage);
  EXPECT_EQ(ReadF32(to(t, Device::Cpu())), ReadF32(transpose(host, 0, 1)));
}

TEST(GpuExecutor, OutOfRangeGatherIsAnError) {
  KILN_REQUIRE_GPU();
  Tensor table = DeviceRandom({10, 4}, 4);
  Tensor ids = to(Tensor::FromHost<int32_t>({3, 10}, {2}), Device::Cuda());
  absl::Status s = index_select(table, 0, ids).realize();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  // The error is not sticky.
  KILN_EXPECT_OK(index_select(table, 0, to(Tensor::FromHost<int32_t>({3, 9}, {2}), Device::Cuda())).realize());
}

TEST(GpuExecutor, IntegerDivisionByZeroIsAnError) {
  KILN_REQUIRE_GPU();
  Tensor a = to(Tensor::FromHost<int32_t>({4, 5}, {2}), Device::Cuda());
  Tensor b = to(Tensor::FromHost<int32_t>({2, 0}, {2}), Device::Cuda());
  EXPECT_EQ(div(a, b).realize().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GpuExecutor, MixingDevicesInOneOpIsAnError) {
  KILN_REQUIRE_GPU();
  Tensor a = DeviceRandom({3}, 1);
  Tensor b = random_normal({3}, 2);
  EXPECT_EQ((a + b).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln
