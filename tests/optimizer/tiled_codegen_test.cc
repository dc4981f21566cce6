// The code generator for graph-defined blocks (BlockKind::kTiled), on
// hand-made uGraphs of the kind the search finds: RMSNorm fused into the
// following linear layer, a gated MLP, and LoRA in one kernel. TiledCodegen
// compiles them with NVRTC (no GPU needed); GpuTiledCodegen runs them on a
// GPU against a plain CPU loop.
#include <cmath>
#include <map>
#include <random>

#include "jit/cuda_context.h"
#include "jit/cuda_status.h"
#include "absl/strings/match.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/convert.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ugraph::KernelGraph;
using ugraph::TensorRole;
using ugraph::TileOp;

// Tile sizes of a case: grid axis 0 walks N in tiles of `n`, grid axis 1
// walks M in tiles of `m`, the loop walks K in steps of `k`, shared by
// `split` blocks along grid axis 2.
struct Tiles {
  int64_t m = 16, k = 64, n = 64, split = 1;
};

// Builds a graph of one kTiled kernel.
class TiledGraph {
 public:
  TiledGraph(Dim m, Dim k, Dim n, Tiles tiles = {}) {
    ugraph::BlockGraph& b = graph_.kernels.emplace_back().block;
    b.kind = ugraph::BlockKind::kTiled;
    b.threads = 256;
    b.grid[0] = {Shape{n}, tiles.n};
    b.grid[1] = {Shape{m}, tiles.m};
    b.forloop = {Shape{k}, tiles.k};
    b.loop_split = tiles.split;
  }

  int Tensor(DType dtype, Shape shape, TensorRole role) {
    const int id = static_cast<int>(graph_.tensors.size());
    graph_.tensors.push_back({.id = id, .dtype = dtype, .shape = std::move(shape), .role = role});
    (role == TensorRole::kInput ? kernel().inputs : kernel().outputs).push_back(id);
    return id;
  }
  // A tile op reading tensor `id`, transposed if `transpose` (a rank-2
  // tensor stored [cols, rows]).
  int Read(int id, std::array<int, 3> imap, int fmap, bool transpose = false) {
    ugraph::InputIterator it;
    it.view.tensor = id;
    it.view.source_shape = it.view.shape = graph_.tensors[id].shape;
    if (transpose) {
      const Shape& s = it.view.source_shape;
      it.view.shape = {s[1], s[0]};
      it.view.steps.push_back({.kind = ugraph::ViewStep::Kind::kPermute, .perm = {1, 0}, .shape = it.view.shape});
    }
    it.imap = imap;
    it.fmap = fmap;
    block().inputs.push_back(it);
    return Op({.kind = TileOp::Kind::kInput, .input = static_cast<int>(block().inputs.size()) - 1});
  }
  int Matmul(int a, int b, DType dtype) {
    return Op({.kind = TileOp::Kind::kMatmul, .args = {a, b}, .dtype = dtype});
  }
  int Accumulate(int a) { return Op({.kind = TileOp::Kind::kAccumulate, .args = {a}}); }
  int Unary(OpKind op, int a) { return Op({.kind = TileOp::Kind::kUnary, .op = op, .args = {a}}); }
  int Binary(OpKind op, int a, int b) {
    return Op({.kind = TileOp::Kind::kBinary, .op = op, .args = {a, b}});
  }
  int Constant(double value) { return Op({.kind = TileOp::Kind::kConstant, .value = value}); }
  int ReduceSum(int a, int axis) { return Op({.kind = TileOp::Kind::kReduceSum, .args = {a}, .axis = axis}); }
  // Output tensor `id` <- tile `value`; by default [M, N].
  void Save(int id, int value, std::array<int, 3> omap = {1, 0, -1}) {
    block().outputs.push_back({.tensor = id, .value = value, .omap = omap});
  }

  const KernelGraph& graph() const { return graph_; }

 private:
  int Op(TileOp op) {
    block().tile_ops.push_back(std::move(op));
    return static_cast<int>(block().tile_ops.size()) - 1;
  }
  ugraph::Kernel& kernel() { return graph_.kernels[0]; }
  ugraph::BlockGraph& block() { return kernel().block; }

  KernelGraph graph_;
};

