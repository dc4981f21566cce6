// Code for graph-defined blocks (BlockKind::kTiled).
//
// Tiles are f32 buffers in dynamic shared memory, row-major over the tile
// axes, 16-byte aligned (SharedMemoryBytes' layout, less constants and
// products summed straight into accumulators, plus scratch for matmuls
// whose threads split the contraction). A thread
// block walks grid points (grid-stride loops: the launch caps y and z); per
// grid point it runs
//   before the loop  the tiles that need neither a loop step nor an
//                    accumulator (inputs read whole, constants), and zeroes
//                    the accumulators;
//   the loop         the tiles of each step, then the accumulator updates;
//   after the loop   the tiles that read accumulators, then the stores.
// Tile elements outside their tensor (the tail of a grid or loop tile) load
// as 0 and never reach an in-range result: matmuls contract and reductions
// sum only the in-range part of an axis, and stores skip the rest, so ops on
// the tails may compute anything (exp(0), rsqrt(0)).
#include "optimizer/codegen/tiled_gen.h"

#include <algorithm>
#include <map>
#include <utility>

#include "optimizer/codegen/thread_emitter.h"
#include "optimizer/codegen/tiled_generator.h"
#include "optimizer/ugraph_validate.h"
#include "tensor/check.h"

namespace kiln::codegen {
namespace tiled_internal {

namespace {

// Blocks along a launch dim (an expression of the index type).
std::string BlockCount(Emitter& e, const ugraph::LaunchDim& d) {
  return absl::StrCat("(", e.NumelExpr(d.extent), " + ", d.tile - 1, ") / ", d.tile);
}

}  // namespace

std::vector<MatmulPath> TiledGenerator::op_paths() const {
  std::vector<MatmulPath> paths(b_.tile_ops.size(), MatmulPath::kNone);
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kMatmul || !needed_[i]) continue;
    paths[i] = matmuls_[i].mma      ? MatmulPath::kTensorCores
               : matmuls_[i].direct ? MatmulPath::kRegisters
                                    : MatmulPath::kSharedMemory;
  }
  return paths;
}

MatmulPath TiledGenerator::matmul_path() const {
  MatmulPath path = MatmulPath::kNone;
  for (const MatmulPath p : op_paths()) path = std::max(path, p);  // the enum runs fastest to slowest
  return path;
}

int64_t TiledGenerator::mma_warps() const {
  const int64_t warps = b_.threads / 32;
  // A warp per 16 keys, per slab and group, or per columns of O.
  if (flash_.keys_split || flash_.groups > 1 || flash_.cols_split) return warps;
  if (flash_.pv >= 0) return std::min(warps, matmuls_[flash_.pv].m16s);  // a warp per slab of rows
  int64_t most = 0;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const MatmulPlan& plan = matmuls_[i];
    if (b_.tile_ops[i].kind != TileOp::Kind::kMatmul || !plan.mma || !needed_[i]) continue;
    most = std::max(most, std::min(warps, plan.n8s * plan.m16s * plan.k_groups));
  }
  return most;
}

void TiledGenerator::Read(int buffer, Spread reader) {
  auto it = dirty_.find(buffer);
  if (it == dirty_.end() || (reader != Spread::kOther && it->second == reader)) return;
  Sync();
}

void TiledGenerator::Wrote(int buffer, Spread writer) {
  dirty_[buffer] = writer;
  step_wrote_ = true;
}

void TiledGenerator::Sync() {
  // Right after another barrier (only comments between them, in the same
  // block): that one serves.
  const std::string& code = e_.code();
  bool again = synced_at_ > 0 && synced_at_ <= code.size();
  for (size_t at = synced_at_; again && at < code.size();) {
    const size_t end = std::min(code.find('\n', at), code.size());
    const size_t text = code.find_first_not_of(' ', at);
    again = text >= end || code.compare(text, 2, "//") == 0;
    at = end + 1;
  }
  dirty_.clear();
  if (again) return;
  e_.Line(unaligned_barriers_ ? "sync_threads_unaligned();" : "__syncthreads();");
  synced_at_ = e_.code().size();
  ++syncs_;
}

std::optional<std::pair<int, double>> TiledGenerator::ConstantFactor(int x) const {
  const TileOp& op = b_.tile_ops[x];
  if (op.kind != TileOp::Kind::kBinary || op.op != OpKind::kMul) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const TileOp& c = b_.tile_ops[op.args[k]];
    const int other = op.args[1 - k];
    if (c.kind == TileOp::Kind::kConstant && SameShape(other, x)) return std::make_pair(other, c.value);
  }
  return std::nullopt;
}

std::optional<std::pair<int, double>> TiledGenerator::ScaledSum(int x) const {
  const std::optional<std::pair<int, double>> f = ConstantFactor(x);
  if (!f || b_.tile_ops[f->first].kind != TileOp::Kind::kReduceSum) return std::nullopt;
  return f;
}

