// The kernel's outputs stored from their tiles, or computed as they are
// stored (the last elementwise op where only an output reads it). Where
// the tile's innermost axis that varies is the output's contiguous one and
// holds whole 16-byte vectors, each thread stores a vector at a time: one
// 16-byte store where the vector is in range and aligned, else element by
// element. (On an H100, gqa_bs8's kernel stored its 16 rows of 64 f16 in
// 1480 cycles element by element and 780 by vectors, with the split
// partials by float4 below: 22.0 -> 21.4 us.)
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

int TiledGenerator::StoreInner(const ugraph::OutputSaver& o) const {
  const ugraph::DTensor& tensor = e_.graph().tensors[o.tensor];
  const std::vector<int64_t> sizes = Sizes(tiles_[o.value]);
  int inner = static_cast<int>(sizes.size()) - 1;
  while (inner >= 0 && sizes[inner] == 1) --inner;
  if (inner < 0 || static_cast<int>(sizes.size()) != tensor.shape.rank()) return -1;
  const int width = StoreWidth(tensor.dtype);
  if (width == 1 || sizes[inner] % width != 0 || !ShareAligned(tiles_[o.value], width)) return -1;
  // At least half the threads a vector: with fewer, the threads that store
  // take all of a vector's values in a chain where many threads took one
  // each (on an H100, gqa_bs1's 4-row shares of 64 f16, a vector for a
  // quarter of the threads: 9.82 -> 9.94 us; rmsnorm_linear_bs8's 16 rows
  // of 64, one for half: 18.95 -> 18.85).
  if (2 * ShareElements(tiles_[o.value]) < b_.threads * width) return -1;
  // Unit stride: the last axis of a row-major tensor, or a literal 1.
  const bool unit = tensor.strides.empty() ? inner == tensor.shape.rank() - 1 : tensor.strides[inner] == 1;
  return unit ? inner : -1;
}

int TiledGenerator::StoreWidth(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      return 8;
    case DType::kF32:
      return 4;
    default:
      return 1;
  }
}

void TiledGenerator::EmitStores() {
  for (const ugraph::OutputSaver& o : b_.outputs) {
    if (FragmentOutput(o.value)) continue;  // stored from the fragments
    const TileInfo& t = tiles_[o.value];
    const TileOp& op = b_.tile_ops[o.value];
    const ugraph::DTensor& tensor = e_.graph().tensors[o.tensor];
    const bool constant = op.kind == TileOp::Kind::kConstant, computed = computed_by_store_[o.value];
    const int inner = StoreInner(o);
    const int width = inner < 0 ? 1 : StoreWidth(tensor.dtype);
    // By vectors, a thread reads elements other threads wrote linearly.
    if (computed) {
      if (width == 1) {
        ReadOperands(o.value, ShareSpread(t));
      } else {
        for (int a : op.args) {
          if (b_.tile_ops[a].kind != TileOp::Kind::kConstant) Read(a, Spread::kOther);
        }
      }
      e_.Linef("// t", o.tensor, " <- x", o.value, " = ", ugraph::TileOpText(op), ", computed as it is stored");
    } else {
      if (!constant) Read(o.value, width == 1 ? ShareSpread(t) : Spread::kOther);
      e_.Linef("// t", o.tensor, " <- x", o.value);
    }
    const std::vector<int64_t> sizes = Sizes(t);
    OpenShareLinear(t, width);  // every element but in a split loop's share (SplitShare)
    const std::vector<std::string> coords = Unravel(sizes, RowMajorOrder(sizes.size()), "l");
    // The value at `element` (coordinates), linear index `at` in the tile.
    const auto value = [&](const std::vector<std::string>& element, const std::string& at) {
      return computed ? ElementwiseValue(o.value, element, at)
             : constant ? Literal(op.value, DType::kF32)
                        : absl::StrCat(Buffer(o.value), "[", at, "]");
    };
    std::vector<std::string> at(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) at[d] = Global(t.axes[d], coords[d]);
    std::string in_range = InRange(t, coords, inner);
    if (const std::string keeps = ShareKeeps(t, coords); !keeps.empty()) {
      in_range = in_range.empty() ? keeps : absl::StrCat(keeps, " && ", in_range);
    }
    const std::string slot = absl::StrCat("p.t[", e_.Slot(o.tensor), "]"), type = DTypeSuffix(tensor.dtype);
    if (inner < 0) {
      e_.Linef(in_range.empty() ? "" : absl::StrCat("if (", in_range, ") "), "store_", type, "(", slot, ", ",
               e_.TensorOffset(o.tensor, at), ", ", value(coords, "l"), ");");
      e_.Close();
      continue;
    }
    // A vector along the inner axis: the other coordinates are its first
    // element's.
    if (!in_range.empty()) e_.Open(absl::StrCat("if (", in_range, ")"));
    const std::string off = e_.Fresh("off");
    e_.Linef("const ", e_.Index(), " ", off, " = ", e_.TensorOffset(o.tensor, at), ";");
    std::vector<std::string> element = coords;
    element[inner] = absl::StrCat("(", coords[inner], " + j)");
    e_.Linef("float v[", width, "];");
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < ", width, "; ++j) v[j] = ", value(element, "(l + j)"), ";");
    const TileAxis& axis = t.axes[inner];
    const bool cut = axis.source == TileAxis::Source::kGrid || axis.source == TileAxis::Source::kLoop;
    const std::string whole = cut ? absl::StrCat(coords[inner], " + ", width, " <= ", Length(axis), " && ") : "";
    e_.Linef("if (", whole, "aligned16(", slot, ", ", off, ", ", DTypeSize(tensor.dtype), ")) store16_", type, "(",
             slot, ", ", off, ", v);");
    e_.Open("else");
    e_.Line("#pragma unroll");
    const std::string keep = cut ? absl::StrCat("if (", element[inner], " < ", Length(axis), ") ") : "";
    e_.Linef("for (int j = 0; j < ", width, "; ++j) ", keep, "store_", type, "(", slot, ", ", off, " + j, v[j]);");
    e_.Close();
    if (!in_range.empty()) e_.Close();
    e_.Close();
  }
}

}  // namespace kiln::codegen::tiled_internal