// out = (X @ W) * rsqrt(mean(X^2) + 1e-6): the division moved after the matmul.
// Tensors: t0 X [M, K], t1 W [K, N] (or [N, K], transposed), t2 out [M, N].
// With `shift`, the mean is of (X + shift)^2 (a sum whose terms past K's
// end would not be 0). `mean` says where the 1/K of the mean goes: on the
// accumulated total, on each step's sum before it is accumulated, or on
// each square (the last two are how the search writes it).
enum class Mean { kOnTotal, kOnStepSum, kOnSquares };
KernelGraph RmsNormLinear(DType dtype, Dim m, int64_t k, Dim n, Tiles tiles = {}, bool transposed = false,
                          double shift = 0, Mean mean = Mean::kOnTotal) {
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

// out = silu(X @ W1) * (X @ W2). Tensors: t0 X, t1 W1, t2 W2, t3 out.
KernelGraph GatedMlp(DType dtype, Dim m, Dim k, Dim n, Tiles tiles = {}) {
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

// out = X @ W + (X @ A) @ B, A [K, r] read whole along r, B [r, N] read
// whole along r after the loop. Tensors: t0 X, t1 W, t2 A, t3 B, t4 out.
KernelGraph Lora(DType dtype, Dim m, int64_t k, Dim n, int64_t r, Tiles tiles = {}) {
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

// Whether the tile analysis still refuses symbolic dims that the grid or the
// loop walks (it checks "read whole" before applying imap and fmap); the
// symbolic tests skip until it accepts them.
bool SymbolicDimsRefused(const absl::Status& status) {
  return absl::StrContains(status.message(), "has symbolic size");
}

// The validated graph's kernel source.
absl::StatusOr<codegen::KernelSource> Generate(const KernelGraph& graph) {
  if (absl::Status s = ugraph::Validate(graph); !s.ok()) return s;
  return codegen::GenerateKernel(graph, 0);
}

void ExpectCompiles(const KernelGraph& graph) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status() << "\n" << ugraph::ToText(graph);
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

TEST(TiledCodegen, RmsNormLinearCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(RmsNormLinear(dtype, 17, 4097, 127));
  }
}

TEST(TiledCodegen, OddTilesAndTransposedWeightsCompile) {
  ExpectCompiles(RmsNormLinear(DType::kF16, 17, 4097, 127, {.m = 5, .k = 30, .n = 24}));
  ExpectCompiles(RmsNormLinear(DType::kBF16, 3, 127, 127, {}, /*transposed=*/true));
}

TEST(TiledCodegen, GatedMlpCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(GatedMlp(dtype, 3, 127, 127));
  }
}

TEST(TiledCodegen, LoraCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(Lora(dtype, 1, 4097, 127, 16));
  }
}

TEST(TiledCodegen, SplitLoopsCompile) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(RmsNormLinear(dtype, 17, 4097, 127, {.split = 4}));
    ExpectCompiles(GatedMlp(dtype, 3, 127, 127, {.k = 32, .split = 3}));
    ExpectCompiles(Lora(dtype, 1, 4097, 127, 16, {.split = 8}));
  }
}

// The op after the loop that only the output reads (RMSNorm's rows times
// their rsqrt) is computed in the store's pass: no tile and no pass of its
// own.
TEST(TiledCodegen, TheLastElementwiseOpIsComputedAsItIsStored) {
  for (const int64_t split : {1, 4}) {
    absl::StatusOr<codegen::KernelSource> source =
        Generate(RmsNormLinear(DType::kF16, 3, 4096, 4096, {.m = 2, .k = 64, .n = 64, .split = split}));
    ASSERT_TRUE(source.ok()) << source.status();
    const std::string& code = source->source;
    const size_t store = code.find("computed as it is stored");
    ASSERT_NE(store, std::string::npos) << code;
    // "// t2 <- x12 = binary mul x3 x11, computed ...": x12 has no tile.
    const size_t name = code.rfind("<- x", store) + 3, end = code.find(' ', name);
    const std::string op = code.substr(name, end - name);
    EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const " + op + " ="))) << op;
    EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr(op + "[l] ="))) << op;
    EXPECT_THAT(code.substr(store), ::testing::ContainsRegex("store_f16\\(p\\.t\\[2\\], [^;]*op_mul\\("));
  }
}

TEST(TiledCodegen, ASplitLoopHandsItsAccumulatorsToTheLastBlock) {
  const KernelGraph graph = RmsNormLinear(DType::kF16, 1, 4096, 4096, {.m = 2, .k = 64, .n = 64, .split = 4});
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status();
  // Two accumulators (X @ W: 2 x 64, sum of squares: 2 x 1 rounded to
  // 4 floats) per block, 4 blocks per grid point.
  EXPECT_EQ(source->workspace_bytes_per_point, 4 * 4 * (2 * 64 + 4));
  // One acquire-release count a block, no fences.
  EXPECT_THAT(source->source, ::testing::HasSubstr("split_arrive(counters + point) == 3u"));
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("__threadfence")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("blockIdx.z * share"));
  EXPECT_EQ(ugraph::SplitGridAxis(graph.kernels[0].block), 2);
}

// The last block sums the partials four elements a thread, which is not
// the mapping of the linear loops after it: a barrier comes between (here
// nothing else would force one: the output stores the sum as it is).
TEST(TiledCodegen, ASplitSumIsBehindABarrierBeforeItIsStored) {
  TiledGraph g(4, 4096, 1, {.m = 4, .k = 64, .n = 1, .split = 4});
  const int x = g.Tensor(DType::kF16, {4, 4096}, TensorRole::kInput);
  const int out = g.Tensor(DType::kF32, {4, 1}, TensorRole::kOutput);
  const int total = g.Accumulate(g.ReduceSum(g.Read(x, {-1, 0, -1}, 1), 1));
  g.Save(out, total, {-1, 0, -1});
  absl::StatusOr<codegen::KernelSource> source = Generate(g.graph());
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  const size_t wide = code.find("[l + 3] = sum.w;");
  ASSERT_NE(wide, std::string::npos) << code;
  EXPECT_LT(code.find("__syncthreads();", wide), code.find("store_f32", wide)) << code;
  ExpectCompiles(g.graph());
}