std::string TiledGenerator::Scaled(int i, const std::string& value) const {
  if (fused_scale_[i] == 1.0) return value;
  return absl::StrCat(Literal(fused_scale_[i], DType::kF32), " * ", value);
}

void TiledGenerator::PlanNeeded() {
  const size_t n = b_.tile_ops.size();
  needed_.assign(n, false);
  for (const ugraph::OutputSaver& o : b_.outputs) needed_[o.value] = true;
  for (size_t i = 0; i < n; ++i) needed_[i] = needed_[i] || b_.tile_ops[i].kind == TileOp::Kind::kAccumulate;
  for (size_t i = n; i-- > 0;) {
    const TileOp& op = b_.tile_ops[i];
    if (!needed_[i] || (op.kind == TileOp::Kind::kReduceSum && register_sum_[i] >= 0)) continue;
    // An accumulator that a matmul or sum adds to reads only that op (not
    // the scaling between them).
    if (fused_from_[i] >= 0) {
      needed_[fused_from_[i]] = true;
      continue;
    }
    // A ring fold computes its chain from the ring, and its epilogue.
    if (op.kind == TileOp::Kind::kReduceSum && ring_chain_[op.args[0]] >= 0) continue;
    if (epilogue_of_[i] >= 0) {
      needed_[epilogue_of_[i]] = true;
      continue;
    }
    // A direct matmul reads B from registers or the ring (a step's product
    // reads a computed B from its tile; a column-scaled B, the ring and
    // the scale's tile), and A too where it can.
    const MatmulPlan* plan = op.kind == TileOp::Kind::kMatmul ? &matmuls_[i] : nullptr;
    if (plan != nullptr && plan->b_scale >= 0) needed_[plan->b_scale] = true;
    for (size_t k = 0; k < op.args.size(); ++k) {
      const bool b_elsewhere = k == 1 && !(plan != nullptr && plan->b_tile);
      if (plan != nullptr && (plan->direct || plan->step) && (b_elsewhere || (k == 0 && plan->a_ring))) continue;
      needed_[op.args[k]] = true;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind == TileOp::Kind::kInput && inputs_[i].ring && !inputs_[i].direct) {
      inputs_[i].tile = needed_[i];
    }
  }
}

int64_t TiledGenerator::Useful(const TileAxis& a) {
  const bool tail = a.source == Source::kGrid || a.source == Source::kLoop;
  return tail && a.extent.is_concrete() ? std::min(a.size, a.extent.value()) : a.size;
}

void TiledGenerator::OpenLinear(int64_t elements) {
  e_.Open(absl::StrCat("for (int l = threadIdx.x; l < ", elements, "; l += ", b_.threads, ")"));
}

// Calls fn(d, stride, outermost) for each axis d of size above 1, fastest
// first: its stride in the linear index, and whether it is the slowest.
template <typename Fn>
static void ForEachLinearAxis(const std::vector<int64_t>& sizes, const std::vector<int>& order, Fn fn) {
  int64_t stride = 1;
  for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
    const int d = order[k];
    if (sizes[d] == 1) continue;
    fn(d, stride, Product(sizes, 0, sizes.size()) == stride * sizes[d]);
    stride *= sizes[d];
  }
}

std::vector<std::string> TiledGenerator::Unravel(const std::vector<int64_t>& sizes, const std::vector<int>& order,
                                                 const std::string& linear, const std::string& thread,
                                                 const std::string& it) {
  std::vector<std::string> coords(sizes.size(), "0");
  const int64_t threads = b_.threads;
  ForEachLinearAxis(sizes, order, [&](int d, int64_t stride, bool outermost) {
    std::string value;
    if (!thread.empty() && threads % stride == 0) {
      // l / stride = thread / stride + it * (threads / stride), exactly
      // (both terms whole and not negative); modulo the size, the second
      // term drops where the size divides its factor.
      // (`thread` is unsigned: its divisions are shifts.)
      const int64_t per_it = threads / stride;
      const std::string base = stride == 1 ? thread : absl::StrCat(thread, " / ", stride);
      const std::string its = per_it == 1 ? it : absl::StrCat(it, " * ", per_it);
      if (outermost) {
        value = absl::StrCat("static_cast<int>(", base, ") + ", its);
      } else if (per_it % sizes[d] == 0) {
        value = absl::StrCat("static_cast<int>(", base, " % ", sizes[d], ")");
      } else {
        value = absl::StrCat("(static_cast<int>(", base, ") + ", its, ") % ", sizes[d]);
      }
    } else {
      value = stride == 1 ? linear : absl::StrCat(linear, " / ", stride);
      if (!outermost) value = absl::StrCat(stride == 1 ? value : "(" + value + ")", " % ", sizes[d]);
    }
    coords[d] = e_.Fresh("i");
    e_.Linef("const int ", coords[d], " = ", value, ";");
  });
  return coords;
}

