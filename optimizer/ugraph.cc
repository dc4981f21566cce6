#include "optimizer/ugraph.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::ugraph {
namespace {

std::string ViewText(const View& view) {
  std::string out = view.tensor >= 0 ? absl::StrCat("t", view.tensor)
                                     : absl::StrCat("coords", view.source_shape.ToString());
  for (const ViewStep& s : view.steps) {
    absl::StrAppend(&out, ".", ViewKindName(s.kind));
    if (s.kind == ViewStep::Kind::kPermute) absl::StrAppend(&out, "(", absl::StrJoin(s.perm, ","), ")");
    if (s.kind == ViewStep::Kind::kSlice) {
      std::vector<std::string> parts;
      for (const auto& r : s.ranges) parts.push_back(absl::StrCat(r.start.ToString(), ":", r.step));
      absl::StrAppend(&out, "(", absl::StrJoin(parts, ","), ")");
    }
    if (s.kind == ViewStep::Kind::kExpand || s.kind == ViewStep::Kind::kReshape) {
      absl::StrAppend(&out, s.shape.ToString());
    }
  }
  return out;
}

std::string LaunchText(const LaunchDim& d) {
  std::string extent;
  for (const Dim& x : d.extent) absl::StrAppend(&extent, extent.empty() ? "" : "*", x.ToString());
  if (extent.empty()) extent = "1";
  return d.tile == 1 ? extent : absl::StrCat("ceil(", extent, "/", d.tile, ")");
}

std::string MapText(const std::array<int, 3>& map) {
  std::vector<std::string> parts;
  static constexpr char kAxes[] = {'x', 'y', 'z'};
  for (int g = 0; g < 3; ++g) {
    if (map[g] >= 0) parts.push_back(absl::StrCat(std::string(1, kAxes[g]), "->", map[g]));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

void AppendThreadGraph(std::string* out, const ThreadGraph& g, absl::string_view indent) {
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const ScalarOp& op = g.ops[i];
    absl::StrAppend(out, indent, "v", i, " = ", ScalarKindName(op.kind));
    if (op.kind == ScalarOp::Kind::kUnary || op.kind == ScalarOp::Kind::kBinary) {
      absl::StrAppend(out, ".", OpName(op.op));
    }
    absl::StrAppend(out, " ", DTypeName(op.dtype));
    for (int a : op.args) absl::StrAppend(out, " v", a);
    switch (op.kind) {
      case ScalarOp::Kind::kLoad:
      case ScalarOp::Kind::kAccumulator:
        absl::StrAppend(out, " #", op.input);
        break;
      case ScalarOp::Kind::kGather:
        absl::StrAppend(out, " #", op.input, " at #", op.inputs.empty() ? -1 : op.inputs[0]);
        break;
      case ScalarOp::Kind::kDequant:
        absl::StrAppend(out, " ", QuantName(op.quant), " #", op.input, " at #", op.inputs.empty() ? -1 : op.inputs[0]);
        break;
      case ScalarOp::Kind::kSelect: {
        absl::StrAppend(out, " at #", op.inputs[0], ":");
        for (size_t p = 1; p < op.inputs.size(); ++p) {
          absl::StrAppend(out, " [", op.bounds[2 * p - 2].ToString(), ",", op.bounds[2 * p - 1].ToString(),
                          ")->#", op.inputs[p]);
        }
        break;
      }
      case ScalarOp::Kind::kConstant:
        absl::StrAppend(out, " ", op.value);
        break;
      case ScalarOp::Kind::kIota:
        absl::StrAppend(out, " #", op.input, " ", op.iota.ToString());
        break;
      case ScalarOp::Kind::kRandom:
        absl::StrAppend(out, " #", op.input, " ", op.random.ToString());
        break;
      default:
        break;
    }
    if (op.kind == ScalarOp::Kind::kGather || op.kind == ScalarOp::Kind::kSelect) {
      absl::StrAppend(out, " axis=", op.axis);
    }
    absl::StrAppend(out, "\n");
  }
}

}  // namespace

int SplitGridAxis(const BlockGraph& b) {
  if (b.loop_split <= 1) return -1;
  for (int g = 0; g < 3; ++g) {
    if (b.grid[g].extent.rank() == 0) return g;
  }
  return -1;
}

bool LaunchCoversAxis(const LaunchDim& d, int axis) {
  return d.extent.rank() == 1 && d.extent[0].is_concrete() &&
         (d.extent[0].value() + d.tile - 1) / d.tile <= kMaxLaunchBlocks[axis];
}

std::optional<KernelGraph> OnePointForm(const KernelGraph& graph) {
  KernelGraph out = graph;
  bool changed = false;
  for (Kernel& k : out.kernels) {
    BlockGraph& b = k.block;
    if (b.kind != BlockKind::kTiled || b.one_point_blocks) continue;
    for (int g = 0; g < 3 && !b.one_point_blocks; ++g) b.one_point_blocks = LaunchCoversAxis(b.grid[g], g);
    changed = changed || b.one_point_blocks;
  }
  if (!changed) return std::nullopt;
  return out;
}

int64_t NominalTiles(const LaunchDim& d) {
  return d.extent.rank() == 0 ? 1 : (d.extent[0].max_value() + d.tile - 1) / d.tile;
}

bool ReadsRowsAlongK(const View& v) {
  const int r = v.source_shape.rank();
  std::vector<int> from(r);
  for (int a = 0; a < r; ++a) from[a] = a;
  for (const ViewStep& step : v.steps) {
    if (step.kind != ViewStep::Kind::kPermute) return false;
    std::vector<int> next(r);
    for (int a = 0; a < r; ++a) next[a] = from[step.perm[a]];
    from = std::move(next);
  }
  return r >= 2 && from[r - 2] == r - 1 && from[r - 1] == r - 2;
}

bool DecodesQuantizedB(const BlockGraph& b) {
  if (b.kind != BlockKind::kMatmul || b.inputs.size() < 2) return false;
  switch (b.tiles.algorithm) {
    case MatmulAlgorithm::kSimt:
      return true;
    case MatmulAlgorithm::kTensorCore:
      return b.threads == 128;
    case MatmulAlgorithm::kWarpDot:
      return ReadsRowsAlongK(b.inputs[1].view);
  }
  return false;
}

int64_t LaunchedBlocks(const BlockGraph& b) {
  int64_t blocks = b.loop_split;
  for (const LaunchDim& d : b.grid) blocks *= NominalTiles(d);
  return blocks;
}

int64_t LaunchedBlocks(const KernelGraph& graph) {
  int64_t blocks = 0;
  for (const Kernel& k : graph.kernels) blocks += LaunchedBlocks(k.block);
  return blocks;
}

std::string BlockKindName(BlockKind kind) {
  switch (kind) {
    case BlockKind::kPointwise: return "pointwise";
    case BlockKind::kRowReduce: return "row_reduce";
    case BlockKind::kMatmul: return "matmul";
    case BlockKind::kTiled: return "tiled";
  }
  return "?";
}

std::string ScalarKindName(ScalarOp::Kind kind) {
  switch (kind) {
    case ScalarOp::Kind::kLoad: return "load";
    case ScalarOp::Kind::kConstant: return "const";
    case ScalarOp::Kind::kIota: return "iota";
    case ScalarOp::Kind::kRandom: return "random";
    case ScalarOp::Kind::kAccumulator: return "acc";
    case ScalarOp::Kind::kUnary: return "unary";
    case ScalarOp::Kind::kBinary: return "binary";
    case ScalarOp::Kind::kWhere: return "where";
    case ScalarOp::Kind::kCast: return "cast";
    case ScalarOp::Kind::kGather: return "gather";
    case ScalarOp::Kind::kSelect: return "select";
    case ScalarOp::Kind::kDequant: return "dequant";
  }
  return "?";
}

std::string MatmulAlgorithmName(MatmulAlgorithm algorithm) {
  switch (algorithm) {
    case MatmulAlgorithm::kSimt: return "simt";
    case MatmulAlgorithm::kTensorCore: return "mma";
    case MatmulAlgorithm::kWarpDot: return "warp_dot";
  }
  return "?";
}

std::string TileKindName(TileOp::Kind kind) {
  switch (kind) {
    case TileOp::Kind::kInput: return "input";
    case TileOp::Kind::kConstant: return "const";
    case TileOp::Kind::kMatmul: return "matmul";
    case TileOp::Kind::kUnary: return "unary";
    case TileOp::Kind::kBinary: return "binary";
    case TileOp::Kind::kReduceSum: return "reduce_sum";
    case TileOp::Kind::kAccumulate: return "accumulate";
    case TileOp::Kind::kStableExp: return "stable_exp";
    case TileOp::Kind::kRowMatmul: return "row_matmul";
  }
  return "?";
}

std::string TileOpText(const TileOp& op) {
  std::string out = TileKindName(op.kind);
  switch (op.kind) {
    case TileOp::Kind::kInput: absl::StrAppend(&out, " #", op.input); break;
    case TileOp::Kind::kConstant: absl::StrAppend(&out, " ", op.value); break;
    case TileOp::Kind::kUnary:
    case TileOp::Kind::kBinary: absl::StrAppend(&out, " ", OpName(op.op)); break;
    case TileOp::Kind::kMatmul:
    case TileOp::Kind::kRowMatmul: absl::StrAppend(&out, " ", DTypeName(op.dtype)); break;
    case TileOp::Kind::kReduceSum:
    case TileOp::Kind::kStableExp: absl::StrAppend(&out, " axis ", op.axis); break;
    case TileOp::Kind::kAccumulate: break;
  }
  for (int a : op.args) absl::StrAppend(&out, " x", a);
  if (op.rescale >= 0) absl::StrAppend(&out, " rescaled by x", op.rescale);
  if (op.mask.on()) {
    absl::StrAppend(&out, " causal (axis ", op.mask.row, " >= axis ", op.mask.col,
                    op.mask.shift ? absl::StrCat(", shift ", op.mask.shift) : "", ")");
  }
  return out;
}

std::string ViewKindName(ViewStep::Kind kind) {
  switch (kind) {
    case ViewStep::Kind::kPermute: return "permute";
    case ViewStep::Kind::kSlice: return "slice";
    case ViewStep::Kind::kExpand: return "expand";
    case ViewStep::Kind::kReshape: return "reshape";
  }
  return "?";
}

std::string ToText(const KernelGraph& graph) {
  std::string out = "kernel graph\n  tensors:\n";
  for (const DTensor& t : graph.tensors) {
    static constexpr const char* kRoles[] = {"input", "output", "intermediate"};
    absl::StrAppend(&out, "    t", t.id, " ", kRoles[static_cast<int>(t.role)], " ",
                    DTypeName(t.dtype), t.shape.ToString());
    if (!t.strides.empty()) absl::StrAppend(&out, " strides=(", absl::StrJoin(t.strides, ","), ")");
    if (t.aliases >= 0) absl::StrAppend(&out, " aliases t", t.aliases);
    absl::StrAppend(&out, "\n");
  }
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    const BlockGraph& b = graph.kernels[k].block;
    absl::StrAppend(&out, "  kernel ", k, ": ", BlockKindName(b.kind), " grid=(",
                    LaunchText(b.grid[0]), ", ", LaunchText(b.grid[1]), ", ", LaunchText(b.grid[2]),
                    ") threads=", b.threads, " forloop=", LaunchText(b.forloop),
                    b.loop_split > 1 ? absl::StrCat(" split ", b.loop_split, " ways") : "",
                    b.one_point_blocks ? " one grid point a block" : "",
                    " space=", b.iteration_shape.ToString(), "\n");
    if (b.kind == BlockKind::kRowReduce) {
      absl::StrAppend(&out, "    reduced axes: [", absl::StrJoin(b.reduced_axes, ","), "]\n");
    }
    if (b.kind == BlockKind::kMatmul) {
      absl::StrAppend(&out, "    tiles: ", b.tiles.m, "x", b.tiles.n, "x", b.tiles.k,
                      MatmulAlgorithmName(b.tiles.algorithm), " ", DTypeName(b.tiles.dtype), "\n");
    }
    for (size_t i = 0; i < b.inputs.size(); ++i) {
      absl::StrAppend(&out, "    in #", i, ": ", ViewText(b.inputs[i].view), " ",
                      b.inputs[i].view.shape.ToString(), " imap=", MapText(b.inputs[i].imap),
                      " fmap=", b.inputs[i].fmap,
                      b.inputs[i].quant ? absl::StrCat(" decoded from ", QuantName(b.inputs[i].quant->format), " to ",
                                                       DTypeName(b.inputs[i].quant->dtype))
                                        : std::string(),
                      "\n");
    }
    for (size_t p = 0; p < b.phases.size(); ++p) {
      absl::StrAppend(&out, "    phase ", p, ":\n");
      AppendThreadGraph(&out, b.phases[p].graph, "      ");
      for (size_t a = 0; a < b.phases[p].accumulators.size(); ++a) {
        const Accumulator& acc = b.phases[p].accumulators[a];
        absl::StrAppend(&out, "      acc ", a, " = ",
                        acc.kind == AccumulatorKind::kSum ? (acc.mean ? "mean" : "sum") : "max",
                        "(v", acc.value, ")\n");
      }
    }
    for (size_t i = 0; i < b.tile_ops.size(); ++i) {
      absl::StrAppend(&out, "    x", i, " = ", TileOpText(b.tile_ops[i]), "\n");
    }
    if (!b.epilogue.ops.empty()) {
      absl::StrAppend(&out, "    thread graph:\n");
      AppendThreadGraph(&out, b.epilogue, "      ");
    }
    for (const OutputSaver& o : b.outputs) {
      absl::StrAppend(&out, "    out t", o.tensor, " <- v", o.value, o.per_row ? " (per row)" : "",
                      " omap=", MapText(o.omap));
      if (o.shift_axis >= 0) absl::StrAppend(&out, " shift axis ", o.shift_axis, " by ", o.shift.ToString());
      absl::StrAppend(&out, "\n");
    }
  }
  return out;
}

