#include "optimizer/tile_analysis.h"

#include "absl/strings/str_cat.h"
#include "tensor/op.h"

namespace kiln::ugraph {
namespace {

absl::Status Bad(size_t op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tile op x", op, ": ", what));
}

// The dtypes a product (kMatmul, kRowMatmul) rounds its operands to.
absl::Status CheckProductDtype(size_t op, DType dtype) {
  if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16) return absl::OkStatus();
  return Bad(op, "product dtype must be f32, f16 or bf16");
}

absl::StatusOr<TileInfo> InputTile(const BlockGraph& block, int input) {
  if (input < 0 || input >= static_cast<int>(block.inputs.size())) {
    return absl::InvalidArgumentError(absl::StrCat("reads missing input #", input));
  }
  const InputIterator& it = block.inputs[input];
  const Shape& shape = it.view.shape;
  TileInfo info;
  info.axes.resize(shape.rank());
  auto mapped = [&](int d) {
    return d == it.fmap || d == it.imap[0] || d == it.imap[1] || d == it.imap[2];
  };
  for (int d = 0; d < shape.rank(); ++d) {
    TileAxis& axis = info.axes[d];
    axis.extent = shape[d];
    if (mapped(d)) continue;  // set below
    if (shape[d] == Dim(1)) {
      axis.source = TileAxis::Source::kOne;
    } else {
      axis.source = TileAxis::Source::kFull;
      if (!shape[d].is_concrete()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input #", input, " dim ", d, " has symbolic size ", shape[d].ToString(),
                         " but is read whole (map it to the grid or the loop)"));
      }
      axis.size = shape[d].value();
    }
  }
  for (int g = 0; g < 3; ++g) {
    const int d = it.imap[g];
    if (d < 0) continue;
    if (d >= shape.rank()) return absl::InvalidArgumentError(absl::StrCat("imap names dim ", d));
    if (block.grid[g].extent.rank() != 1 || !(block.grid[g].extent[0] == shape[d])) {
      return absl::InvalidArgumentError(absl::StrCat("input #", input, " dim ", d, " (", shape[d].ToString(),
                                                     ") is not the extent of grid axis ", g));
    }
    info.axes[d] = {TileAxis::Source::kGrid, g, shape[d], block.grid[g].tile};
  }
  if (it.fmap >= 0) {
    const int d = it.fmap;
    if (d >= shape.rank()) return absl::InvalidArgumentError(absl::StrCat("fmap names dim ", d));
    if (block.forloop.extent.rank() != 1 || !(block.forloop.extent[0] == shape[d])) {
      return absl::InvalidArgumentError(
          absl::StrCat("input #", input, " dim ", d, " is not the for-loop's extent"));
    }
    info.axes[d] = {TileAxis::Source::kLoop, -1, shape[d], block.forloop.tile};
    info.in_loop = true;
  }
  return info;
}

}  // namespace

bool AxesBroadcast(const TileAxis& a, const TileAxis& b) {
  return a == b || a.source == TileAxis::Source::kOne || b.source == TileAxis::Source::kOne;
}