bool TiledGenerator::TaskStep(const std::vector<int64_t>& sizes, const std::vector<int>& order, int* axis,
                              int64_t* per_it) const {
  // Unravel's forms with a thread: the slowest coordinate moves by
  // threads / stride with `it`, the others are free of it.
  bool linear = true;
  *axis = -1;
  ForEachLinearAxis(sizes, order, [&](int d, int64_t stride, bool outermost) {
    linear = linear && b_.threads % stride == 0 && (outermost || b_.threads / stride % sizes[d] == 0);
    if (outermost) *axis = d, *per_it = b_.threads / std::max<int64_t>(stride, 1);
  });
  return linear && *axis >= 0;
}

std::string TiledGenerator::Operand(int a, const TileInfo& out, const std::vector<std::string>& coords,
                                    const std::string& linear) {
  const TileOp& op = b_.tile_ops[a];
  if (op.kind == TileOp::Kind::kConstant) return Literal(op.value, DType::kF32);
  const std::vector<int64_t> sizes = Sizes(tiles_[a]);
  if (sizes == Sizes(out)) return absl::StrCat(Buffer(a), "[", linear, "]");
  // Operand axis d lines up with output axis d + lead.
  const size_t lead = out.axes.size() - sizes.size();
  std::vector<std::string> at(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) at[d] = coords[d + lead];
  return absl::StrCat(Buffer(a), "[", RowMajor(sizes, at), "]");
}

std::string TiledGenerator::Start(const TileAxis& a) const {
  switch (a.source) {
    case Source::kGrid: return absl::StrCat("s", a.grid_axis);
    case Source::kLoop: return loop_start_;
    case Source::kFull:
    case Source::kOne: return e_.IndexLiteral(0);
  }
  KILN_UNREACHABLE("unknown tile axis source");
}

std::string TiledGenerator::Length(const TileAxis& a) const {
  switch (a.source) {
    case Source::kGrid: return absl::StrCat("n", a.grid_axis);
    case Source::kLoop: return loop_length_;
    case Source::kFull:
    case Source::kOne: return e_.IndexLiteral(a.size);
  }
  KILN_UNREACHABLE("unknown tile axis source");
}

std::string TiledGenerator::Global(const TileAxis& a, const std::string& coord) const {
  if (a.source == Source::kOne) return e_.IndexLiteral(0);
  if (a.source == Source::kFull) return coord;
  return absl::StrCat("(", Start(a), " + ", coord, ")");
}

std::string TiledGenerator::InRange(const TileInfo& t, const std::vector<std::string>& coords,
                                    int skip) const {
  std::string out;
  for (size_t d = 0; d < t.axes.size(); ++d) {
    const Source s = t.axes[d].source;
    if (static_cast<int>(d) == skip || (s != Source::kGrid && s != Source::kLoop)) continue;
    absl::StrAppend(&out, out.empty() ? "" : " && ", coords[d], " < ", Length(t.axes[d]));
  }
  return out;
}

bool TiledGenerator::ReadOperands(int i, Spread reader) {
  bool broadcast = false;
  for (int a : b_.tile_ops[i].args) {
    if (b_.tile_ops[a].kind == TileOp::Kind::kConstant) continue;
    const bool same = SameShape(a, i);
    Read(a, same ? reader : Spread::kOther);
    broadcast = broadcast || !same;
  }
  return broadcast;
}

std::string TiledGenerator::ElementwiseValue(int i, const std::vector<std::string>& coords, const std::string& linear) {
  const TileOp& op = b_.tile_ops[i];
  std::string value = absl::StrCat(OpFunction(op.op), "(", Operand(op.args[0], tiles_[i], coords, linear));
  if (op.kind == TileOp::Kind::kBinary) absl::StrAppend(&value, ", ", Operand(op.args[1], tiles_[i], coords, linear));
  return value + ")";
}

void TiledGenerator::EmitElementwise(int i) {
  const TileInfo& t = tiles_[i];
  // After a split loop whose blocks share the combine out, a block's own
  // rows (the combine wrote no others: on an H200, MLA's P C / l over all
  // 16 rows in each of 64 blocks, stale rows and all, took 0.9 us of the
  // kernel's 9.7).
  const bool share = phase_[i] == Phase::kAfter && ShareAxisOf(t) >= 0;
  const Spread spread = share ? ShareSpread(t) : Spread::kLinear;
  const bool broadcast = ReadOperands(i, spread);
  Read(i, spread);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(b_.tile_ops[i]), share ? ", the share's elements" : "");
  const std::vector<int64_t> sizes = Sizes(t);
  if (share) {
    OpenShareLinear(t, 1);
  } else {
    OpenLinear(t.elements());
  }
  const std::vector<std::string> coords = broadcast || share ? Unravel(sizes, RowMajorOrder(sizes.size()), "l")
                                                             : std::vector<std::string>(sizes.size(), "0");
  e_.Linef(Buffer(i), "[l] = ", ElementwiseValue(i, coords), ";");
  e_.Close();
  Wrote(i, spread);
}