TEST(TiledCodegen, BadLoopSplitsAreInvalid) {
  KernelGraph graph = GatedMlp(DType::kF16, 4, 128, 64, {.split = 0});
  EXPECT_THAT(ugraph::Validate(graph).message(), ::testing::HasSubstr("loop_split=0"));
  graph.kernels[0].block.loop_split = ugraph::kMaxLoopSplit + 1;
  EXPECT_FALSE(ugraph::Validate(graph).ok());
  // No grid axis left for the split.
  graph.kernels[0].block.loop_split = 2;
  graph.kernels[0].block.grid[2] = {Shape{1}, 1};
  EXPECT_THAT(ugraph::Validate(graph).message(), ::testing::HasSubstr("no extent"));
}

TEST(TiledCodegen, SymbolicSizesBecomeKernelArguments) {
  const Symbol tokens("tokens", 64), k("k", 8192);
  const KernelGraph graph = GatedMlp(DType::kF16, tokens, k, 256);
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  if (SymbolicDimsRefused(source.status())) GTEST_SKIP() << source.status();
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectCompiles(graph);
  EXPECT_EQ(source->symbols.size(), 2u);
}

TEST(TiledCodegen, RmsNormLinearStreamsWeightsAndSumsProductsInPlace) {
  absl::StatusOr<codegen::KernelSource> source = Generate(RmsNormLinear(DType::kF16, 1, 4096, 4096));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  // X and the weight tile arrive by 16-byte asynchronous copies into a
  // swizzled ring (read by ldmatrix), 3 steps ahead; steps past the
  // block's last copy nothing.
  EXPECT_THAT(code, ::testing::HasSubstr("copy_async16(&ring1[issue_stage * 512 + ((l) ^ ((l) / 8 & 7))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("copy_async16(&ring0[issue_stage * 128 + ((l) ^ ((l) / 8 & 7))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("if (knr > 0)"));
  // The product runs on tensor cores, both operands straight from the ring
  // (X has no f32 tile), and goes into its accumulator after the loop.
  EXPECT_THAT(code, ::testing::HasSubstr("summed into x3 after the loop: on tensor cores"));
  EXPECT_THAT(code, ::testing::HasSubstr("load_a_fragment_x4(fa, &ring0[stage * 128 + "));
  EXPECT_THAT(code, ::testing::HasSubstr("load_b_fragment_trans(fb, &ring1[stage * 512 + ((k * 8 + v) ^"));
  EXPECT_THAT(code, ::testing::HasSubstr("mma_f16(d2[j], fa, fb);"));
  EXPECT_THAT(code, ::testing::HasSubstr("read from the ring by its users (no tile)"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x0 =")));
  // The sum of squares is kept per thread in registers over its own ring
  // vectors, then added into its accumulator after the loop.
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x4, added to x7 after the loop: this thread's ring vectors"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs6[it] += op_mul(e, e)"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x4 =")));
  // One loop over K, one barrier a step: after the wait, before the copies
  // that reuse the stage the last step read.
  EXPECT_EQ(code.find("for (i64 step"), code.rfind("for (i64 step"));
  const size_t loop = code.find("for (i64 step"), after = code.find("copy_async_wait<0>()");
  ASSERT_NE(after, std::string::npos);
  const std::string body = code.substr(loop, after - loop);
  EXPECT_THAT(body, ::testing::HasSubstr("copy_async_wait<2>();\n        __syncthreads();"));
  EXPECT_EQ(body.find("__syncthreads()"), body.rfind("__syncthreads()"));
  EXPECT_EQ(source->threads, 256);
  // 4 stages of 10 KiB leave room for 4 blocks an SM. The steps in flight
  // count toward the cost model's bytes in flight.
  EXPECT_THAT(code, ::testing::HasSubstr("4 stages of 512 vectors"));
  EXPECT_EQ(source->min_blocks, 4);
  EXPECT_EQ(source->inflight_bytes, 3 * (128 + 512) * 16);
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kTensorCores);
}

TEST(TiledCodegen, AShiftedSumOfSquaresStaysInRegistersAndSkipsTheTail) {
  absl::StatusOr<codegen::KernelSource> source =
      Generate(RmsNormLinear(DType::kF16, 2, 4097, 6144, {.m = 2, .k = 256, .n = 32}, false, 1.0));
  ASSERT_TRUE(source.ok()) << source.status();
  // The register form of the product reads X's column from its ring; the
  // chain (x + 1)^2 is evaluated only for in-range k.
  EXPECT_THAT(source->source, ::testing::HasSubstr("(from its ring), in registers"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("if (c + j < kn) rs"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("op_mul(op_add(e, 0x1p+0f), op_add(e, 0x1p+0f))"));
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kRegisters);
  // 4 stages of 17 KiB and 3 blocks an SM: the flush's scratch holds a
  // warp's sums (its lanes add theirs by shuffles), not every thread's.
  EXPECT_THAT(source->source, ::testing::HasSubstr("4 stages of 1024 vectors"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("__shfl_xor_sync(0xffffffffu, d2[m][j], 4)"));
  EXPECT_EQ(source->min_blocks, 3);
}

TEST(TiledCodegen, ASumScaledBeforeItsAccumulatorStaysInRegisters) {
  // acc += (1/K) * sum(x^2) per step, as the search writes the mean: the
  // sum still runs in registers, the scale applied where it is added, and
  // neither the scaled sum nor X gets a tile.
  absl::StatusOr<codegen::KernelSource> source = Generate(
      RmsNormLinear(DType::kF16, 16, 4096, 6144, {.m = 16, .k = 128, .n = 64}, false, 0, Mean::kOnStepSum));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x4, added to x8 after the loop: this thread's ring"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs6[it] += op_mul(e, e);"));
  EXPECT_THAT(code, ::testing::HasSubstr("x8[l] += 0x1p-12f * sum;"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x7 =")));  // the scaled sum
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x0 =")));
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kTensorCores);
}

TEST(TiledCodegen, ConstantFactorsOfARegisterSumLeaveTheLoop) {
  // sum(c * x^2) runs as c * sum(x^2): the factor is applied once, where
  // the sum is added, not to every element in the loop.
  absl::StatusOr<codegen::KernelSource> source = Generate(
      RmsNormLinear(DType::kF16, 2, 4096, 6144, {.m = 2, .k = 256, .n = 32}, false, 0, Mean::kOnSquares));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x6, added to x8 after the loop: this thread's ring"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs7[it] += op_mul(e, e);"));
  EXPECT_THAT(code, ::testing::HasSubstr("x8[l] += 0x1p-12f * sum;"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("0x1p-12f, op_mul(e, e)")));
}

TEST(TiledCodegen, F32ProductsStayOffTensorCores) {
  absl::StatusOr<codegen::KernelSource> source = Generate(RmsNormLinear(DType::kF32, 2, 4096, 6144, {.m = 2}));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("mma_")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("in registers"));  // the register form of a direct matmul
}

TEST(TiledCodegen, LoopTilesTooLargeForTheRingArePrefetchedThroughRegisters) {
  // 256 x 128 f16 weight tiles: 64 KiB a step, no room for two stages in
  // the usual ring, nor for three in the large one.
  absl::StatusOr<codegen::KernelSource> source =
      Generate(RmsNormLinear(DType::kF16, 2, 4096, 6144, {.m = 2, .k = 256, .n = 128}));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("copy_async")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("load16_bits"));
}

TEST(TiledCodegen, IntegerInputsAreUnimplemented) {
  KernelGraph graph = GatedMlp(DType::kF32, 4, 64, 64);
  graph.tensors[1].dtype = DType::kI32;
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("t1 is i32"));
}

TEST(TiledCodegen, ALoopTileReadingAnAccumulatorIsRefused) {
  TiledGraph g(4, 128, 64);
  const int x = g.Tensor(DType::kF32, {4, 128}, TensorRole::kInput);
  const int out = g.Tensor(DType::kF32, {4, 1}, TensorRole::kOutput);
  const int x0 = g.Read(x, {-1, 0, -1}, 1);
  const int total = g.Accumulate(g.ReduceSum(x0, 1));
  g.Binary(OpKind::kSub, x0, total);  // would read the running sum at every step
  g.Save(out, total, {-1, 0, -1});
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(g.graph(), 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("x3"));
}

TEST(TiledCodegen, TilesThatDoNotFitAreInvalid) {
  KernelGraph graph = GatedMlp(DType::kF32, 4, 128, 64);
  // The loop now walks N in the second weight: the matmul's k axes differ.
  graph.kernels[0].block.inputs[2].fmap = 1;
  graph.kernels[0].block.inputs[2].imap = {-1, -1, -1};
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------------------------------ on a GPU

// Values rounded to `dtype`, uniform in [-scale, scale).
std::vector<float> RandomValues(DType dtype, int64_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(count);
  for (float& x : v) x = testing::RoundTo(dtype, dist(rng));
  return v;
}

// Row-major [rows, inner] x [inner, cols] in double, operands rounded to
// `dtype` (as the kernel's matmul does).
std::vector<double> MatmulRef(DType dtype, const std::vector<float>& a, const std::vector<float>& b,
                              int64_t rows, int64_t inner, int64_t cols) {
  std::vector<double> out(rows * cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t x = 0; x < inner; ++x) {
      const double av = testing::RoundTo(dtype, a[i * inner + x]);
      for (int64_t j = 0; j < cols; ++j) out[i * cols + j] += av * testing::RoundTo(dtype, b[x * cols + j]);
    }
  }
  return out;
}

std::vector<float> Stored(DType dtype, const std::vector<double>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = testing::RoundTo(dtype, static_cast<float>(v[i]));
  return out;
}

class GpuTiledCodegen : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<jit::CudaContext>> context = jit::CudaContext::Create(0);
    if (!context.ok()) GTEST_SKIP() << "no CUDA device: " << context.status();
    context_ = *std::move(context);
    absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
    if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
    nvrtc_ = *nvrtc;
  }

  // A compiled kernel, its buffers and its launch, ready to go.
  struct Prepared {
    std::unique_ptr<jit::CudaModule> module;
    jit::CudaFunction* function = nullptr;
    std::vector<std::shared_ptr<Storage>> buffers;
    std::vector<int64_t> counts;
    std::vector<uint64_t> params;  // { char* t[]; long long s[]; int* err; char* ws; unsigned* counters; }
    std::shared_ptr<Storage> workspace, counters;
    jit::LaunchConfig config;
  };

  // Compiles the graph's kernel and uploads `inputs` (f32 values by tensor
  // id, converted to each tensor's dtype). Outputs start as 0xff bytes
  // (NaN), so an element the kernel skips shows.
  absl::StatusOr<Prepared> Prepare(const KernelGraph& graph, const std::map<int, std::vector<float>>& inputs,
                                   const Bindings& bindings) {
    if (absl::Status s = ugraph::Validate(graph); !s.ok()) return s;
    KILN_JIT_ASSIGN_OR_RETURN(codegen::KernelSource source, codegen::GenerateKernel(graph, 0));
    jit::CompileOptions options;
    options.arch = context_->info().arch();
    KILN_JIT_ASSIGN_OR_RETURN(std::string cubin,
                              jit::CompileToCubin(*nvrtc_, codegen::AssembleSource(source.source), options));
    Prepared p;
    KILN_JIT_ASSIGN_OR_RETURN(p.module, context_->LoadModule(cubin));
    KILN_JIT_ASSIGN_OR_RETURN(p.function, p.module->GetFunction(codegen::kKernelName));
    p.buffers.resize(graph.tensors.size());
    p.counts.resize(graph.tensors.size());
    for (const ugraph::DTensor& t : graph.tensors) {
      KILN_JIT_ASSIGN_OR_RETURN(Extents sizes, t.shape.Evaluate(bindings));
      p.counts[t.id] = NumElements(sizes);
      const size_t bytes = std::max<size_t>(1, p.counts[t.id] * DTypeSize(t.dtype));
      KILN_JIT_ASSIGN_OR_RETURN(p.buffers[t.id], context_->Allocate(bytes));
      const jit::CUdeviceptr ptr = jit::DevicePointer(*p.buffers[t.id]);
      if (t.role != TensorRole::kInput) {
        KILN_JIT_RETURN_IF_ERROR(context_->Memset(ptr, 0xff, bytes));
        continue;
      }
      const std::vector<float>& values = inputs.at(t.id);
      if (static_cast<int64_t>(values.size()) != p.counts[t.id]) {
        return absl::InvalidArgumentError(absl::StrCat("input t", t.id, " has the wrong size"));
      }
      std::vector<char> stored(bytes);
      ConvertElements(DType::kF32, values.data(), t.dtype, stored.data(), p.counts[t.id]);
      KILN_JIT_RETURN_IF_ERROR(context_->CopyHostToDevice(ptr, stored.data(), bytes));
    }
    for (int t : source.slots) p.params.push_back(jit::DevicePointer(*p.buffers[t]));
    for (const SymbolInfo* symbol : source.symbols) {
      p.params.push_back(static_cast<uint64_t>(bindings.Find(symbol).value_or(0)));
    }
    if (source.symbols.empty()) p.params.push_back(0);
    p.params.push_back(0);  // no error word: these kernels report nothing
    p.config.block.x = static_cast<unsigned>(source.threads);
    p.config.dynamic_shared_bytes = static_cast<unsigned>(source.dynamic_shared_bytes);
    const ugraph::BlockGraph& block = graph.kernels[0].block;
    unsigned* grid[3] = {&p.config.grid.x, &p.config.grid.y, &p.config.grid.z};
    int64_t points = 1;
    for (int g = 0; g < 3; ++g) {
      const ugraph::LaunchDim& d = block.grid[g];
      KILN_JIT_ASSIGN_OR_RETURN(Extents extent, d.extent.Evaluate(bindings));
      *grid[g] = static_cast<unsigned>((NumElements(extent) + d.tile - 1) / d.tile);
      points *= *grid[g];
    }
    // A split loop: its blocks along the split axis, counters (zero) and
    // partial sums in the workspace.
    uint64_t workspace = 0, counters = 0;
    if (const int split = ugraph::SplitGridAxis(block); split >= 0) {
      *grid[split] = static_cast<unsigned>(block.loop_split);
      KILN_JIT_ASSIGN_OR_RETURN(p.workspace, context_->Allocate(points * source.workspace_bytes_per_point));
      KILN_JIT_ASSIGN_OR_RETURN(p.counters, context_->Allocate(points * 4));
      workspace = jit::DevicePointer(*p.workspace);
      counters = jit::DevicePointer(*p.counters);
      // Partial sums that look like counts must not matter.
      KILN_JIT_RETURN_IF_ERROR(context_->Memset(workspace, 0x01, points * source.workspace_bytes_per_point));
      KILN_JIT_RETURN_IF_ERROR(context_->Memset(counters, 0, points * 4));
    }
    p.params.push_back(workspace);
    p.params.push_back(counters);
    return p;
  }

  absl::Status Launch(Prepared& p) {
    void* args[] = {p.params.data()};
    return context_->Launch(*p.function, p.config, args);
  }

  // Runs the kernel twice, the output poisoned again in between (a split
  // loop must leave its counters ready for the next launch), and returns
  // tensor `output` as f32.
  absl::StatusOr<std::vector<float>> Run(const KernelGraph& graph,
                                         const std::map<int, std::vector<float>>& inputs, int output,
                                         const Bindings& bindings = {}) {
    KILN_JIT_ASSIGN_OR_RETURN(Prepared p, Prepare(graph, inputs, bindings));
    KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_RETURN_IF_ERROR(context_->Memset(jit::DevicePointer(*p.buffers[output]), 0xff,
                                              std::max<size_t>(1, p.counts[output] *
                                                                      DTypeSize(graph.tensors[output].dtype))));
    KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_RETURN_IF_ERROR(context_->Synchronize());
    const DType dtype = graph.tensors[output].dtype;
    std::vector<char> stored(p.counts[output] * DTypeSize(dtype));
    KILN_JIT_RETURN_IF_ERROR(
        context_->CopyDeviceToHost(stored.data(), jit::DevicePointer(*p.buffers[output]), stored.size()));
    std::vector<float> out(p.counts[output]);
    ConvertElements(dtype, stored.data(), DType::kF32, out.data(), p.counts[output]);
    return out;
  }

  // Mean microseconds per launch over `runs` launches after a warm-up.
  absl::StatusOr<double> Time(Prepared& p, int runs) {
    for (int i = 0; i < 3; ++i) KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_ASSIGN_OR_RETURN(jit::CudaEvent start, context_->CreateEvent());
    KILN_JIT_ASSIGN_OR_RETURN(jit::CudaEvent end, context_->CreateEvent());
    KILN_JIT_RETURN_IF_ERROR(start.Record());
    for (int i = 0; i < runs; ++i) KILN_JIT_RETURN_IF_ERROR(Launch(p));
    KILN_JIT_RETURN_IF_ERROR(end.Record());
    KILN_JIT_RETURN_IF_ERROR(end.Synchronize());
    KILN_JIT_ASSIGN_OR_RETURN(float ms, jit::CudaEvent::ElapsedMilliseconds(start, end));
    return 1e3 * ms / runs;
  }

  // Prints the kernel's time and bandwidth (weights counted `weights` times).
  void ReportBandwidth(const std::string& name, const KernelGraph& graph, int64_t m, int64_t k, int64_t n,
                       int64_t weights);

  std::unique_ptr<jit::CudaContext> context_;
  const jit::NvrtcApi* nvrtc_ = nullptr;
};

// Tolerances for results stored as `dtype`.
double Tolerance(DType dtype) { return dtype == DType::kF32 ? 1e-4 : 1e-2; }

struct Shape3 {
  int64_t m, k, n;
};

constexpr Shape3 kShapes[] = {{1, 127, 127}, {3, 4097, 127}, {17, 4097, 256}, {17, 64, 64}, {16, 128, 4096}};

// Weights [K, N] as stored [N, K].
std::vector<float> Transposed(const std::vector<float>& w, int64_t k, int64_t n) {
  std::vector<float> t(w.size());
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) t[j * k + i] = w[i * n + j];
  }
  return t;
}