absl::StatusOr<std::vector<TileInfo>> AnalyzeTiles(const BlockGraph& block) {
  std::vector<TileInfo> tiles;
  tiles.reserve(block.tile_ops.size());
  for (size_t i = 0; i < block.tile_ops.size(); ++i) {
    const TileOp& op = block.tile_ops[i];
    for (int a : op.args) {
      if (a < 0 || a >= static_cast<int>(i)) return Bad(i, absl::StrCat("uses x", a, " before it exists"));
    }
    auto arg = [&](size_t k) -> const TileInfo& { return tiles[op.args[k]]; };
    auto want_args = [&](size_t n) -> absl::Status {
      return op.args.size() == n ? absl::OkStatus() : Bad(i, absl::StrCat("takes ", n, " operands"));
    };
    TileInfo info;
    if (op.rescale >= 0 && op.kind != TileOp::Kind::kAccumulate) return Bad(i, "only accumulators are rescaled");
    if (op.mask.on() && op.kind != TileOp::Kind::kStableExp) return Bad(i, "only stable exps are masked");
    switch (op.kind) {
      case TileOp::Kind::kInput: {
        if (absl::Status s = want_args(0); !s.ok()) return s;
        auto in = InputTile(block, op.input);
        if (!in.ok()) return Bad(i, in.status().message());
        info = *std::move(in);
        break;
      }
      case TileOp::Kind::kConstant:
        if (absl::Status s = want_args(0); !s.ok()) return s;
        break;
      case TileOp::Kind::kUnary:
        if (absl::Status s = want_args(1); !s.ok()) return s;
        if (!IsUnary(op.op)) return Bad(i, "not a unary elementwise op");
        info = arg(0);
        break;
      case TileOp::Kind::kBinary: {
        if (absl::Status s = want_args(2); !s.ok()) return s;
        if (!IsArithmetic(op.op)) return Bad(i, "not a binary arithmetic op");
        const TileInfo& a = arg(0);
        const TileInfo& b = arg(1);
        const size_t rank = std::max(a.axes.size(), b.axes.size());
        info.axes.resize(rank);
        for (size_t d = 0; d < rank; ++d) {
          const TileAxis* x = d + a.axes.size() >= rank ? &a.axes[d + a.axes.size() - rank] : nullptr;
          const TileAxis* y = d + b.axes.size() >= rank ? &b.axes[d + b.axes.size() - rank] : nullptr;
          if (x && y && !AxesBroadcast(*x, *y)) return Bad(i, absl::StrCat("axis ", d, " of the operands differ"));
          if (!x) info.axes[d] = *y;
          else if (!y) info.axes[d] = *x;
          else info.axes[d] = x->source == TileAxis::Source::kOne ? *y : *x;
        }
        info.in_loop = a.in_loop || b.in_loop;
        break;
      }
      case TileOp::Kind::kMatmul: {
        if (absl::Status s = want_args(2); !s.ok()) return s;
        const TileInfo& a = arg(0);
        const TileInfo& b = arg(1);
        if (a.axes.size() < 2 || a.axes.size() != b.axes.size()) return Bad(i, "operand ranks");
        const size_t r = a.axes.size();
        if (!(a.axes[r - 1] == b.axes[r - 2])) return Bad(i, "the contracted axes differ");
        for (size_t d = 0; d + 2 < r; ++d) {
          if (!(a.axes[d] == b.axes[d])) return Bad(i, absl::StrCat("batch axis ", d, " differs"));
        }
        if (absl::Status s = CheckProductDtype(i, op.dtype); !s.ok()) return s;
        info.axes = a.axes;
        info.axes[r - 1] = b.axes[r - 1];
        info.in_loop = a.in_loop || b.in_loop;
        break;
      }
      case TileOp::Kind::kRowMatmul: {
        if (absl::Status s = want_args(2); !s.ok()) return s;
        const TileInfo& a = arg(0);
        const TileInfo& w = arg(1);
        if (block.tile_ops[op.args[1]].kind != TileOp::Kind::kInput) return Bad(i, "the rows' matrices are an input");
        if (a.axes.size() != 2 || w.axes.size() != 3) return Bad(i, "operand ranks (rows [r, k], matrices [r, k, n])");
        if (!(a.axes[0] == w.axes[0])) return Bad(i, "the rows and their matrices differ in r");
        if (!(a.axes[1] == w.axes[1])) return Bad(i, "the contracted axes differ");
        if (a.in_loop || w.in_loop) return Bad(i, "a row product inside the loop");
        if (absl::Status s = CheckProductDtype(i, op.dtype); !s.ok()) return s;
        info.axes = {a.axes[0], TileAxis(), w.axes[2]};  // [r, 1, n]: a product of one row per batch
        break;
      }
      case TileOp::Kind::kReduceSum: {
        if (absl::Status s = want_args(1); !s.ok()) return s;
        info = arg(0);
        if (op.axis < 0 || op.axis >= static_cast<int>(info.axes.size())) return Bad(i, "reduce axis");
        info.axes[op.axis] = TileAxis();
        break;
      }
      case TileOp::Kind::kAccumulate: {
        if (absl::Status s = want_args(1); !s.ok()) return s;
        if (!arg(0).in_loop) return Bad(i, "accumulates a tile computed outside the loop");
        info = arg(0);
        for (const TileAxis& a : info.axes) {
          // A loop axis must be contracted (matmul) or reduced first.
          if (a.source == TileAxis::Source::kLoop) return Bad(i, "accumulates a tile with a loop axis");
        }
        info.in_loop = false;
        if (op.rescale >= 0) {
          if (op.rescale >= static_cast<int>(i) || block.tile_ops[op.rescale].kind != TileOp::Kind::kStableExp) {
            return Bad(i, absl::StrCat("is rescaled by x", op.rescale, ", not an earlier stable exp"));
          }
          if (!IsRunningMax(block, tiles, op.rescale)) {
            return Bad(i, absl::StrCat("is rescaled by x", op.rescale, ", whose max does not run along the loop"));
          }
          const TileInfo rows = ShiftRowTile(block, tiles, op.rescale);
          if (rows.axes.size() > info.axes.size()) return Bad(i, "has fewer axes than the rows it is rescaled by");
          const size_t lead = info.axes.size() - rows.axes.size();
          for (size_t d = 0; d < rows.axes.size(); ++d) {
            if (!AxesBroadcast(rows.axes[d], info.axes[d + lead])) {
              return Bad(i, absl::StrCat("axis ", d + lead, " does not meet the rows of x", op.rescale));
            }
          }
        }
        break;
      }
      case TileOp::Kind::kStableExp: {
        if (absl::Status s = want_args(1); !s.ok()) return s;
        info = arg(0);
        if (op.axis < 0 || op.axis >= static_cast<int>(info.axes.size())) return Bad(i, "stable exp axis");
        const TileAxis::Source source = info.axes[op.axis].source;
        if (source != TileAxis::Source::kLoop && source != TileAxis::Source::kFull) {
          return Bad(i, "a stable exp's max runs along the loop axis or an axis read whole");
        }
        if (op.mask.on()) {
          const int rank = static_cast<int>(info.axes.size());
          const CausalMask& m = op.mask;
          if (m.row < 0 || m.row >= rank || m.col < 0 || m.col >= rank || m.row == m.col) {
            return Bad(i, "a causal mask's axes");
          }
          if (m.col != op.axis) return Bad(i, "a causal mask's keys are the axis of the stable exp's max");
          if (info.axes[m.row].source == TileAxis::Source::kOne) return Bad(i, "a causal mask's rows are one");
        }
        break;
      }
    }
    info.after_loop = op.kind == TileOp::Kind::kAccumulate;
    for (int a : op.args) info.after_loop |= op.kind != TileOp::Kind::kAccumulate && tiles[a].after_loop;
    if (info.in_loop && info.after_loop) return Bad(i, "reads a for-loop accumulator inside the loop");
    tiles.push_back(std::move(info));
  }
  return tiles;
}