void TiledGenerator::EmitAccumulate(int i) {
  if (fused_from_[i] >= 0) return;  // its matmul or sum adds to it
  const int x = b_.tile_ops[i].args[0];
  Read(x, Spread::kLinear);
  Read(i, Spread::kLinear);
  e_.Linef("// x", i, " += x", x);
  OpenLinear(tiles_[i].elements());
  e_.Linef(Buffer(i), "[l] += ", Buffer(x), "[l];");
  e_.Close();
  Wrote(i, Spread::kLinear);
}

void TiledGenerator::EmitOp(int i) {
  if (epilogue_of_[i] >= 0) return;  // the fold writes it
  if (computed_by_store_[i]) return;  // EmitStores
  if (i == DeferredScaleFold()) return;  // EmitFlashStep folds it, under the scores' products
  switch (b_.tile_ops[i].kind) {
    case TileOp::Kind::kInput: return EmitDirect(i);
    case TileOp::Kind::kConstant: return;  // a literal where it is used
    case TileOp::Kind::kUnary:
    case TileOp::Kind::kBinary: return EmitElementwise(i);
    case TileOp::Kind::kMatmul: return EmitMatmul(i);
    case TileOp::Kind::kReduceSum: return EmitReduce(i);
    case TileOp::Kind::kAccumulate: return EmitAccumulate(i);
    case TileOp::Kind::kStableExp: return EmitStableExp(i);
    case TileOp::Kind::kRowMatmul: return EmitRowMatmul(i);
  }
}

void TiledGenerator::EmitPhase(Phase phase) {
  const size_t n = b_.tile_ops.size();
  const auto input = [&](size_t i) {
    return phase_[i] == phase && b_.tile_ops[i].kind == TileOp::Kind::kInput && !inputs_[i].at_use;
  };
  if (phase == Phase::kLoop) EmitRingStep();
  // The loop's staged tiles were issued before the loop or by the previous
  // step; the others issue all their loads now, before any is converted.
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && inputs_[i].staged && phase != Phase::kLoop) {
      DeclareRaw(static_cast<int>(i));
      EmitStaged(static_cast<int>(i), /*issue=*/true);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && inputs_[i].staged) EmitStaged(static_cast<int>(i), /*issue=*/false);
  }
  for (size_t i = 0; i < n; ++i) {
    if (input(i) && !inputs_[i].staged) EmitDirect(static_cast<int>(i));
  }
  if (phase == Phase::kLoop) EmitPrefetch(/*first=*/false);
  for (size_t i = 0; i < n; ++i) {
    if (phase_[i] == phase && b_.tile_ops[i].kind != TileOp::Kind::kInput && needed_[i]) EmitOp(static_cast<int>(i));
  }
}

void TiledGenerator::PlanStoredOps(const std::vector<int>& uses) {
  computed_by_store_.assign(b_.tile_ops.size(), false);
  const bool loop = b_.forloop.extent.rank() > 0;
  for (const ugraph::OutputSaver& o : b_.outputs) {
    const int v = o.value;
    const TileOp& op = b_.tile_ops[v];
    const bool elementwise = op.kind == TileOp::Kind::kUnary || op.kind == TileOp::Kind::kBinary;
    // After the loop nothing writes its operands' tiles again (tiles before
    // it may lie in the ring's space).
    const bool last_phase = !loop || phase_[v] == Phase::kAfter;
    computed_by_store_[v] = elementwise && uses[v] == 1 && epilogue_of_[v] < 0 && needed_[v] && last_phase;
  }
}