TEST_F(GpuTiledCodegen, RmsNormLinearMatchesACpuLoop) {
  struct Variant {
    Tiles tiles;
    bool transposed;
    double shift = 0;
    Mean mean = Mean::kOnTotal;
  };
  // Tiles of the search's usual sizes, odd sizes (no 16-byte loads, A rows
  // not 16-byte aligned), and weights stored [N, K].
  // Split loops: 4 blocks per grid point, and 3 blocks of odd loop tiles
  // (some of them with no step at the smallest K). A sum of (x + 1)^2,
  // kept in registers, must skip the zeros past K's end. The 1/K of the
  // mean on each step's sum and on each square, whole and split.
  const Variant variants[] = {{{}, false},
                              {{.m = 5, .k = 30, .n = 24}, false},
                              {{}, true},
                              {{.split = 4}, false},
                              {{.m = 5, .k = 30, .n = 24, .split = 3}, true},
                              {{.split = 3}, false, 1.0},
                              {{}, false, 0, Mean::kOnStepSum},
                              {{.m = 5, .k = 30, .n = 24, .split = 3}, false, 1.0, Mean::kOnStepSum},
                              {{.split = 3}, false, 0, Mean::kOnSquares}};
  for (DType dtype : {DType::kF16, DType::kF32, DType::kBF16}) {
    for (const Shape3& s : kShapes) {
      for (const Variant& v : variants) {
        SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " M=", s.m, " K=", s.k, " N=", s.n, " tiles ", v.tiles.m, "x",
                                  v.tiles.k, "x", v.tiles.n, " split ", v.tiles.split,
                                  v.transposed ? " transposed" : "", " mean ", static_cast<int>(v.mean)));
        const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 1);
        const std::vector<float> w = RandomValues(dtype, s.k * s.n, 1.0f / std::sqrt(float(s.k)), 2);
        absl::StatusOr<std::vector<float>> out =
            Run(RmsNormLinear(dtype, s.m, s.k, s.n, v.tiles, v.transposed, v.shift, v.mean),
                {{0, x}, {1, v.transposed ? Transposed(w, s.k, s.n) : w}}, 2);
        ASSERT_TRUE(out.ok()) << out.status();
        std::vector<double> expected = MatmulRef(dtype, x, w, s.m, s.k, s.n);
        for (int64_t i = 0; i < s.m; ++i) {
          double squares = 0;
          for (int64_t j = 0; j < s.k; ++j) {
            const double term = double(x[i * s.k + j]) + v.shift;
            squares += term * term;
          }
          const double scale = 1.0 / std::sqrt(squares / double(s.k) + 1e-6);
          for (int64_t j = 0; j < s.n; ++j) expected[i * s.n + j] *= scale;
        }
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
}

