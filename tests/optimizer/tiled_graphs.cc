#include "tests/optimizer/tiled_graphs.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/ugraph_validate.h"

namespace kiln::testing {

KernelGraph RmsNormLinear(DType dtype, Dim m, int64_t k, Dim n, Tiles tiles, bool transposed,
                          double shift, Mean mean) {
  TiledGraph g(m, k, n, tiles);
  const int x = g.Tensor(dtype, {m, k}, TensorRole::kInput);
  const int w = g.Tensor(dtype, transposed ? Shape{n, k} : Shape{k, n}, TensorRole::kInput);
  const int out = g.Tensor(dtype, {m, n}, TensorRole::kOutput);
  const int x0 = g.Read(x, {-1, 0, -1}, 1);
  const int x1 = g.Read(w, {1, -1, -1}, 0, transposed);
  const int x3 = g.Accumulate(g.Matmul(x0, x1, dtype));
  const int term = shift == 0 ? x0 : g.Binary(OpKind::kAdd, x0, g.Constant(shift));
  const int square = g.Binary(OpKind::kMul, term, term);
  const int inverse_k = g.Constant(1.0 / static_cast<double>(k));
  int x8 = -1;
  switch (mean) {
    case Mean::kOnTotal: x8 = g.Binary(OpKind::kMul, g.Accumulate(g.ReduceSum(square, 1)), inverse_k); break;
    case Mean::kOnStepSum: x8 = g.Accumulate(g.Binary(OpKind::kMul, inverse_k, g.ReduceSum(square, 1))); break;
    case Mean::kOnSquares: x8 = g.Accumulate(g.ReduceSum(g.Binary(OpKind::kMul, inverse_k, square), 1)); break;
  }
  const int x11 = g.Unary(OpKind::kRsqrt, g.Binary(OpKind::kAdd, x8, g.Constant(1e-6)));
  g.Save(out, g.Binary(OpKind::kMul, x3, x11));
  return g.graph();
}

KernelGraph GatedMlp(DType dtype, Dim m, Dim k, Dim n, Tiles tiles) {
  TiledGraph g(m, k, n, tiles);
  const int x = g.Tensor(dtype, {m, k}, TensorRole::kInput);
  const int w1 = g.Tensor(dtype, {k, n}, TensorRole::kInput);
  const int w2 = g.Tensor(dtype, {k, n}, TensorRole::kInput);
  const int out = g.Tensor(dtype, {m, n}, TensorRole::kOutput);
  const int x0 = g.Read(x, {-1, 0, -1}, 1);
  const int gate = g.Accumulate(g.Matmul(x0, g.Read(w1, {1, -1, -1}, 0), dtype));
  const int up = g.Accumulate(g.Matmul(x0, g.Read(w2, {1, -1, -1}, 0), dtype));
  g.Save(out, g.Binary(OpKind::kMul, g.Unary(OpKind::kSilu, gate), up));
  return g.graph();
}

KernelGraph Lora(DType dtype, Dim m, int64_t k, Dim n, int64_t r, Tiles tiles) {
  TiledGraph g(m, k, n, tiles);
  const int x = g.Tensor(dtype, {m, k}, TensorRole::kInput);
  const int w = g.Tensor(dtype, {k, n}, TensorRole::kInput);
  const int a = g.Tensor(dtype, {k, r}, TensorRole::kInput);
  const int bt = g.Tensor(dtype, {r, n}, TensorRole::kInput);
  const int out = g.Tensor(dtype, {m, n}, TensorRole::kOutput);
  const int x0 = g.Read(x, {-1, 0, -1}, 1);
  const int xw = g.Accumulate(g.Matmul(x0, g.Read(w, {1, -1, -1}, 0), dtype));
  const int xa = g.Accumulate(g.Matmul(x0, g.Read(a, {-1, -1, -1}, 0), dtype));
  const int xab = g.Matmul(xa, g.Read(bt, {1, -1, -1}, -1), dtype);
  g.Save(out, g.Binary(OpKind::kAdd, xw, xab));
  return g.graph();
}

bool SymbolicDimsRefused(const absl::Status& status) {
  return absl::StrContains(status.message(), "has symbolic size");
}

absl::StatusOr<codegen::KernelSource> Generate(const KernelGraph& graph) {
  if (absl::Status s = ugraph::Validate(graph); !s.ok()) return s;
  return codegen::GenerateKernel(graph, 0);
}

void ExpectCompiles(const KernelGraph& graph) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status() << "\n" << ugraph::ToText(graph);
  ExpectWaitsForTheKernelBefore(source->source);
  // A buffer per tile, less those it needs none for, plus scratch for
  // matmuls whose threads split the contraction, plus up to 192 KiB of loop
  // tiles in flight (the ring; more than 96 KiB only where a step's tiles
  // are large), within what a block may have.
  EXPECT_GT(source->dynamic_shared_bytes, 0);
  EXPECT_LE(source->dynamic_shared_bytes, ugraph::SharedMemoryBytes(graph.kernels[0].block) + 8192 + 192 * 1024);
  EXPECT_LE(source->dynamic_shared_bytes, ugraph::DeviceLimits().max_shared_memory_per_block);
  jit::CompileOptions options;
  options.arch = "sm_90";
  absl::StatusOr<std::string> cubin =
      jit::CompileToCubin(**nvrtc, codegen::AssembleSource(source->source), options);
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source->source;
  EXPECT_FALSE(cubin->empty());
}

void ExpectWaitsForTheKernelBefore(const std::string& code) {
  const size_t wait = code.find("wait_for_prior_grid();");
  ASSERT_NE(wait, std::string::npos) << code;
  EXPECT_EQ(code.find("wait_for_prior_grid();", wait + 1), std::string::npos) << code;
  const std::string before = code.substr(0, wait);
  for (const char* access : {"copy_async16(", "load_", "load16", "store_", "p.ws", "p.counters", "atomic"}) {
    EXPECT_EQ(before.find(access), std::string::npos) << access << " before the wait:\n" << before;
  }
  EXPECT_NE(code.find("launch_dependents();", wait), std::string::npos) << code;
}

}  // namespace kiln::testing
