// The op conformance suite on the GPU: every case against the CPU reference,
// on fresh random inputs, with every buffer the GPU executor allocates
// poisoned first (so an unwritten element shows up as NaN or -1).
#include <random>

#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "tests/optimizer/conformance_cases.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

class GpuConformance : public ::testing::TestWithParam<testing::ConformanceCase> {};

// Case `c` on fresh random inputs, on the GPU and on the CPU: the same values.
void ExpectTheCpuReference(const testing::ConformanceCase& c) {
  const uint64_t seed = std::random_device()();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const std::vector<Tensor> expected = c.build(testing::MakeInputs(c, seed, Device::Cpu()));
  const std::vector<Tensor> actual = c.build(testing::MakeInputs(c, seed, Device::Cuda()));
  KILN_EXPECT_OK(RealizeAll(expected, c.bindings));
  ASSERT_TRUE(RealizeAll(actual, c.bindings).ok()) << RealizeAll(actual, c.bindings);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_EQ(actual[i].device(), Device::Cuda());
    ASSERT_EQ(actual[i].shape(), expected[i].shape()) << "output " << i;
    if (IsFloating(expected[i].dtype())) {
      EXPECT_TRUE(testing::AllClose(testing::ReadF32(actual[i]), testing::ReadF32(expected[i]), c.atol,
                                    c.rtol))
          << "output " << i;
    } else {
      EXPECT_EQ(testing::ReadI64(actual[i]), testing::ReadI64(expected[i])) << "output " << i;
    }
  }
}

TEST_P(GpuConformance, MatchesTheCpuReference) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  GetCudaExecutor()->set_poison_buffers(true);
  ExpectTheCpuReference(GetParam());
}

// The products again without CudaExecutor::set_pipelined_products (the
// default's): prefill-sized products on one 64 x 64 mma tile a block.
class GpuConformanceUnpipelined : public ::testing::TestWithParam<testing::ConformanceCase> {};

TEST_P(GpuConformanceUnpipelined, MatchesTheCpuReference) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  gpu->set_poison_buffers(true);
  gpu->set_pipelined_products(false);
  ExpectTheCpuReference(GetParam());
  gpu->set_pipelined_products(true);
}

// The products with three columns a thread of a decode product
// (CudaExecutor::set_decode_columns), odd N included.
class GpuConformanceDecodeColumns : public ::testing::TestWithParam<testing::ConformanceCase> {};

TEST_P(GpuConformanceDecodeColumns, MatchesTheCpuReference) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  gpu->set_poison_buffers(true);
  gpu->set_decode_columns(3);
  ExpectTheCpuReference(GetParam());
  gpu->set_decode_columns(lowering::LowerOptions().decode_columns);
}

std::vector<testing::ConformanceCase> ProductCases() {
  std::vector<testing::ConformanceCase> cases;
  for (testing::ConformanceCase& c : testing::ConformanceCases(/*every_shape=*/true)) {
    if (c.name.rfind("matmul/", 0) == 0 || c.name.find("_product") != std::string::npos) {
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GpuOpsUnpipelined, GpuConformanceUnpipelined, ::testing::ValuesIn(ProductCases()),
                         testing::TestName);

INSTANTIATE_TEST_SUITE_P(GpuOpsDecodeColumns, GpuConformanceDecodeColumns, ::testing::ValuesIn(ProductCases()),
                         testing::TestName);

INSTANTIATE_TEST_SUITE_P(GpuOps, GpuConformance,
                         ::testing::ValuesIn(testing::ConformanceCases(/*every_shape=*/true)),
                         testing::TestName);

}  // namespace
}  // namespace kiln
