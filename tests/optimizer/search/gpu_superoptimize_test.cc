// The kernels the search chooses, compiled and run on the GPU, against the
// CPU reference executor running the original (unfused) tensor code on the
// same inputs; outputs are poisoned first (GraphRunner), odd shapes included.
#include <cmath>

#include "gtest/gtest.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/graph_runner.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;

void CheckOnGpu(const FusedCase& c, double tolerance) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  SearchOptions options;
  options.budget_seconds = 20;
  options.arch = executor->context().info().arch();
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    absl::StatusOr<std::unique_ptr<GraphRunner>> runner = GraphRunner::Create(*executor, g);
    if (!runner.ok()) return runner.status();
    return (*runner)->TimeMicroseconds(5, 5);
  };
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.graph.has_value()) << c.name << "\n" << r.report.ToString();
  // One kernel; or one a part where the region is factored (MLA's decode
  // step: factor.h), the last part's in the one before it where fused
  // (FuseRowProduct).
  if (r.parts.empty()) {
    EXPECT_EQ(r.graph->kernels.size(), 1u);
  } else {
    EXPECT_GE(r.graph->kernels.size() + 1, r.parts.size());
    EXPECT_LE(r.graph->kernels.size(), r.parts.size());
  }
  std::unique_ptr<GraphRunner> runner = ValueOrFail(GraphRunner::Create(*executor, *r.graph));
  ASSERT_NE(runner, nullptr);
  for (size_t i = 0; i < c.region.inputs.size(); ++i) {
    // The region's input #i is the case's leaf with that node.
    for (const Tensor& t : c.inputs) {
      if (t.node().get() != c.region.inputs[i]) continue;
      ASSERT_TRUE(runner->Upload(static_cast<int>(i), testing::ReadF32(t)).ok());
    }
  }
  ASSERT_TRUE(runner->Run().ok());
  const std::vector<float> got = ValueOrFail(runner->Download(static_cast<int>(c.region.inputs.size())));
  const std::vector<float> want = testing::ReadF32(c.output);
  const int bad = testing::ExpectWithinScale(got, want, tolerance);
  EXPECT_EQ(bad, 0) << r.report.chosen_text;
}

TEST(GpuSuperoptimize, BenchCases) {
  for (const std::string& name : FusedCaseNames()) {
    SCOPED_TRACE(name);
    CheckOnGpu(ValueOrFail(MakeFusedCase(name)), 1e-2);
  }
}

TEST(GpuSuperoptimize, RmsNormLinearOddShapes) {
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 127, 129}, {3, 4097, 127}, {17, 3, 1}, {127, 17, 4097}}) {
    for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " " << DTypeName(dtype));
      CheckOnGpu(RmsNormLinearCase(m, k, n, dtype), dtype == DType::kF32 ? 1e-4 : dtype == DType::kF16 ? 1e-2 : 4e-2);
    }
  }
}

TEST(GpuSuperoptimize, GatedMlpOddShapes) {
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 4097, 3}, {17, 127, 129}, {3, 64, 4097}}) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " " << DTypeName(dtype));
      CheckOnGpu(GatedMlpCase(m, k, n, dtype), dtype == DType::kF32 ? 1e-4 : 1e-2);
    }
  }
}

TEST(GpuSuperoptimize, LoraOddShapes) {
  for (auto [m, k, n, r] : std::vector<std::array<int64_t, 4>>{{1, 127, 129, 16}, {17, 4097, 3, 8}, {3, 300, 1000, 1}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " r" << r);
    CheckOnGpu(LoraCase(m, k, n, r, DType::kF16), 1e-2);
  }
}

}  // namespace
}  // namespace kiln::search
