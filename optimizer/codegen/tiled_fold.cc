// Row folds of graph-defined blocks (TiledGenerator): each row of a tile
// (every coordinate but the folded axis) summed or maxed along that axis,
// by a thread, a warp (long rows: FoldsByWarp) or, for a ring fold of few
// outputs, a warp's lanes in groups whose parts shuffles add
// (FoldOutputsPerWarp). A ring fold reads its chain's elements from the
// ring (PlanRingFolds), and its last writer may be its epilogue's op; one
// down a matrix's columns reads whole ring vectors (EmitColumnFold).
// EmitReduce is the sum's; the stable exp's max opens the same fold.
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

std::string TiledGenerator::FoldCoord(int x, int axis, int d) const {
  const std::vector<int64_t> in = Sizes(tiles_[x]);
  if (in[d] == 1) return "0";
  if (d == axis) return "j";
  const int64_t inner = Product(in, axis + 1, in.size());
  if (d < axis) return absl::StrCat("(o / ", inner * Product(in, d + 1, axis), " % ", in[d], ")");
  return absl::StrCat("(o % ", inner, " / ", Product(in, d + 1, in.size()), " % ", in[d], ")");
}

void TiledGenerator::OpenRowFold(int x, int axis, bool max, const std::string& keeps) {
  const std::vector<int64_t> in = Sizes(tiles_[x]);
  const int64_t size = in[axis];
  const int64_t inner = Product(in, axis + 1, in.size());
  const int64_t rows = tiles_[x].elements() / size;
  const std::string length = Length(tiles_[x].axes[axis]);
  // Row o = (outer, inner) reads (outer, j, inner); a ring fold's chain
  // reads its ring tile's element there (the chain's tile is its shape).
  const int ring = ring_chain_[x];
  const std::string element =
      ring >= 0   ? ChainValue(x, "e")
      : inner == 1 ? absl::StrCat(Buffer(x), "[o * ", size, " + j]")
                   : absl::StrCat(Buffer(x), "[(o / ", inner, " * ", size, " + j) * ", inner, " + o % ", inner, "]");
  std::string fold = absl::StrCat(keeps.empty() ? "" : absl::StrCat("if (", keeps, ") "),
                                  max ? absl::StrCat("v = fmaxf(v, ", element, ");")
                                      : absl::StrCat("v += ", element, ";"));
  if (ring >= 0) {
    const std::string row = FoldCoord(x, axis, in.size() - 2), col = FoldCoord(x, axis, in.size() - 1);
    fold = absl::StrCat("{ const float e = ", RingElement(ring, "stage", row, col), "; ", fold, " }");
  }
  const bool warp = FoldsByWarp(x, axis);
  if (const int64_t g = max || !keeps.empty() ? 0 : FoldOutputsPerWarp(x, axis); g > 0) {
    // Lanes l and l + g, l + 2g, ... take every (32 / g)-th element of
    // output o (neighbouring rows of the ring: different banks); warp w
    // takes outputs g w to g w + g - 1, and its lanes add their parts.
    const int64_t parts = 32 / g;
    e_.Open(absl::StrCat("for (int ob = threadIdx.x / 32 * ", g, "; ob < ", rows, "; ob += ", b_.threads / parts,
                         ")"));
    e_.Linef("const int o = ob + threadIdx.x % ", g, ", part = threadIdx.x % 32 / ", g, ";");
    e_.Line("float v = 0.0f;");
    e_.Linef("if (o < ", rows, ") for (int j = part; j < ", length, "; j += ", parts, ") ", fold);
    e_.Linef("for (int s = ", g, "; s < 32; s *= 2) v += __shfl_xor_sync(0xffffffffu, v, s);");
    e_.Open(absl::StrCat("if (part == 0 && o < ", rows, ")"));
    return;
  }
  e_.Open(warp ? absl::StrCat("for (int o = threadIdx.x / 32; o < ", rows, "; o += ", b_.threads / 32, ")")
               : absl::StrCat("for (int o = threadIdx.x; o < ", rows, "; o += ", b_.threads, ")"));
  e_.Linef("float v = ", max ? "no_shift()" : "0.0f", ";");
  if (warp) {
    e_.Linef("for (int j = threadIdx.x % 32; j < ", length, "; j += 32) ", fold);
    e_.Linef("v = warp_reduce<", max ? "true" : "false", ">(v);");
    e_.Open("if (threadIdx.x % 32 == 0)");
  } else {
    e_.Linef("for (int j = 0; j < ", length, "; ++j) ", fold);
    e_.Open("");
  }
}

