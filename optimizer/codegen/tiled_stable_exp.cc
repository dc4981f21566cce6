// Stabilized exponentials of graph-defined blocks (TileOp::kStableExp): the
// online softmax. Each row of the tile (every coordinate but the op's axis)
// keeps a shift in shared memory (`shift<i>`): the max of its in-range
// elements, or along the loop axis the running max over the steps so far.
// A step
//   1. takes each row's max (a warp per row, or a thread per short row),
//      moves the shift to max(shift, row max) and, for a running max, keeps
//      the factor exp(before - after) (`rescale<i>`);
//   2. writes exp(x - shift) over the tile;
//   3. multiplies the accumulators that follow this op (TileOp::rescale)
//      by their row's factor, before anything adds this step's values (a
//      tensor-core or register product's sums in registers, where they are
//      kept across the loop: EmitRegisterRescale).
// A row with no finite element yet keeps -inf: its exponentials are
// exp(x) (0 for masked scores) and its factor 1 (tiles/math.cuh).
// A causal mask (TileOp::mask) leaves its masked elements out of the max
// and writes 0 for them.
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

TileInfo TiledGenerator::ShiftRowTile(int i) const { return ugraph::ShiftRowTile(b_, tiles_, i); }

std::string TiledGenerator::RowOf(int i, const TileInfo& t, const std::vector<std::string>& coords) const {
  const std::vector<int64_t> rows = Sizes(ShiftRowTile(i));
  const size_t lead = t.axes.size() - rows.size();
  std::vector<std::string> at(rows.size());
  for (size_t d = 0; d < rows.size(); ++d) at[d] = rows[d] == 1 ? "0" : coords[d + lead];
  return RowMajor(rows, at);
}

void TiledGenerator::PlanShifts() {
  const size_t n = b_.tile_ops.size();
  shift_offsets_.assign(n, -1);
  rescale_offsets_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (b_.tile_ops[i].kind != TileOp::Kind::kStableExp) continue;
    const int64_t rows = ShiftRowTile(static_cast<int>(i)).padded_floats();
    shift_offsets_[i] = buffers_;
    buffers_ += rows;
    if (!ugraph::IsRunningMax(b_, tiles_, static_cast<int>(i))) continue;
    rescale_offsets_[i] = buffers_;
    buffers_ += rows;
  }
}

void TiledGenerator::DeclareShifts() {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (shift_offsets_[i] >= 0) e_.Linef("float* const shift", i, " = smem + ", shift_offsets_[i], ";");
    if (rescale_offsets_[i] >= 0) e_.Linef("float* const rescale", i, " = smem + ", rescale_offsets_[i], ";");
  }
}

void TiledGenerator::EmitShiftReset() {
  bool any = false;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (rescale_offsets_[i] < 0) continue;
    e_.Linef("// x", i, "'s running max: none yet");
    OpenLinear(ShiftRowTile(static_cast<int>(i)).elements());
    e_.Linef("shift", i, "[l] = no_shift();");
    e_.Close();
    any = true;
  }
  if (any) Sync();  // other threads update the rows
}

void TiledGenerator::EmitStableExp(int i) {
  const TileOp& op = b_.tile_ops[i];
  const int x = op.args[0];
  const bool running = rescale_offsets_[i] >= 0;
  Read(x, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ": ", running ? "running max" : "row max", " per row of ",
           ShiftRowTile(i).elements());
  const ugraph::CausalMask& mask = op.mask;
  OpenRowFold(x, op.axis, /*max=*/true,
              mask.on() ? MaskKeeps(i, FoldCoord(x, op.axis, mask.row), FoldCoord(x, op.axis, mask.col)) : "");
  if (running) {
    e_.Linef("const float before = shift", i, "[o], after = fmaxf(before, v);");
    e_.Linef("rescale", i, "[o] = shift_rescale(before, after);");
    e_.Linef("shift", i, "[o] = after;");
  } else {
    e_.Linef("shift", i, "[o] = v;");
  }
  CloseRowFold();
  Sync();
  // 2: the exponentials, against each row's shift.
  Read(i, Spread::kLinear);
  const std::vector<int64_t> sizes = Sizes(tiles_[i]);
  OpenLinear(tiles_[i].elements());
  const std::vector<std::string> coords = Unravel(sizes, RowMajorOrder(sizes.size()), "l");
  const std::string exp =
      absl::StrCat("stable_exp(", Buffer(x), "[l], shift", i, "[", RowOf(i, tiles_[i], coords), "])");
  e_.Linef(Buffer(i), "[l] = ",
           mask.on() ? absl::StrCat(MaskKeeps(i, coords[mask.row], coords[mask.col]), " ? ", exp, " : 0.0f") : exp,
           ";");
  e_.Close();
  Wrote(i, Spread::kLinear);
  if (!running) return;
  // 3: the accumulators that follow this running max.
  for (size_t a = 0; a < b_.tile_ops.size(); ++a) {
    if (b_.tile_ops[a].kind != TileOp::Kind::kAccumulate || b_.tile_ops[a].rescale != i) continue;
    const int acc = static_cast<int>(a), from = fused_from_[acc];
    if (from >= 0 && b_.tile_ops[from].kind == TileOp::Kind::kMatmul && matmuls_[from].direct) {
      EmitRegisterRescale(from, i);  // its buffer stays 0 until the flush after the loop
      continue;
    }
    Read(acc, Spread::kLinear);
    e_.Linef("// x", acc, " follows x", i, "'s running max");
    const std::vector<int64_t> acc_sizes = Sizes(tiles_[acc]);
    OpenLinear(tiles_[acc].elements());
    const std::vector<std::string> at = Unravel(acc_sizes, RowMajorOrder(acc_sizes.size()), "l");
    e_.Linef(Buffer(acc), "[l] *= rescale", i, "[", RowOf(i, tiles_[acc], at), "];");
    e_.Close();
    Wrote(acc, Spread::kLinear);
  }
}

std::string TiledGenerator::MaskOffset(int i) const {
  const TileOp& op = b_.tile_ops[i];
  const TileInfo& t = tiles_[op.args[0]];
  const Dim offset = t.axes[op.mask.col].extent - t.axes[op.mask.row].extent + op.mask.shift;
  return e_.DimExpr(offset);
}

std::string TiledGenerator::MaskKeeps(int i, const std::string& row, const std::string& col) const {
  const TileOp& op = b_.tile_ops[i];
  if (!op.mask.on()) return "";
  const TileInfo& t = tiles_[op.args[0]];
  return absl::StrCat("(", Global(t.axes[op.mask.row], row), " + ", MaskOffset(i), " >= ",
                      Global(t.axes[op.mask.col], col), ")");
}

}  // namespace kiln::codegen::tiled_internal