TEST_F(GpuTiledCodegen, GatedMlpMatchesACpuLoop) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    for (const Shape3& s : kShapes) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " M=", s.m, " K=", s.k, " N=", s.n));
      const float scale = 1.0f / std::sqrt(float(s.k));
      const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 3);
      const std::vector<float> w1 = RandomValues(dtype, s.k * s.n, 2 * scale, 4);
      const std::vector<float> w2 = RandomValues(dtype, s.k * s.n, scale, 5);
      const std::vector<double> gate = MatmulRef(dtype, x, w1, s.m, s.k, s.n);
      std::vector<double> expected = MatmulRef(dtype, x, w2, s.m, s.k, s.n);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
      for (int64_t split : {1, 5}) {
        SCOPED_TRACE(absl::StrCat("split ", split));
        absl::StatusOr<std::vector<float>> out =
            Run(GatedMlp(dtype, s.m, s.k, s.n, {.k = 32, .split = split}), {{0, x}, {1, w1}, {2, w2}}, 3);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
}

TEST_F(GpuTiledCodegen, GatedMlpWithSymbolicSizesMatchesACpuLoop) {
  const Symbol tokens("tokens", 64), k("k", 8192);
  const KernelGraph graph = GatedMlp(DType::kF16, tokens, k, 256);
  for (const Shape3& s : {Shape3{1, 4097, 256}, Shape3{17, 127, 256}, Shape3{5, 0, 256}}) {
    SCOPED_TRACE(absl::StrCat("M=", s.m, " K=", s.k));
    const DType dtype = DType::kF16;
    const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 6);
    const std::vector<float> w1 = RandomValues(dtype, s.k * s.n, 0.05f, 7);
    const std::vector<float> w2 = RandomValues(dtype, s.k * s.n, 0.05f, 8);
    absl::StatusOr<std::vector<float>> out =
        Run(graph, {{0, x}, {1, w1}, {2, w2}}, 3, {{tokens, s.m}, {k, s.k}});
    if (SymbolicDimsRefused(out.status())) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> gate = MatmulRef(dtype, x, w1, s.m, s.k, s.n);
    std::vector<double> expected = MatmulRef(dtype, x, w2, s.m, s.k, s.n);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
    EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), 1e-2, 1e-2));
  }
}

