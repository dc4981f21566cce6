// Row folds of graph-defined blocks (TiledGenerator): each row of a tile
// (every coordinate but the folded axis) summed or maxed along that axis,
// by a thread, a warp (long rows: FoldsByWarp) or, for a ring fold of few
// outputs, a warp's lanes in groups whose parts shuffles add
// (FoldOutputsPerWarp). A ring fold reads its chain's elements from the
// ring (PlanRingFolds), and its last writer may be its epilogue's op.
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
  const bool linear = !FoldsByWarp(x, op.axis) && lanes == 0;
  Read(x, false);
  Read(target, linear);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), what,
           linear ? "" : lanes > 0 ? absl::StrCat(": ", 32 / lanes, " lanes per output") : ": a warp per output");
  OpenRowFold(x, op.axis, /*max=*/false);
  e_.Linef(Buffer(target), "[o] ", fused_into_[i] >= 0 ? "+=" : "=", " ",
           end >= 0 ? ChainValue(end, "v", i) : Scaled(i, "v"), ";");
  CloseRowFold();
  Wrote(target, linear);
}

}  // namespace kiln::codegen::tiled_internal