void TiledGenerator::CloseRowFold() {
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitReduce(int i) {
  if (i == flash_.sum) return;  // EmitFlashStep sums the row
  if (register_sum_[i] >= 0) return EmitRegisterSum(i);
  const TileOp& op = b_.tile_ops[i];
  const int x = op.args[0];
  // Summed into an accumulator (fused_into_), or into its own tile, or
  // into its epilogue's last tile.
  const int end = epilogue_end_[i];
  const int target = fused_into_[i] >= 0 ? fused_into_[i] : end >= 0 ? end : i;
  std::string what = fused_into_[i] >= 0 ? absl::StrCat(", added to x", target) : "";
  for (size_t e = 0; e < b_.tile_ops.size(); ++e) {
    if (epilogue_of_[e] == i) absl::StrAppend(&what, ", x", e, " = ", ugraph::TileOpText(b_.tile_ops[e]));
  }
  // A warp per output (or its lanes' parts) writes it from one lane, not
  // from thread l.
  const int64_t lanes = FoldOutputsPerWarp(x, op.axis);
  const bool columns = ColumnFoldLanes(x, op.axis) > 0;
  const bool linear = !FoldsByWarp(x, op.axis) && lanes == 0 && !columns;
  const Spread spread = linear ? Spread::kLinear : Spread::kOther;
  Read(x, Spread::kOther);
  Read(target, spread);
  if (columns) {
    EmitColumnFold(i, target, what);
    Wrote(target, Spread::kOther);
    return;
  }
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), what,
           linear ? "" : lanes > 0 ? absl::StrCat(": ", 32 / lanes, " lanes per output") : ": a warp per output");
  OpenRowFold(x, op.axis, /*max=*/false);
  e_.Linef(Buffer(target), "[o] ", fused_into_[i] >= 0 ? "+=" : "=", " ",
           end >= 0 ? ChainValue(end, "v", i) : Scaled(i, "v"), ";");
  CloseRowFold();
  Wrote(target, spread);
}

int64_t TiledGenerator::ColumnFoldLanes(int x, int axis) const {
  const int source = ring_chain_[x];
  if (source < 0) return 0;
  const InputPlan& in = inputs_[source];
  const std::vector<int64_t> sizes = Sizes(tiles_[x]);
  const int rank = static_cast<int>(sizes.size());
  if (axis != rank - 2 || in.width < 2 || in.vector_axis != rank - 1 || !IsMatrix(x)) return 0;
  const int64_t per_row = in.row_vectors(), warps = b_.threads / 32;
  if (warps == 0 || per_row * in.width != sizes[rank - 1] || per_row % warps != 0) return 0;
  const int64_t per_warp = per_row / warps;
  if (32 % per_warp != 0) return 0;
  const int64_t lanes = 32 / per_warp;
  return lanes >= in.width ? lanes : 0;
}

void TiledGenerator::EmitColumnFold(int i, int target, const std::string& what) {
  const TileOp& op = b_.tile_ops[i];
  const int x = op.args[0], source = ring_chain_[x];
  const InputPlan& in = inputs_[source];
  const int64_t lanes = ColumnFoldLanes(x, op.axis), width = in.width;
  const int64_t per_warp = in.row_vectors() / (b_.threads / 32);
  const int64_t most_rows = Sizes(tiles_[x])[op.axis];
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), what, ": ", per_warp, " vector column", per_warp > 1 ? "s" : "",
           " a warp, ", lanes, " lanes each (a lane's rows ", lanes, " apart), then halving shuffles");
  e_.Open("");
  e_.Linef("const int lane = threadIdx.x % 32, part = lane % ", lanes, ";");
  e_.Linef("const int vc = threadIdx.x / 32 * ", per_warp, " + lane / ", lanes, ";  // the lanes' vector column");
  e_.Linef("float s[", width, "] = {};");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int k = 0; k < ", (most_rows + lanes - 1) / lanes, "; ++k)"));
  e_.Linef("const int r = part + k * ", lanes, ";");
  e_.Open(absl::StrCat("if (r < ", Length(tiles_[x].axes[op.axis]), ")"));
  e_.Linef("const uint4 w = ", RingSlot(source, "stage", absl::StrCat("r * ", in.row_vectors(), " + vc")), ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", width, "; ++j)"));
  e_.Linef("const float e = bits_to_", DTypeSuffix(in.dtype), "(vector_bits(w, j, ", DTypeSize(in.dtype), "));");
  e_.Linef("s[j] += ", ChainValue(x, "e"), ";");
  e_.Close();
  e_.Close();
  e_.Close();
  // Halving: across lane bit m, the lane with the bit set keeps the upper
  // half of its n sums and passes the lower to its partner, which keeps
  // the lower: after log2(width) rounds a lane holds one column's sum.
  std::string column = "0";
  for (int64_t n = width, m = 1; n > 1; n /= 2, m *= 2) {
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int j = 0; j < ", n / 2, "; ++j)"));
    e_.Linef("const bool up = lane & ", m, ";");
    e_.Linef("const float send = up ? s[j] : s[j + ", n / 2, "];");
    e_.Linef("s[j] = (up ? s[j + ", n / 2, "] : s[j]) + __shfl_xor_sync(0xffffffffu, send, ", m, ");");
    e_.Close();
    absl::StrAppend(&column, " + (part & ", m, " ? ", n / 2, " : 0)");
  }
  if (width < lanes) {
    e_.Linef("for (int m = ", width, "; m < ", lanes, "; m *= 2) s[0] += __shfl_xor_sync(0xffffffffu, s[0], m);");
  }
  const int end = epilogue_end_[i];
  e_.Open(absl::StrCat("if (part < ", width, ")"));
  e_.Line("const float v = s[0];");
  e_.Linef(Buffer(target), "[vc * ", width, " + ", column, "] ", fused_into_[i] >= 0 ? "+=" : "=", " ",
           end >= 0 ? ChainValue(end, "v", i) : Scaled(i, "v"), ";");
  e_.Close();
  e_.Close();
}

}  // namespace kiln::codegen::tiled_internal
