// Hand-made uGraphs of one graph-defined kernel (BlockKind::kTiled) of the
// kind the search finds: RMSNorm fused into the following linear layer, a
// gated MLP, and LoRA in one kernel. The code generator's tests build them
// (tiled_codegen_test.cc compiles them, gpu_tiled_codegen_test.cc runs them).
#ifndef KILN_TESTS_OPTIMIZER_TILED_GRAPHS_H_
#define KILN_TESTS_OPTIMIZER_TILED_GRAPHS_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/ugraph.h"

namespace kiln::testing {

using ugraph::KernelGraph;
using ugraph::TensorRole;
using ugraph::TileOp;

// Tile sizes of a case: grid axis 0 walks N in tiles of `n`, grid axis 1
// walks M in tiles of `m`, the loop walks K in steps of `k`, shared by
// `split` blocks along grid axis 2. `one_point`: one grid point a block
// where the launch covers an axis (BlockGraph::one_point_blocks).
struct Tiles {
  int64_t m = 16, k = 64, n = 64, split = 1;
  bool one_point = false;
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
    b.one_point_blocks = tiles.one_point;
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
                          double shift = 0, Mean mean = Mean::kOnTotal);

// out = silu(X @ W1) * (X @ W2). Tensors: t0 X, t1 W1, t2 W2, t3 out.
KernelGraph GatedMlp(DType dtype, Dim m, Dim k, Dim n, Tiles tiles = {});

// out = X @ W + (X @ A) @ B, A [K, r] read whole along r, B [r, N] read
// whole along r after the loop. Tensors: t0 X, t1 W, t2 A, t3 B, t4 out.
KernelGraph Lora(DType dtype, Dim m, int64_t k, Dim n, int64_t r, Tiles tiles = {});

// Whether the tile analysis still refuses symbolic dims that the grid or the
// loop walks (it checks "read whole" before applying imap and fmap); the
// symbolic tests skip until it accepts them.
bool SymbolicDimsRefused(const absl::Status& status);

// The validated graph's kernel source.
absl::StatusOr<codegen::KernelSource> Generate(const KernelGraph& graph);

// That the graph's kernel generates, waits for the kernel before it
// (ExpectWaitsForTheKernelBefore), takes shared memory within its tiles'
// and a block's bounds, and that NVRTC compiles it for sm_90 (skipped
// without NVRTC).
void ExpectCompiles(const KernelGraph& graph);

// Launched early (jit::LaunchConfig::early), a kernel waits for the kernel
// before it once (wait_for_prior_grid), and touches device memory only
// after that but for L2 prefetches; it lets the kernel after it launch
// early (launch_dependents) after its wait.
void ExpectWaitsForTheKernelBefore(const std::string& code);

}  // namespace kiln::testing

#endif  // KILN_TESTS_OPTIMIZER_TILED_GRAPHS_H_