TEST_F(GpuTiledCodegen, LoraMatchesACpuLoop) {
  // Rank 12: X @ A's register sums in vectors of 8 columns, the last one
  // past A's (the flush's rows are the vectors' width, not A's).
  for (const int64_t kRank : {16, 12}) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      for (const Shape3& s : kShapes) {
        SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rank ", kRank, " M=", s.m, " K=", s.k, " N=", s.n));
        const float scale = 1.0f / std::sqrt(float(s.k));
        const std::vector<float> x = RandomValues(dtype, s.m * s.k, 1.0f, 9);
        const std::vector<float> w = RandomValues(dtype, s.k * s.n, scale, 10);
        const std::vector<float> a = RandomValues(dtype, s.k * kRank, scale, 11);
        const std::vector<float> b = RandomValues(dtype, kRank * s.n, 0.25f, 12);
        absl::StatusOr<std::vector<float>> out =
            Run(Lora(dtype, s.m, s.k, s.n, kRank), {{0, x}, {1, w}, {2, a}, {3, b}}, 4);
        ASSERT_TRUE(out.ok()) << out.status();
        absl::StatusOr<std::vector<float>> split =
            Run(Lora(dtype, s.m, s.k, s.n, kRank, {.split = 2}), {{0, x}, {1, w}, {2, a}, {3, b}}, 4);
        ASSERT_TRUE(split.ok()) << split.status();
        // X @ A is an f32 sum the second matmul rounds to its dtype.
        const std::vector<double> xa = MatmulRef(DType::kF32, x, a, s.m, s.k, kRank);
        std::vector<float> xa_rounded(xa.size());
        for (size_t i = 0; i < xa.size(); ++i) xa_rounded[i] = static_cast<float>(xa[i]);
        const std::vector<double> xab = MatmulRef(dtype, xa_rounded, b, s.m, kRank, s.n);
        std::vector<double> expected = MatmulRef(dtype, x, w, s.m, s.k, s.n);
        for (size_t i = 0; i < expected.size(); ++i) expected[i] += xab[i];
        EXPECT_TRUE(testing::AllClose(*out, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
        EXPECT_TRUE(testing::AllClose(*split, Stored(dtype, expected), Tolerance(dtype), Tolerance(dtype)));
      }
    }
  }
}