absl::Status TiledGenerator::Generate() {
  if (absl::Status s = Plan(); !s.ok()) return s;
  // 32-bit index math where it fits, but on the flash path. On an H100,
  // the MLA decode kernels ran 41.9 -> 34.8 us (it had spilled 300 bytes
  // of 64-bit offsets) and 31.4 -> 27.1 with 32-bit offsets, rmsnorm_linear
  // and lora_r16 as fast or a little faster; the flash kernels of gqa_bs8
  // and qknorm_gqa_bs8 ran 4-6% slower (31.0 -> 32.4 us, 48.4 -> 51.2), for
  // all that their loops took 8% fewer instructions, and gqa_bs1's the same.
  e_.UseIndex32(flash_.pv < 0 && e_.FitsIndex32());
  for (int t : e_.slots()) e_.Strides(t);
  const size_t n = b_.tile_ops.size();
  if (flash_.wgmma) {
    // The rings' 1024-byte alignment (wgmma's swizzle takes the address's
    // bits) holds from the base on; a base off it would read wrong data.
    e_.Line("extern __shared__ __align__(1024) float smem[];");
    e_.Line("#if KILN_WGMMA");
    e_.Line("if (shared_address(smem) % 1024u != 0u) __trap();");
    e_.Line("#endif");
  } else {
    e_.Line("extern __shared__ __align__(16) float smem[];");
  }
  const int split_axis = ugraph::SplitGridAxis(b_);
  if (split_axis >= 0) e_.Line("__shared__ bool split_last;");
  if (split_together()) {
    // Compiled for one way on (KILN_TOGETHER: SourceFor), the other's code
    // left out; else both, by the launch's p.together.
    e_.Line("#if defined(KILN_TOGETHER)");
    e_.Line("constexpr bool together = KILN_TOGETHER;");
    e_.Line("#else");
    e_.Line("const bool together = p.together != 0u;");
    e_.Line("#endif");
  }
  DeclareBlockIndices();
  for (size_t i = 0; i < n; ++i) {
    if (offsets_[i] >= 0) e_.Linef("float* const ", Buffer(i), " = smem + ", offsets_[i], ";");
  }
  DeclareShifts();
  if (scratch_ > 0) e_.Linef("float* const scratch = smem + ", buffers_, ";");
  for (size_t i = 0; i < n; ++i) {
    if (inputs_[i].ring && inputs_[i].ring_of >= 0) {
      e_.Linef("uint4* const ring", i, " = ring", inputs_[i].ring_of, ";  // the same elements as x", inputs_[i].ring_of,
               "'s");
    } else if (inputs_[i].ring) {
      e_.Linef("uint4* const ring", i, " = reinterpret_cast<uint4*>(smem + ", inputs_[i].ring_offset, ");  // ",
               stages_, " stages of ", inputs_[i].tasks, " vectors");
    }
  }
  bool loop_axes = false;
  std::vector<bool> grid_axes(3, false);
  for (const TileInfo& t : tiles_) {
    for (const TileAxis& a : t.axes) {
      loop_axes = loop_axes || a.source == Source::kLoop;
      if (a.source == Source::kGrid) grid_axes[a.grid_axis] = true;
    }
  }
  const auto count = [&](const ugraph::LaunchDim& d) { return BlockCount(e_, d); };
  std::string point = "0";  // a split loop's grid point: its linear index over the other axes
  for (int g = 2; g >= 0; --g) {
    if (b_.grid[g].extent.rank() != 0) point = absl::StrCat("(", point, ") * (", count(b_.grid[g]), ") + bg", g);
  }
  bool loop = false;
  for (size_t i = 0; i < n; ++i) loop = loop || phase_[i] == Phase::kLoop;
  e_.Line("bool waited = false;  // for the kernel before, at the block's first grid point");
  // Grid-stride loops, outermost z: a block may own several grid points.
  // Along a causal mask's rows, last-first (CausalGridAxis). With
  // one_point_blocks, where the launch has a block for every tile of an
  // axis (LaunchCoversAxis), the loop runs once and says so: its step
  // leaves it, and the compiler keeps no value of one grid point for the
  // next (ugraph.h).
  int opened = 0;
  const int causal_axis = CausalGridAxis();
  for (int g = 2; g >= 0; --g) {
    const ugraph::LaunchDim& d = b_.grid[g];
    if (d.extent.rank() == 0) continue;
    const bool once = b_.one_point_blocks && ugraph::LaunchCoversAxis(d, g);
    const std::string ix = e_.Index(), bg = absl::StrCat("bg", g);
    if (g == causal_axis) {
      e_.Open(absl::StrCat("for (", ix, " ", bg, " = ", count(d), " - 1 - static_cast<", ix, ">(", BlockIndex(g), "); ",
                           bg, " >= 0; ", bg,
                           once ? " = -1" : absl::StrCat(" -= static_cast<", ix, ">(", kGridDim[g], ")"), ")"));
    } else {
      e_.Open(absl::StrCat("for (", ix, " ", bg, " = ", BlockIndex(g), "; ", bg, " < ", count(d), "; ", bg,
                           once ? absl::StrCat(" = ", count(d)) : absl::StrCat(" += ", kGridDim[g]), ")"));
    }
    ++opened;
    if (grid_axes[g]) {
      const std::string extent = e_.DimExpr(d.extent[0]);
      e_.Linef("const ", e_.Index(), " s", g, " = bg", g, " * ", d.tile, ";");
      // In-range lengths are at most a tile: ints (cheaper compares).
      e_.Linef("const int n", g, " = static_cast<int>(", extent, " - s", g, " < ", d.tile, " ? ", extent, " - s", g,
               " : ", d.tile, ");");
    }
  }
  if (opened == 0) e_.Open("");
  // A grid point's tiles before the loop take the ring's space that the
  // previous point's loop read.
  if (ring_space_shared_) Sync();
  // The grid point's index math, which reads no memory, before the wait:
  // blocks launched early do it while the kernel before finishes.
  if (loop) {
    EmitStepBounds();
    if (stages_ > 0) EmitRingWhole();
  }
  // The accumulators' zeros and the running maxes' resets write shared
  // memory only: before the wait, where no tile before the loop could
  // share their space (the ops before it have no buffers).
  const auto zero_accumulators = [&] {
    for (size_t i = 0; i < n; ++i) {
      if (b_.tile_ops[i].kind != TileOp::Kind::kAccumulate || !needed_[i]) continue;
      if (FlashAccumulator(static_cast<int>(i))) continue;  // EmitFlashFlush writes it whole
      Read(static_cast<int>(i), Spread::kLinear);
      e_.Linef("// x", i, " = 0");
      OpenLinear(tiles_[i].elements());
      e_.Linef(Buffer(i), "[l] = 0.0f;");
      e_.Close();
      Wrote(static_cast<int>(i), Spread::kLinear);
    }
    EmitShiftReset();
  };
  bool before_loop = false;
  for (size_t i = 0; i < n; ++i) before_loop = before_loop || (phase_[i] == Phase::kBefore && offsets_[i] >= 0);
  if (!before_loop) zero_accumulators();
  EmitWaitForPriorGrid();
  EmitPhase(Phase::kBefore);
  if (before_loop) zero_accumulators();
  if (loop) {
    for (size_t i = 0; i < n; ++i) {
      if (b_.tile_ops[i].kind != TileOp::Kind::kMatmul || !matmuls_[i].direct) continue;
      if (static_cast<int>(i) == flash_.pv) {
        DeclareFlash();
        continue;
      }
      if (matmuls_[i].mma) {
        e_.Linef("float d", i, "[", matmuls_[i].per_warp, "][4] = {};  // x", i, "'s accumulator fragments");
        if (matmuls_[i].paired) e_.Linef("float d", i, "b[", matmuls_[i].per_warp, "][4] = {};  // its odd k chunks'");
        continue;
      }
      const InputPlan& b_plan = inputs_[b_.tile_ops[i].args[1]];
      e_.Linef("float d", i, "[", matmuls_[i].rows, "][", matmuls_[i].dot ? b_plan.per_thread : b_plan.width,
               "] = {};  // x", i, matmuls_[i].dot ? "'s dots in registers: a row and vector each" : "'s sums in registers");
    }
    for (size_t i = 0; i < n; ++i) {
      if (register_sum_[i] < 0) continue;
      e_.Linef("float rs", i, "[", inputs_[register_sum_[i]].per_thread, "] = {};  // x", i,
               "'s partial sums in registers");
    }
    EmitPackedA();
    EmitPrefetch(/*first=*/true);
    // The ring's first copies overwrite the tiles read only before the
    // loop: every thread is done with them first. (Tiles computed after
    // it, also in the ring's space, were last read before the barrier that
    // ends the previous grid point.) Where those tiles lie in its last
    // stage, the prologue went out at the wait (ring_first_) and the first
    // copies into that stage come in the loop's first step.
    if (before_in_ring_space_) Sync();
    if (!ring_first_) EmitRingPrologue();
    // What is dirty before the loop stays so for what follows it: the
    // loop may run no step.
    const std::map<int, Spread> before = dirty_;
    const bool lean = loop_axes && LeanLoop();
    e_.Linef(e_.Index(), " step = step_begin;");
    if (lean) {
      const std::string extent = e_.DimExpr(b_.forloop.extent[0]);
      // Where the scores run a step ahead, every step a whole one where the
      // block's steps all are (its copies past them clamped to its last:
      // EmitRingIssue; the general loop's steps do not overlap their
      // products: gqa_bs8's kernel 20.6 -> 19.7 us on an H100), and the
      // bound opaque to the compiler (see opaque in types.cuh). Else up
      // to the steps whose copies would reach past the whole ones (so
      // extended, causal_prefill's pipelined kernel took 416 us against
      // 404).
      const std::string whole = absl::StrCat(extent, " / ", b_.forloop.tile);
      if (FlashPingPong()) {
        // Opaque (seen through, NVVM unrolled warpgroup 1's loop: 6.5
        // minutes of compiling on a 2-core machine, against 6 s) and the
        // same in every lane to ptxas (a broadcast): the loops keep
        // products in flight across their branches, and ptxas serializes
        // every product where those may diverge (C7518).
        // To the block's end, masked steps too, but where the copies a step
        // ahead would reach past the whole steps.
        e_.Linef("const ", e_.Index(), " lean_end = __shfl_sync(0xffffffffu, opaque(ring_whole ? max(step_begin, ",
                 "min(step_end, ", whole, " - ", RingAhead(), ")) : step_begin), 0);");
      } else if (FlashScoresAhead()) {
        e_.Linef("const ", e_.Index(), " lean_end = opaque(ring_whole ? (step_end <= ", whole,
                 " ? step_end : max(step_begin, ", whole, " - ", stages_ - 1, ")) : step_begin);");
      } else {
        e_.Linef("const ", e_.Index(), " lean_end = ring_whole ? max(step_begin, min(step_end, ", whole, ") - ",
                 stages_ - 1, ") : step_begin;");
      }
      const bool piped = FlashPipelined();
      if (piped) {
        e_.Linef("unsigned pp[", flash_.warp_slabs, "][", matmuls_[flash_.scores].n8s / 2,
                 "][4] = {};  // the last whole step's P, x", flash_.pv, "'s A fragments (FlashPipelined)");
        e_.Line("int pstage = 0;  // and the stage of its V");
      }
      const bool ahead = FlashScoresAhead();
      if (ahead) EmitFlashScoresPrologue();
      e_.Line(ahead   ? "// whole steps, each one's P@V and the next one's scores issued under its softmax"
              : piped ? "// whole steps, each one's scores' products issued before the last one's P@V"
                      : "// whole steps");
      lean_step_ = true;
      if (FlashPingPong()) {
        if (absl::Status s = EmitPingPongLoops(loop_axes); !s.ok()) return s;
      } else {
        e_.Open("for (; step < lean_end; ++step)");
        if (ahead) {
          // Two steps an iteration, scores0 and scores1 trading places.
          const std::string shape = absl::StrCat("[", flash_.warp_slabs, "][", FlashColumns(), "][4]");
          for (int half = 0; half < 2; ++half) {
            if (half == 1) e_.Line("if (++step == lean_end) break;");
            e_.Open("");
            e_.Linef("float (&sc)", shape, " = scores", half, ";  // this step's scores, done");
            e_.Linef("float (&sa)", shape, " = scores", 1 - half, ";  // the next step's, issued in this one");
            EmitLoopStep(loop_axes);
            e_.Close();
          }
        } else {
          EmitLoopStep(loop_axes);
        }
        e_.Close();
      }
      lean_step_ = false;
      if (piped) EmitFlashPipelineDrain();
      dirty_ = before;
      e_.Line("// the rest: tails, copies of tails or of nothing, or copies that are not whole");
    }
    e_.Open("for (; step < step_end; ++step)");
    EmitLoopStep(loop_axes);
    e_.Close();
    if (stages_ > 0) e_.Line("copy_async_wait<0>();  // the copies of steps past the end");
    // Tiles after the loop take the ring's space: every thread is done
    // with the ring (its reads, and its copies landed) first.
    if (after_in_ring_space_) Sync();
    dirty_ = before;
    EmitRegisterSumFlush();
    if (FlashPartialsDirect()) EmitSplitPartials(point, BlockIndex(split_axis));
    EmitDirectFlush();
  }
  if (split_axis >= 0) EmitSplitCombine(point, BlockIndex(split_axis));
  // The rest: the split's combine, the ops after the loop and the stores.
  const auto rest = [&] {
    if (split_axis >= 0) EmitSplitShare(BlockIndex(split_axis));
    EmitPhase(Phase::kAfter);
    EmitStores();
    if (!together_) return;
    e_.Linef("if (threadIdx.x == ", CountOutThread(), ") split_count_out(counters + ", kSplitCounters,
             " * point, counted_out, ", b_.loop_split, "u);");
    // No block leaves, or writes its tiles again, while its cluster's
    // others may still read its row product's sums.
    if (share_.cluster) e_.Line("cluster_wait();");
  };
  if (split_axis >= 0 && split_together()) {
    // Twice: for the blocks that go on together (each its share) and for
    // the last block alone, each its own code, with no branch on
    // `together` inside: one branch, which a kernel compiled for one way
    // on (KILN_TOGETHER) leaves out with the other way's code.
    const std::map<int, Spread> dirty = dirty_;
    e_.Open("if (together)");
    together_ = true;
    rest();
    together_ = false;
    e_.Close();
    const std::map<int, Spread> after = std::exchange(dirty_, dirty);
    e_.Open("else");
    rest();
    e_.Close();
    // After either: a buffer written in either, linearly only where so in
    // both; a share's elements are not the same ones in the two.
    for (const auto& [buffer, spread] : after) {
      const auto it = dirty_.find(buffer);
      dirty_[buffer] = it == dirty_.end() || it->second == spread ? spread : Spread::kOther;
    }
    for (auto& [buffer, spread] : dirty_) {
      if (spread == Spread::kShare) spread = Spread::kOther;
    }
    synced_at_ = 0;  // no barrier just before
  } else {
    rest();
  }
  if (split_axis >= 0) e_.Close();  // the going-on blocks' part
  if (opened > 0) Sync();  // the next grid point overwrites every tile
  for (int g = 0; g < std::max(opened, 1); ++g) e_.Close();
  return absl::OkStatus();
}

