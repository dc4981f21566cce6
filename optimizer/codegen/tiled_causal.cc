// Causal attention's tiles in the tiled code generator (TiledGenerator):
// the masked stable exp whose rows end a block's loop early, the step
// there (CausalStepEnd), and the launch order that takes the longest tiles
// first (CausalOrder: the blocks' indices along the launch dims, vb0..vb2,
// with the causal rows' grid axis slowest).
#include <string>

#include "absl/strings/str_cat.h"
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

int TiledGenerator::CausalExp() const {
  int masked = -1;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kStableExp || !op.mask.on()) continue;
    if (masked >= 0 || !ugraph::IsRunningMax(b_, tiles_, static_cast<int>(i))) return -1;
    masked = static_cast<int>(i);
  }
  if (masked < 0) return -1;
  // Every sum over the loop must follow that max (its masked terms are 0).
  for (const TileOp& op : b_.tile_ops) {
    if (op.kind == TileOp::Kind::kAccumulate && op.rescale != masked) return -1;
  }
  return masked;
}

int TiledGenerator::CausalGridAxis() const {
  const int masked = CausalExp();
  if (masked < 0) return -1;
  const TileOp& exp = b_.tile_ops[masked];
  const TileAxis& rows = tiles_[exp.args[0]].axes[exp.mask.row];
  return rows.source == Source::kGrid ? rows.grid_axis : -1;
}

bool TiledGenerator::CausalOrder() const {
  const int causal = CausalGridAxis();
  for (int g = causal + 1; causal >= 0 && g < 3; ++g) {
    if (b_.grid[g].extent.rank() > 0) return true;
  }
  return false;
}

void TiledGenerator::DeclareBlockIndices() {
  if (!CausalOrder()) return;
  const int causal = CausalGridAxis();
  e_.Linef("// the blocks in launch order, grid axis ", causal, " (the causal rows') slowest: the longest tiles first");
  e_.Line("unsigned long long vb_rest = blockIdx.x + static_cast<unsigned long long>(gridDim.x) * "
          "(blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);");
  e_.Linef("const unsigned long long vb_others = static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z / ",
           kGridDim[causal], ";");
  e_.Linef("const unsigned vb", causal, " = static_cast<unsigned>(vb_rest / vb_others);");
  e_.Line("vb_rest %= vb_others;");
  const int last = causal == 2 ? 1 : 2;
  for (int g = 0; g <= last; ++g) {
    if (g == causal) continue;
    e_.Linef("const unsigned vb", g, " = static_cast<unsigned>(vb_rest % ", kGridDim[g], ");");
    if (g < last) e_.Linef("vb_rest /= ", kGridDim[g], ";");
  }
}

std::string TiledGenerator::BlockIndex(int g) const {
  return CausalOrder() ? absl::StrCat("vb", g) : kBlockIdx[g];
}

std::string TiledGenerator::CausalStepEnd() const {
  const int masked = CausalExp();
  if (masked < 0) return "";
  const TileOp& exp = b_.tile_ops[masked];
  const TileAxis& rows = tiles_[exp.args[0]].axes[exp.mask.row];
  std::string last_row;
  if (rows.source == Source::kGrid) {
    last_row = absl::StrCat("(s", rows.grid_axis, " + n", rows.grid_axis, " - 1)");
  } else if (rows.source == Source::kFull) {
    last_row = e_.IndexLiteral(rows.size - 1);
  } else {
    return "";
  }
  return absl::StrCat("max(", e_.IndexLiteral(0), ", ", last_row, " + ", MaskOffset(masked), " + ", b_.forloop.tile,
                      ") / ", b_.forloop.tile);
}

}  // namespace kiln::codegen::tiled_internal
