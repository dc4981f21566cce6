// The uGraph: kiln's multi-level description of how a region of a trace runs
// on the GPU (after Mirage, arXiv 2405.05751).
//
//   kernel graph   device tensors (DTensor) and the kernels between them;
//   block graph    what one thread block of a kernel does: grid and block
//                  dims, a for-loop, input iterators that map grid axes
//                  (imap) and the loop (fmap) onto tensor dims, tile ops and
//                  accumulators, output savers (omap);
//   thread graph   fused elementwise chains evaluated in registers.
//
// Views (permute, slice, expand, reshape) never move data: a consumer reads a
// DTensor through a View, and the code generator folds the view into index
// arithmetic. Sizes may be symbolic; symbol values are kernel arguments.
#ifndef KILN_OPTIMIZER_UGRAPH_H_
#define KILN_OPTIMIZER_UGRAPH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/dim.h"
#include "tensor/dtype.h"
#include "tensor/op.h"
#include "tensor/shape.h"

namespace kiln::ugraph {

// ---------------------------------------------------------------- kernel level

enum class TensorRole : uint8_t { kInput, kOutput, kIntermediate };

struct DTensor {
  int id = 0;
  // The storage dtype. A 16-bit float intermediate is stored as f32 (values
  // are rounded to 16 bits only where the trace's dtype semantics say so:
  // outputs, casts, matmul operands).
  DType dtype = DType::kF32;
  Shape shape;
  TensorRole role = TensorRole::kIntermediate;
  // Element strides of an input buffer with a fixed layout (a realized leaf);
  // empty means dense row-major over `shape` (every buffer kiln allocates).
  std::vector<int64_t> strides;
  // An output written in place into the buffer of input tensor `aliases`
  // (-1: a buffer of its own).
  int aliases = -1;
};

// One step of a view chain, mapping its input's logical shape to `shape`.
struct ViewStep {
  enum class Kind : uint8_t { kPermute, kSlice, kExpand, kReshape };
  Kind kind = Kind::kPermute;
  std::vector<int> perm;                      // kPermute: out axis i = in axis perm[i]
  std::vector<SliceAttrs::Range> ranges;      // kSlice: per axis start, step
  Shape shape;                                // the step's output shape
};

// A DTensor seen through a chain of views. `tensor` is -1 for a virtual
// source (iota, random) whose coordinates are all that is read; its base
// shape is then `source_shape`.
struct View {
  int tensor = 0;
  Shape source_shape;  // the shape the first step applies to
  std::vector<ViewStep> steps;
  Shape shape;  // the logical shape after the steps
};

// ---------------------------------------------------------------- thread level

// One scalar operation of a fused elementwise chain. Values are computed in
// f32 for floating dtypes and int64 for integers and bool, then stored as the
// output's dtype: the CPU reference's rules.
struct ScalarOp {
  enum class Kind : uint8_t {
    kLoad,         // input `input` at the current coordinates
    kConstant,     // `value`
    kIota,         // iota.start + iota.offset + c * iota.step, c the coordinate
                   // of virtual input `input` (a 1-d view)
    kRandom,       // random.* at the linear index in virtual input `input`
    kAccumulator,  // the value of accumulator `input` (row kernels, matmul)
    kUnary,        // op(args[0])
    kBinary,       // op(args[0], args[1]) (arithmetic or comparison)
    kWhere,        // args[0] ? args[1] : args[2]
    kCast,         // args[0] converted to `dtype`
    kGather,       // input `input` at the coordinates of virtual input inputs[0],
                   // whose `axis` coordinate (one axis per index dim) is args[0]
    kSelect,       // pieces along `axis` of the coordinates of virtual input
                   // inputs[0]: the first k with bounds[2k] <= c < bounds[2k+1]
                   // reads inputs[k + 1] at c - bounds[2k]
    kDequant,      // value c[-1] of the row of input `input` (u8 blocks of
                   // `quant`, contiguous bytes) at the other coordinates c of
                   // virtual input inputs[0]
  };
  Kind kind = Kind::kConstant;
  DType dtype = DType::kF32;  // the dtype of the result
  OpKind op = OpKind::kLeaf;  // kUnary, kBinary
  std::vector<int> args;      // earlier ScalarOps of the same graph
  int input = -1;             // kLoad, kGather: index into BlockGraph::inputs; kAccumulator
  std::vector<int> inputs;    // kGather, kSelect (see above)
  std::vector<Dim> bounds;    // kSelect: [lo, hi) per piece
  int index_rank = 1;         // kGather: how many coordinates the index spans
  int axis = 0;               // kGather, kSelect
  QuantFormat quant = QuantFormat::kQ8_0;  // kDequant
  double value = 0;           // kConstant
  IotaAttrs iota;
  RandomAttrs random;
};

// A DAG of scalar ops in topological order.
struct ThreadGraph {
  std::vector<ScalarOp> ops;
};

// ---------------------------------------------------------------- block level

// The extent of a grid axis or the for-loop: ceil(product(extent) / tile).
struct LaunchDim {
  Shape extent;  // empty: 1
  int64_t tile = 1;
};

enum class BlockKind : uint8_t {
  // Each thread computes output elements from the thread graph; the grid
  // covers the output's elements (imap: grid.x -> linear output index).
  kPointwise,
  // One block per row of the reduced axes (imap: grid.x -> kept axes); the
  // for-loop walks the row (fmap: loop -> reduced axes), accumulating; the
  // outputs are per row (the reductions) and per element (their consumers).
  kRowReduce,
  // A tiled matrix product: grid (x -> N tiles, y -> M tiles, z -> batch),
  // the loop walks K (fmap: loop -> K), the accumulator is [tile_m, tile_n]
  // in registers, then an epilogue thread graph per output element.
  kMatmul,
  // A graph-defined block found by the search (optimizer/search/): a program
  // of tile ops (`tile_ops`) over the tiles its iterators deliver. Grid axis
  // g splits the dim grid[g].extent into tiles of grid[g].tile; the for-loop
  // walks forloop.extent in steps of forloop.tile; each iterator's imap/fmap
  // say which of its view's dims those are (every other dim is read whole).
  kTiled,
};

// A block-quantized weight read decoded, where it is loaded (a product's
// operand): the viewed DTensor holds u8 blocks of `format`, [..., rows,
// bytes]; the view starts from the decoded shape [..., rows, values] (its
// source_shape), whose element c is value c[-1] of row c[:-1] rounded to
// `dtype`, as the dequantize op gives it.
struct QuantRead {
  QuantFormat format = QuantFormat::kQ8_0;
  DType dtype = DType::kF32;
  friend bool operator==(const QuantRead&, const QuantRead&) = default;
};

// An input iterator: which DTensor a block reads and through which view.
struct InputIterator {
  View view;
  std::optional<QuantRead> quant;  // the view decodes quantized blocks (see QuantRead)
  // imap[g] = the logical dim grid axis g splits, or -1 (replicated); fmap =
  // the dim the for-loop walks, or -1. Descriptive for the fixed kinds; the
  // validator checks they agree with the kind.
  std::array<int, 3> imap = {-1, -1, -1};
  int fmap = -1;
};

enum class AccumulatorKind : uint8_t { kSum, kMax };

// A for-loop accumulator of a row kernel: reduces `value` (an op of the
// phase's thread graph) over the row.
struct Accumulator {
  AccumulatorKind kind = AccumulatorKind::kSum;
  int value = 0;           // ScalarOp index in the phase's thread graph
  bool mean = false;       // divide by the row length at the end
  DType dtype = DType::kF32;
};

// One pass of a row kernel over the row. Later phases read the accumulators
// of earlier ones (ScalarOp::kAccumulator with `input` = accumulator index).
struct Phase {
  ThreadGraph graph;
  std::vector<Accumulator> accumulators;
};

// Where an output comes from and how its elements map to the grid.
struct OutputSaver {
  int tensor = 0;       // DTensor id
  int value = 0;        // ScalarOp index in the graph that produces it
  bool per_row = false; // kRowReduce: one value per row (at the row's first element)
  std::array<int, 3> omap = {-1, -1, -1};
  // Writes element c at c + shift along shift_axis (an in-place block write:
  // slice_update into a buffer it aliases). -1: no shift.
  int shift_axis = -1;
  Dim shift;
};

enum class MatmulAlgorithm : uint8_t {
  kSimt,        // shared-memory tiles, FMA per thread (f32, integers)
  kTensorCore,  // shared-memory tiles, mma.sync (f16, bf16)
  kWarpDot,     // a few rows of A (decode): one warp per output column, a
                // dot product along K; no shared memory, enough warps to
                // stream B at memory bandwidth
};

struct MatmulTiles {
  // kWarpDot: m = all rows, n = columns per block, k = columns each thread sums
  int64_t m = 64, n = 64, k = 32;
  MatmulAlgorithm algorithm = MatmulAlgorithm::kSimt;
  DType dtype = DType::kF32;  // of the product (its operands are rounded to it)
};

// A causal mask (attention's): of a tensor whose axes `row` and `col` have
// full sizes R and C, element (.., r, .., c, ..) is kept where
// r + (C - R) + shift >= c, its last query seeing every key when shift is 0
// (kiln's attention, with any number of cached keys before the queries).
// Masked elements leave a stable exp's max and their exponential is 0:
// exp(-inf), as the masked scores' softmax gives.
struct CausalMask {
  int row = -1, col = -1;  // -1: no mask
  int64_t shift = 0;
  bool on() const { return row >= 0; }
  // Whether element (r, c) of an R x C mask is kept.
  bool Keeps(int64_t r, int64_t c, int64_t rows, int64_t cols) const { return r + (cols - rows) + shift >= c; }
  friend bool operator==(const CausalMask&, const CausalMask&) = default;
};

// One op of a kTiled block, on whole tiles (the code generator decides
// where each lives: shared memory or registers). Values are f32 (integers are
// not searched). A tile op is computed at every loop step when it depends on
// a loop-walked input, otherwise once after the loop.
struct TileOp {
  enum class Kind : uint8_t {
    kInput,       // the tile of inputs[input] at this block (and loop step)
    kConstant,    // a scalar `value`, broadcast like a tile of size-1 axes
    kMatmul,      // args[0] [..., m, k] x args[1] [..., k, n]; operands rounded to `dtype`
    kUnary,       // op(args[0])
    kBinary,      // op(args[0], args[1]); size-1 and missing leading axes broadcast
    kReduceSum,   // sum over `axis`, kept with size 1 (only in-range elements)
    kAccumulate,  // for-loop accumulator: args[0] (a loop-step tile) summed over the loop;
                  // with `rescale`, see below
    kStableExp,   // exp(args[0] - m), m a shift per row along `axis` (every
                  // other coordinate): the max of args[0]'s in-range elements
                  // there. Along a kFull axis that is the row's max; along the
                  // loop axis it is the running max over the steps so far,
                  // so every accumulator of a value that carries the factor
                  // exp(-m) must follow it (`rescale`). With `mask`
                  // (over args[0]'s tile axes, by the tensor dims they
                  // cover), masked elements are left out of m and give 0.
    kRowMatmul,   // args[0] [r, k] times each row's own matrix, args[1] [r, k, n]
                  // (a kInput): [r, 1, n], row i of args[0] times matrix i, the
                  // operands rounded to `dtype` (a batched product whose batch
                  // is the rows: MLA's W_uv, a matrix per head, applied to the
                  // attention's output, whose rows are the heads). Not
                  // searched: made where a factored region's parts are
                  // composed (factor.h, FuseRowProduct). args[1] is never a
                  // tile: it is read from the tensor where it is used.
  };
  Kind kind = Kind::kInput;
  OpKind op = OpKind::kLeaf;  // kUnary, kBinary
  std::vector<int> args;      // earlier tile ops
  int input = -1;             // kInput
  int axis = 0;               // kReduceSum
  double value = 0;           // kConstant
  DType dtype = DType::kF32;  // kMatmul, kRowMatmul: the product's dtype
  // kAccumulate: the kStableExp (along the loop axis) whose running max the
  // summed values are measured against, or -1. Each step first multiplies
  // the accumulator by exp(m_before - m_after) per row of that op (its tile
  // with `axis` at size 1, broadcast against the accumulator's), then adds:
  // the online softmax. The sum stays exact for values linear in exp(-m).
  int rescale = -1;
  CausalMask mask;  // kStableExp
};

struct BlockGraph {
  BlockKind kind = BlockKind::kPointwise;
  std::array<LaunchDim, 3> grid;
  int threads = 256;
  LaunchDim forloop;
  std::vector<InputIterator> inputs;
  // kPointwise: `epilogue` computes every output. kRowReduce: `phases`; the
  // last phase has no accumulators and computes the outputs (per element, or
  // per row). kMatmul: inputs[0]
  // and inputs[1] are A [..., M, K] and B [..., K, N]; the epilogue reads the
  // product as accumulator 0 plus any further inputs at the output element.
  std::vector<Phase> phases;
  ThreadGraph epilogue;
  MatmulTiles tiles;
  Shape iteration_shape;  // the index space: the output shape (row: the full input shape)
  std::vector<int> reduced_axes;  // kRowReduce: axes of iteration_shape the row covers
  std::vector<OutputSaver> outputs;
  std::vector<TileOp> tile_ops;  // kTiled (outputs[i].value indexes these)
  // kTiled: the for-loop's steps are shared by this many blocks along the
  // split grid axis (SplitGridAxis: the first with no extent), split-K
  // style. Each block sums its share of the steps, writes its accumulators
  // to a device workspace, and the last of them to finish adds the partial
  // sums in split order and runs what follows the loop. 1: no split.
  int64_t loop_split = 1;
  // kTiled: along each grid axis the launch has a block for every tile of
  // (LaunchCoversAxis), a block runs one grid point, not a grid-stride
  // loop. The code is the same but for the loop's step; the compiler then
  // keeps no value of one grid point for the next (MLA's attention: 255
  // registers with the stride, 158 without, under ptxas). Which runs faster
  // differs by kernel (on the H200, gated_mlp_bs8 20.6 -> 17.8 us,
  // seed_attention 35.1 -> 36.8), so the search times both forms
  // (superoptimize.cc, OnePointForm).
  bool one_point_blocks = false;
};

inline constexpr int64_t kMaxLoopSplit = 64;

// The blocks a launch takes along each grid axis at most (CUDA's limits;
// the executor caps its grids so). A grid axis of more tiles than that has
// its blocks walk several grid points (the code generator's grid-stride
// loops); one of no more runs a grid point a block.
inline constexpr int64_t kMaxLaunchBlocks[3] = {0x7fffffff, 65535, 65535};

// Whether a launch has a block for every tile along grid axis `axis`: a
// concrete extent of no more tiles than kMaxLaunchBlocks[axis].
bool LaunchCoversAxis(const LaunchDim& d, int axis);

// The grid axis a split for-loop's blocks spread along (the first with no
// extent), or -1 when the loop is not split or no axis is free.
int SplitGridAxis(const BlockGraph& b);

// A launch dim's tiles: its extent (a symbolic one at its largest) over its
// tile; 1 with no extent.
int64_t NominalTiles(const LaunchDim& d);

// The blocks a kernel launches: its grid dims' NominalTiles, times a split
// loop's blocks.
int64_t LaunchedBlocks(const BlockGraph& b);

// Whether a product's B operand [..., K, N], viewed from [..., rows,
// values], reads along K the values of one row: its steps only permute,
// taking K from the last axis and N from the one before.
bool ReadsRowsAlongK(const View& v);

// Whether matmul block `b` can decode a quantized B operand (QuantRead) in
// its loads: the SIMT and the 128-thread tensor-core products decode each
// element they load (through any view); the warp-dot product eight values
// of a row at a time, so B must read rows along K; the pipelined
// (256-thread) tensor-core product does not decode.
bool DecodesQuantizedB(const BlockGraph& b);

// The multiprocessors the cost model and the code generator plan for (an
// H100 SXM's and an H200's): how many blocks run at once, and whether an SM
// ever holds more than one of a grid's blocks.
inline constexpr int64_t kPlannedSms = 132;

// ---------------------------------------------------------------- graph

struct Kernel {
  BlockGraph block;
  std::vector<int> inputs;   // DTensor ids read
  std::vector<int> outputs;  // DTensor ids written
};

struct KernelGraph {
  std::vector<DTensor> tensors;  // indexed by id
  std::vector<Kernel> kernels;   // in execution order

  const DTensor& tensor(int id) const { return tensors[id]; }
};

// The blocks a graph launches: its kernels' LaunchedBlocks, summed.
int64_t LaunchedBlocks(const KernelGraph& graph);

// The graph with one_point_blocks set in each tiled kernel where that
// changes its code (a grid axis its launch covers), or nothing where it
// changes none.
std::optional<KernelGraph> OnePointForm(const KernelGraph& graph);

std::string BlockKindName(BlockKind kind);
std::string ScalarKindName(ScalarOp::Kind kind);
std::string ViewKindName(ViewStep::Kind kind);
std::string MatmulAlgorithmName(MatmulAlgorithm algorithm);
std::string TileKindName(TileOp::Kind kind);
std::string TileOpText(const TileOp& op);

// Human-readable text and Graphviz DOT.
std::string ToText(const KernelGraph& graph);
std::string ToDot(const KernelGraph& graph);

}  // namespace kiln::ugraph

#endif  // KILN_OPTIMIZER_UGRAPH_H_