int64_t TiledGenerator::BlockSteps() const {
  if (b_.forloop.extent.rank() != 1 || !b_.forloop.extent[0].is_concrete()) return 0;
  const int64_t tile = b_.forloop.tile, steps = (b_.forloop.extent[0].value() + tile - 1) / tile;
  return (steps + b_.loop_split - 1) / std::max<int64_t>(1, b_.loop_split);
}

bool TiledGenerator::LeanLoop() const {
  // For the flash path with rows owned by warps and at least 4 x (stages -
  // 1) steps a block: there the general step's cold code, interleaved with
  // the hot, took 2.2 us of gqa_bs8's 33.8 on an H100 (instruction fetch),
  // where the streaming kernels ran 1-1.7 us slower with it
  // (rmsnorm_linear_bs1 20.4 -> 22.1, gated_mlp_bs8 24.7 -> 25.7; the former
  // spilled) and seed_attention's keys-split decode 1.1 us slower. Where the
  // scores can run a step ahead (FlashAheadFits), from 2 steps a block: the
  // pipeline lives in that loop alone (gqa_bs1's kernel, 4 steps a block:
  // 9.66 -> 9.13 us).
  if (stages_ == 0 || RegisterPrefetch() || flash_.pv < 0 || flash_.keys_split) return false;
  const int64_t share = BlockSteps();
  return share >= 4 * (stages_ - 1) || (share >= 2 && FlashAheadFits());
}