// Not a pass/fail test: how close decode-shaped kernels come to memory
// bandwidth (the weights dominate the bytes).
TEST_F(GpuTiledCodegen, ReportsBandwidthAtDecodeShapes) {
  struct Case {
    const char* name;
    KernelGraph graph;
    int64_t m, k, n, weights;
  };
  const Case cases[] = {
      {"rmsnorm+linear", RmsNormLinear(DType::kF16, 1, 2048, 2048), 1, 2048, 2048, 1},
      {"rmsnorm+linear", RmsNormLinear(DType::kF16, 16, 2048, 2048), 16, 2048, 2048, 1},
      {"gated mlp", GatedMlp(DType::kF16, 1, 2048, 8192), 1, 2048, 8192, 2},
      {"gated mlp", GatedMlp(DType::kF16, 16, 2048, 8192), 16, 2048, 8192, 2},
      {"lora", Lora(DType::kF16, 1, 4096, 4096, 16), 1, 4096, 4096, 1},
  };
  for (const Case& c : cases) ReportBandwidth(c.name, c.graph, c.m, c.k, c.n, c.weights);
}

// Not a pass/fail test either: tile and split choices at the shapes of
// ../shared/bench/peers.py (the cost model's evidence).
TEST_F(GpuTiledCodegen, ReportsSplitLoopsAtPeerShapes) {
  for (int64_t n : {64, 128}) {
    for (int64_t k : {64, 128, 256}) {
      for (int64_t split : {1, 4, 8, 16}) {
        const std::string name = absl::StrCat("tiles n", n, " k", k, " split ", split, ": ");
        for (int64_t m : {2, 16}) {
          ReportBandwidth(absl::StrCat(name, "rmsnorm_linear_bs", m / 2),
                          RmsNormLinear(DType::kF16, m, 4096, 6144, {.m = m, .k = k, .n = n, .split = split}), m,
                          4096, 6144, 1);
        }
        for (int64_t m : {4, 8}) {
          ReportBandwidth(absl::StrCat(name, "m", m, " gated_mlp_bs8"),
                          GatedMlp(DType::kF16, 8, 4096, 4096, {.m = m, .k = k, .n = n, .split = split}), 8, 4096,
                          4096, 2);
        }
      }
    }
  }
}

void GpuTiledCodegen::ReportBandwidth(const std::string& name, const KernelGraph& graph, int64_t m, int64_t k,
                                      int64_t n, int64_t weights) {
  std::map<int, std::vector<float>> inputs;
  for (int t : graph.kernels[0].inputs) {
    int64_t count = 1;
    for (const Dim& d : graph.tensors[t].shape) count *= d.value();
    inputs[t] = RandomValues(DType::kF16, count, 0.05f, static_cast<uint32_t>(t));
  }
  absl::StatusOr<Prepared> p = Prepare(graph, inputs, {});
  if (!p.ok()) {
    std::cout << name << ": " << p.status() << "\n";  // tiles too large for shared memory, say
    return;
  }
  absl::StatusOr<double> us = Time(*p, 50);
  ASSERT_TRUE(us.ok()) << us.status();
  const double bytes = 2.0 * (weights * k * n + m * k + m * n);
  std::cout << name << " M=" << m << " K=" << k << " N=" << n << ": " << *us << " us, " << bytes / (*us * 1e3)
            << " GB/s\n";
}

}  // namespace
}  // namespace kiln