int64_t AccumulatorFloats(const BlockGraph& block, const std::vector<TileInfo>& tiles) {
  int64_t floats = 0;
  for (size_t i = 0; i < block.tile_ops.size(); ++i) {
    if (block.tile_ops[i].kind == TileOp::Kind::kAccumulate) floats += tiles[i].padded_floats();
  }
  return floats;
}

TileInfo ShiftRowTile(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op) {
  TileInfo rows = tiles[op];
  rows.axes[block.tile_ops[op].axis] = TileAxis();
  return rows;
}

bool IsRunningMax(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op) {
  const TileOp& t = block.tile_ops[op];
  return t.kind == TileOp::Kind::kStableExp && tiles[t.args[0]].axes[t.axis].source == TileAxis::Source::kLoop;
}

int64_t RunningMaxOffset(const BlockGraph& block, const std::vector<TileInfo>& tiles, int op) {
  int64_t floats = AccumulatorFloats(block, tiles);
  for (int i = 0; i < op; ++i) {
    if (IsRunningMax(block, tiles, i)) floats += ShiftRowTile(block, tiles, i).padded_floats();
  }
  return floats;
}

int64_t SplitFloatsPerBlock(const BlockGraph& block, const std::vector<TileInfo>& tiles) {
  return RunningMaxOffset(block, tiles, static_cast<int>(block.tile_ops.size()));
}

int64_t SplitWorkspaceBytesPerPoint(const BlockGraph& block) {
  if (block.kind != BlockKind::kTiled || block.loop_split <= 1) return 0;
  absl::StatusOr<std::vector<TileInfo>> tiles = AnalyzeTiles(block);
  if (!tiles.ok()) return 0;
  return 4 * block.loop_split * SplitFloatsPerBlock(block, *tiles);
}

}  // namespace kiln::ugraph