void TiledGenerator::EmitLoopStep(bool loop_axes) {
  if (loop_axes && lean_step_) {
    e_.Linef("const ", e_.Index(), " k0 = step * ", b_.forloop.tile, ";");
    e_.Linef("const int kn = ", b_.forloop.tile, ";");
  } else if (loop_axes) {
    EmitStepRange("k0", "kn", "step", /*guarded=*/false);
  }
  step_wrote_ = false;
  if (StreamsAhead()) {
    e_.Linef("if (step == step_end - ", stages_, ") launch_dependents();  // the kernel after it may start its blocks");
  }
  const int64_t syncs_before = syncs_;
  EmitPhase(Phase::kLoop);
  // The next step overwrites the step's tiles (a step that writes no
  // shared memory but the ring's needs no barrier here: see BarrierFirst).
  if (step_wrote_) Sync();
  step_barriers_ = syncs_ - syncs_before;
}

void TiledGenerator::EmitStepBounds() {
  // This block's steps: all of them, or its share of a split loop.
  e_.Linef("const ", e_.Index(), " steps = ", BlockCount(e_, b_.forloop), ";");
  // Under a causal mask, the steps past the last key this block's last
  // row sees hold only masked keys: they are skipped.
  const std::string causal_end = CausalStepEnd();
  if (!causal_end.empty()) e_.Linef("const ", e_.Index(), " causal_end = ", causal_end, ";");
  const std::string last = causal_end.empty() ? "steps" : "min(steps, causal_end)";
  const int split_axis = ugraph::SplitGridAxis(b_);
  if (split_axis >= 0) {
    const char* ix = e_.Index();
    e_.Linef("const ", ix, " share = (steps + ", b_.loop_split - 1, ") / ", b_.loop_split, ";");
    e_.Linef("const ", ix, " step_begin = min(steps, (", ix, ")", BlockIndex(split_axis), " * share);");
    e_.Linef("const ", ix, " step_end = min(", last, ", step_begin + share);");
  } else {
    e_.Linef("const ", e_.Index(), " step_begin = 0, step_end = ", last, ";");
  }
}

}  // namespace tiled_internal

