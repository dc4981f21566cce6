#include "optimizer/ugraph_validate.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "optimizer/tile_analysis.h"

namespace kiln::ugraph {
namespace {

absl::Status Bad(size_t kernel, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("uGraph kernel ", kernel, ": ", what));
}

// A quantized read's tensor is u8 rows of whole blocks, and its view starts
// from those rows decoded.
absl::Status CheckQuantRead(const KernelGraph& graph, const InputIterator& in) {
  const View& v = in.view;
  if (v.tensor < 0) return absl::InvalidArgumentError("a quantized read needs a tensor");
  const DTensor& t = graph.tensors[v.tensor];
  const QuantFormatInfo& info = QuantInfo(in.quant->format);
  const int r = t.shape.rank();
  if (t.dtype != DType::kU8 || r < 1 || v.source_shape.rank() != r) {
    return absl::InvalidArgumentError("a quantized read views u8 rows of blocks, decoded to the same rank");
  }
  for (int a = 0; a + 1 < r; ++a) {
    if (!(t.shape[a] == v.source_shape[a])) return absl::InvalidArgumentError("decoded rows differ from the blocks'");
  }
  const Dim& values = v.source_shape[r - 1];
  const Dim& bytes = t.shape[r - 1];
  if (values.is_concrete() && bytes.is_concrete() &&
      (values.value() % info.block_size != 0 || values.value() / info.block_size * info.block_bytes != bytes.value())) {
    return absl::InvalidArgumentError(absl::StrCat(values.value(), " decoded values per row are not the ", bytes.value(),
                                                   " bytes of ", info.name, " blocks"));
  }
  if (!IsFloating(in.quant->dtype)) return absl::InvalidArgumentError("a quantized read decodes to a float dtype");
  return absl::OkStatus();
}

// The shape a view step produces from `in`, or an error.
absl::Status CheckStep(const Shape& in, const ViewStep& step) {
  switch (step.kind) {
    case ViewStep::Kind::kPermute: {
      if (static_cast<int>(step.perm.size()) != in.rank()) return absl::InvalidArgumentError("permutation rank");
      std::vector<bool> seen(in.rank(), false);
      for (size_t i = 0; i < step.perm.size(); ++i) {
        const int a = step.perm[i];
        if (a < 0 || a >= in.rank() || seen[a]) return absl::InvalidArgumentError("not a permutation");
        seen[a] = true;
        if (!(step.shape[i] == in[a])) return absl::InvalidArgumentError("permuted shape");
      }
      return step.shape.rank() == in.rank() ? absl::OkStatus()
                                            : absl::InvalidArgumentError("permuted rank");
    }
    case ViewStep::Kind::kSlice:
      if (static_cast<int>(step.ranges.size()) != in.rank() || step.shape.rank() != in.rank()) {
        return absl::InvalidArgumentError("slice rank");
      }
      for (const auto& r : step.ranges) {
        if (r.step < 1) return absl::InvalidArgumentError("slice step");
      }
      return absl::OkStatus();
    case ViewStep::Kind::kExpand: {
      if (step.shape.rank() < in.rank()) return absl::InvalidArgumentError("expand rank");
      const int lead = step.shape.rank() - in.rank();
      for (int i = 0; i < in.rank(); ++i) {
        if (!(in[i] == step.shape[lead + i]) && !(in[i] == Dim(1))) {
          return absl::InvalidArgumentError("expand of a non-unit dim");
        }
      }
      return absl::OkStatus();
    }
    case ViewStep::Kind::kReshape:
      return absl::OkStatus();  // element counts were checked when recorded
  }
  return absl::InvalidArgumentError("unknown view step");
}

absl::Status CheckThreadGraph(const ThreadGraph& g, size_t num_inputs, size_t num_accumulators) {
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const ScalarOp& op = g.ops[i];
    for (int a : op.args) {
      if (a < 0 || a >= static_cast<int>(i)) {
        return absl::InvalidArgumentError(absl::StrCat("v", i, " uses v", a, " before it exists"));
      }
    }
    size_t want_args = 0;
    switch (op.kind) {
      case ScalarOp::Kind::kLoad:
        if (op.input < 0 || op.input >= static_cast<int>(num_inputs)) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " loads missing input #", op.input));
        }
        break;
      case ScalarOp::Kind::kGather:
      case ScalarOp::Kind::kSelect:
      case ScalarOp::Kind::kDequant:
        want_args = op.kind == ScalarOp::Kind::kGather ? 1 : 0;
        for (int in : op.inputs) {
          if (in < 0 || in >= static_cast<int>(num_inputs)) {
            return absl::InvalidArgumentError(absl::StrCat("v", i, " reads missing input #", in));
          }
        }
        if (op.kind == ScalarOp::Kind::kGather &&
            (op.inputs.size() != 1 || op.input < 0 || op.input >= static_cast<int>(num_inputs))) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " gathers from missing inputs"));
        }
        if (op.kind == ScalarOp::Kind::kDequant &&
            (op.inputs.size() != 1 || op.input < 0 || op.input >= static_cast<int>(num_inputs))) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " dequantizes missing inputs"));
        }
        if (op.kind == ScalarOp::Kind::kSelect &&
            (op.inputs.size() < 2 || op.bounds.size() != 2 * (op.inputs.size() - 1))) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " selects without pieces or bounds"));
        }
        break;
      case ScalarOp::Kind::kIota:
      case ScalarOp::Kind::kRandom:
        if (op.input < 0 || op.input >= static_cast<int>(num_inputs)) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " has no coordinate input"));
        }
        break;
      case ScalarOp::Kind::kAccumulator:
        if (op.input < 0 || op.input >= static_cast<int>(num_accumulators)) {
          return absl::InvalidArgumentError(absl::StrCat("v", i, " reads missing accumulator ", op.input));
        }
        break;
      case ScalarOp::Kind::kUnary:
        want_args = 1;
        if (!IsUnary(op.op)) return absl::InvalidArgumentError(absl::StrCat("v", i, " is not unary"));
        break;
      case ScalarOp::Kind::kBinary:
        want_args = 2;
        if (!IsBinary(op.op)) return absl::InvalidArgumentError(absl::StrCat("v", i, " is not binary"));
        break;
      case ScalarOp::Kind::kWhere:
        want_args = 3;
        break;
      case ScalarOp::Kind::kCast:
        want_args = 1;
        break;
      default:
        break;
    }
    if (op.args.size() != want_args) {
      return absl::InvalidArgumentError(absl::StrCat("v", i, " (", ScalarKindName(op.kind), ") has ",
                                                     op.args.size(), " arguments, expected ", want_args));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t SharedMemoryBytes(const BlockGraph& block) {
  switch (block.kind) {
    case BlockKind::kPointwise:
      return 0;
    case BlockKind::kRowReduce:
      return 32 * 8 * 2;  // one partial per warp, per accumulator pair
    case BlockKind::kMatmul: {
      if (block.tiles.algorithm == MatmulAlgorithm::kWarpDot) return 0;
      const bool mma = block.tiles.algorithm == MatmulAlgorithm::kTensorCore;
      const int64_t element = mma ? 2 : 4;
      const int64_t stages = mma ? 2 : 1;
      return stages * (block.tiles.m * block.tiles.k + block.tiles.k * block.tiles.n) * element;
    }
    case BlockKind::kTiled: {
      // Every tile as an f32 buffer in shared memory: a bound, as tiles read
      // from the ring or registers take none (the code generator plans them).
      auto tiles = AnalyzeTiles(block);
      if (!tiles.ok()) return 0;
      int64_t bytes = 0;
      for (const TileInfo& t : *tiles) bytes += t.elements() * 4;
      return bytes;
    }
  }
  return 0;
}

namespace {

// A kTiled block: its tiles fit together and each output tile covers its
// tensor as the omap says.
absl::Status CheckTiled(const KernelGraph& graph, const BlockGraph& b) {
  auto tiles = AnalyzeTiles(b);
  if (!tiles.ok()) return tiles.status();
  for (const OutputSaver& o : b.outputs) {
    if (o.value < 0 || o.value >= static_cast<int>(tiles->size())) {
      return absl::InvalidArgumentError(absl::StrCat("saves missing tile x", o.value));
    }
    const TileInfo& tile = (*tiles)[o.value];
    if (tile.in_loop) return absl::InvalidArgumentError(absl::StrCat("saves x", o.value, ", a loop-step tile"));
    const Shape& shape = graph.tensors[o.tensor].shape;
    if (static_cast<int>(tile.axes.size()) != shape.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("x", o.value, " has rank ", tile.axes.size(), ", t",
                                                     o.tensor, " has rank ", shape.rank()));
    }
    for (int d = 0; d < shape.rank(); ++d) {
      const TileAxis& a = tile.axes[d];
      const bool ok = a.source == TileAxis::Source::kGrid
                          ? o.omap[a.grid_axis] == d && a.extent == shape[d]
                          : a.source == TileAxis::Source::kFull ? a.extent == shape[d]
                                                                 : shape[d] == Dim(1);
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("x", o.value, " axis ", d, " does not cover dim ", d, " of t", o.tensor));
      }
    }
    for (int g = 0; g < 3; ++g) {
      if (o.omap[g] < 0) continue;
      if (o.omap[g] >= shape.rank() || tile.axes[o.omap[g]].grid_axis != g) {
        return absl::InvalidArgumentError(absl::StrCat("omap of t", o.tensor, " names the wrong dim"));
      }
    }
    if (o.shift_axis >= 0 || o.per_row) return absl::InvalidArgumentError("tiled outputs are plain");
  }
  if (b.loop_split < 1 || b.loop_split > kMaxLoopSplit) {
    return absl::InvalidArgumentError(absl::StrCat("loop_split=", b.loop_split, " is outside [1, ", kMaxLoopSplit, "]"));
  }
  if (b.loop_split > 1) {
    if (b.forloop.extent.rank() != 1) return absl::InvalidArgumentError("loop_split without a for-loop");
    if (SplitGridAxis(b) < 0) return absl::InvalidArgumentError("loop_split needs a grid axis with no extent");
    if (AccumulatorFloats(b, *tiles) == 0) return absl::InvalidArgumentError("loop_split without an accumulator");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Validate(const KernelGraph& graph, const DeviceLimits& limits) {
  for (size_t i = 0; i < graph.tensors.size(); ++i) {
    const DTensor& t = graph.tensors[i];
    if (t.id != static_cast<int>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("uGraph tensor ", i, " has id ", t.id));
    }
    if (absl::Status s = t.shape.Validate(absl::StrCat("uGraph tensor t", i)); !s.ok()) return s;
    if (!t.strides.empty() && static_cast<int>(t.strides.size()) != t.shape.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("uGraph tensor t", i, ": strides of the wrong rank"));
    }
  }
  const auto valid_id = [&](int id) { return id >= 0 && id < static_cast<int>(graph.tensors.size()); };
  std::set<int> written;
  for (const DTensor& t : graph.tensors) {
    if (t.role == TensorRole::kInput) written.insert(t.id);
  }
  for (size_t k = 0; k < graph.kernels.size(); ++k) {
    const Kernel& kernel = graph.kernels[k];
    const BlockGraph& b = kernel.block;
    for (int in : kernel.inputs) {
      if (!valid_id(in)) return Bad(k, absl::StrCat("reads unknown tensor t", in));
      if (!written.contains(in)) return Bad(k, absl::StrCat("reads t", in, " before anything writes it"));
    }
    for (int out : kernel.outputs) {
      if (!valid_id(out)) return Bad(k, absl::StrCat("writes unknown tensor t", out));
      if (graph.tensors[out].role == TensorRole::kInput) return Bad(k, absl::StrCat("writes input t", out));
      if (!written.insert(out).second) return Bad(k, absl::StrCat("t", out, " is written twice"));
    }
    if (b.threads < 32 || b.threads % 32 != 0 || b.threads > limits.max_threads_per_block) {
      return Bad(k, absl::StrCat("threads=", b.threads, " must be a multiple of 32 up to ",
                                 limits.max_threads_per_block));
    }
    for (const LaunchDim& d : b.grid) {
      if (d.tile < 1) return Bad(k, "a grid tile below 1");
      if (absl::Status s = d.extent.Validate("grid extent"); !s.ok()) return Bad(k, s.message());
    }
    if (absl::Status s = b.forloop.extent.Validate("for-loop extent"); !s.ok()) return Bad(k, s.message());
    if (b.forloop.tile < 1) return Bad(k, "a for-loop tile below 1");
    if (b.one_point_blocks && b.kind != BlockKind::kTiled) {
      return Bad(k, "one_point_blocks is for tiled kernels (their grid-stride loops)");
    }
    // A tiled block's count here is a bound (a buffer per tile): tiles
    // read only from the ring or from registers take none, and ring-shared
    // inputs one copy. The code generator, which plans them, checks the
    // real total and says what it needs.
    const int64_t smem = SharedMemoryBytes(b);
    if (b.kind != BlockKind::kTiled && smem > limits.max_shared_memory_per_block) {
      return Bad(k, absl::StrCat("needs ", smem, " bytes of shared memory; the device allows ",
                                 limits.max_shared_memory_per_block));
    }
    for (size_t i = 0; i < b.inputs.size(); ++i) {
      const View& v = b.inputs[i].view;
      if (v.tensor != -1 &&
          std::find(kernel.inputs.begin(), kernel.inputs.end(), v.tensor) == kernel.inputs.end()) {
        return Bad(k, absl::StrCat("input #", i, " views t", v.tensor, ", which the kernel does not read"));
      }
      Shape shape = v.tensor == -1 ? v.source_shape : graph.tensors[v.tensor].shape;
      if (b.inputs[i].quant) {
        if (absl::Status s = CheckQuantRead(graph, b.inputs[i]); !s.ok()) {
          return Bad(k, absl::StrCat("input #", i, ": ", s.message()));
        }
        shape = v.source_shape;
      }
      for (const ViewStep& step : v.steps) {
        if (absl::Status s = CheckStep(shape, step); !s.ok()) {
          return Bad(k, absl::StrCat("input #", i, ": ", s.message()));
        }
        shape = step.shape;
      }
      if (!(shape == v.shape)) return Bad(k, absl::StrCat("input #", i, ": view shape mismatch"));
    }
    size_t accumulators = b.kind == BlockKind::kMatmul ? 1 : 0;
    for (const Phase& p : b.phases) {
      if (absl::Status s = CheckThreadGraph(p.graph, b.inputs.size(), accumulators); !s.ok()) {
        return Bad(k, s.message());
      }
      for (const Accumulator& a : p.accumulators) {
        if (a.value < 0 || a.value >= static_cast<int>(p.graph.ops.size())) {
          return Bad(k, "an accumulator reads a missing value");
        }
      }
      accumulators += p.accumulators.size();
    }
    if (absl::Status s = CheckThreadGraph(b.epilogue, b.inputs.size(), accumulators); !s.ok()) {
      return Bad(k, s.message());
    }
    switch (b.kind) {
      case BlockKind::kPointwise:
        if (!b.phases.empty()) return Bad(k, "a pointwise kernel has no phases");
        break;
      case BlockKind::kRowReduce:
        if (b.phases.empty() || !b.phases.back().accumulators.empty()) {
          return Bad(k, "a row kernel ends with an output phase without accumulators");
        }
        for (int a : b.reduced_axes) {
          if (a < 0 || a >= b.iteration_shape.rank()) return Bad(k, "a reduced axis is out of range");
        }
        break;
      case BlockKind::kMatmul:
        if (b.inputs.size() < 2 || b.inputs[0].view.shape.rank() < 2 ||
            b.inputs[1].view.shape.rank() < 2) {
          return Bad(k, "a matmul kernel needs A and B of rank >= 2");
        }
        if (b.tiles.m < 1 || b.tiles.n < 1 || b.tiles.k < 1) return Bad(k, "empty matmul tiles");
        break;
      case BlockKind::kTiled:
        if (absl::Status s = CheckTiled(graph, b); !s.ok()) return Bad(k, s.message());
        break;
    }
    for (const OutputSaver& o : b.outputs) {
      if (b.kind == BlockKind::kTiled) {
        if (std::find(kernel.outputs.begin(), kernel.outputs.end(), o.tensor) == kernel.outputs.end()) {
          return Bad(k, absl::StrCat("saves t", o.tensor, ", which is not a kernel output"));
        }
        continue;
      }
      if (std::find(kernel.outputs.begin(), kernel.outputs.end(), o.tensor) == kernel.outputs.end()) {
        return Bad(k, absl::StrCat("saves t", o.tensor, ", which is not a kernel output"));
      }
      const ThreadGraph& g =
          b.kind == BlockKind::kRowReduce ? b.phases.back().graph : b.epilogue;
      if (o.per_row && b.kind != BlockKind::kRowReduce) {
        return Bad(k, "per-row output outside a row kernel");
      }
      if (o.value < 0 || o.value >= static_cast<int>(g.ops.size())) {
        return Bad(k, absl::StrCat("saves missing value v", o.value));
      }
      const DType value = g.ops[o.value].dtype;
      const DType stored = graph.tensors[o.tensor].dtype;
      const bool widened = stored == DType::kF32 && (value == DType::kF16 || value == DType::kBF16);
      if (value != stored && !widened) {
        return Bad(k, absl::StrCat("saves a ", DTypeName(g.ops[o.value].dtype), " value into ",
                                   DTypeName(graph.tensors[o.tensor].dtype), " t", o.tensor));
      }
    }
  }
  for (const DTensor& t : graph.tensors) {
    if (t.role == TensorRole::kOutput && !written.contains(t.id)) {
      return absl::InvalidArgumentError(absl::StrCat("uGraph output t", t.id, " is never written"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::ugraph