std::string ToDot(const KernelGraph& graph) {
  std::string out = "digraph ugraph {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  for (const DTensor& t : graph.tensors) {
    absl::StrAppend(&out, "  t", t.id, " [shape=ellipse, label=\"t", t.id, " ", DTypeName(t.dtype),
                    t.shape.ToString(), "\"];\n");
  }
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    const Kernel& kernel = graph.kernels[k];
    const BlockGraph& b = kernel.block;
    std::string label = absl::StrCat("kernel ", k, ": ", BlockKindName(b.kind));
    int ops = static_cast<int>(b.epilogue.ops.size());
    for (const Phase& p : b.phases) ops += static_cast<int>(p.graph.ops.size());
    if (b.kind == BlockKind::kTiled) {
      for (size_t i = 0; i < b.tile_ops.size(); ++i) {
        absl::StrAppend(&label, "\\nx", i, " = ", TileOpText(b.tile_ops[i]));
      }
    } else {
      absl::StrAppend(&label, "\\n", ops, " scalar ops");
    }
    absl::StrAppend(&label, "\\nthreads=", b.threads);
    absl::StrAppend(&out, "  k", k, " [shape=box, style=filled, fillcolor=lightblue, label=\"", label,
                    "\"];\n");
    for (int in : kernel.inputs) absl::StrAppend(&out, "  t", in, " -> k", k, ";\n");
    for (int o : kernel.outputs) absl::StrAppend(&out, "  k", k, " -> t", o, ";\n");
  }
  return out + "}\n";
}

}  // namespace kiln::ugraph