using tiled_internal::TiledGenerator;
using ugraph::BlockGraph;
using ugraph::TileInfo;

absl::StatusOr<TiledKernel> GenerateTiled(Emitter& e, const BlockGraph& block) {
  absl::StatusOr<std::vector<TileInfo>> tiles = ugraph::AnalyzeTiles(block);
  if (!tiles.ok()) return tiles.status();
  TiledGenerator generator(e, block, *std::move(tiles));
  if (absl::Status s = generator.Generate(); !s.ok()) return s;
  TiledKernel out;
  out.shared_bytes = generator.shared_bytes();
  out.workspace_bytes_per_point = ugraph::SplitWorkspaceBytesPerPoint(block);
  out.inflight_bytes = generator.inflight_bytes();
  out.matmul_path = generator.matmul_path();
  out.op_paths = generator.op_paths();
  out.step_barriers = generator.step_barriers();
  out.mma_warps = generator.mma_warps();
  out.step_threads = generator.step_threads();
  out.flash_groups = generator.flash_groups();
  out.flash_groups_share_columns = generator.flash_groups() > 1 && generator.flash_cols_split();
  out.split_together = generator.split_together();
  out.split_cluster = generator.split_cluster();
  out.inputs_before_wait = generator.ring_before_wait();
  // As many as shared memory and the registers the kernel needs (an
  // estimate: a cap below that would spill) allow, up to 1024 threads.
  out.min_blocks = tiled_internal::BlocksPerSm(block.threads, out.shared_bytes, generator.registers());
  return out;
}

}  // namespace kiln::codegen
