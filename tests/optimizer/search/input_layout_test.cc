// A realized input that is not row-major (a weight realized transposed, as
// the Llama model keeps its projections) is searched, timed and cached with
// its own layout: the kernels the search emits read it as it lies.
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/superoptimize.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;

Region RmsNormLinear(const Tensor& x, const Tensor& w) {
  const Tensor y = matmul(x * rsqrt(mean(x * x, -1, /*keepdim=*/true) + 1e-6), w);
  return ValueOrFail(ExtractRegion(y.node().get(), [](const Node*) { return false; }));
}

TEST(InputLayout, ATransposedWeightIsSearchedAsItLies) {
  const Tensor x = random_normal(Shape{2, 256}, 1, 0, 1, DType::kF16, Device::Cpu());
  const Tensor w = random_normal(Shape{512, 256}, 2, 0, 0.02, DType::kF16, Device::Cpu());
  const Tensor w_rows = random_normal(Shape{256, 512}, 3, 0, 0.02, DType::kF16, Device::Cpu());
  KILN_ASSERT_OK(RealizeAll({x, w, w_rows}));
  const Tensor w_t = transpose(w, 0, 1);  // [256, 512], stored [512, 256]
  KILN_ASSERT_OK(w_t.realize());
  ASSERT_TRUE(w_t.node()->is_realized());

  const Region transposed = RmsNormLinear(x, w_t);
  const Region rows = RmsNormLinear(x, w_rows);
  ASSERT_EQ(transposed.input_layouts.size(), 2u);
  EXPECT_TRUE(transposed.input_layouts[0].empty());
  EXPECT_EQ(transposed.input_layouts[1], (std::vector<int>{1, 0}));
  EXPECT_TRUE(rows.input_layouts[1].empty());
  SearchOptions options;
  options.cache_dir = "/nonexistent";
  EXPECT_NE(CachePath(transposed, options), CachePath(rows, options));

  options.cache_dir.clear();
  const SearchResult result = ValueOrFail(Superoptimize(transposed, options));
  ASSERT_TRUE(result.graph.has_value());
  EXPECT_EQ(result.graph->tensors[1].strides, (std::vector<int64_t>{1, 256}));
  EXPECT_TRUE(result.graph->tensors[0].strides.empty());
  // Read as it lies: 16-byte vectors along its stored rows (the tile's
  // second-to-last axis), not element by element.
  const codegen::KernelSource source = ValueOrFail(codegen::GenerateKernel(*result.graph, 0));
  // Its offsets: the loop's coordinate contiguous, the column's 256 apart.
  EXPECT_THAT(source.source, ::testing::ContainsRegex("\\(kr \\+ i[0-9]+\\) \\+ \\(s0 \\+ i[0-9]+\\) \\* 256"));
}

}  // namespace
}  // namespace kiln::search
