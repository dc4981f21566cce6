#include "optimizer/codegen/generate.h"

#include <algorithm>

#include "optimizer/codegen/emitter.h"
#include "optimizer/codegen/matmul_gen.h"
#include "optimizer/codegen/tiled_gen.h"
#include "optimizer/codegen/thread_emitter.h"

namespace kiln::codegen {
namespace {

using ugraph::BlockGraph;
using ugraph::BlockKind;

bool GraphReportsErrors(const ugraph::ThreadGraph& g) {
  for (const ugraph::ScalarOp& op : g.ops) {
    if (op.kind == ugraph::ScalarOp::Kind::kGather) return true;
    if (op.kind == ugraph::ScalarOp::Kind::kBinary && op.op == OpKind::kDiv && !IsFloating(op.dtype)) {
      return true;
    }
  }
  return false;
}

// Stores every output saver of `graph` at `coords` (per-element savers).
void StoreOutputs(Emitter& e, const BlockGraph& b, const std::vector<std::string>& coords,
                  const std::vector<std::string>& values, bool per_row, const std::string& row) {
  for (const ugraph::OutputSaver& o : b.outputs) {
    if (o.per_row != per_row) continue;
    const ugraph::DTensor& t = e.graph().tensors[o.tensor];
    std::string offset;
    if (per_row) {
      offset = row;  // the output holds one value per row, rows in order
    } else {
      std::vector<std::string> at = coords;
      if (o.shift_axis >= 0) {
        at[o.shift_axis] = absl::StrCat("(", coords[o.shift_axis], " + ", e.DimExpr(o.shift), ")");
      }
      offset = e.TensorOffset(o.tensor, at);
    }
    e.Linef("store_", DTypeSuffix(t.dtype), "(p.t[", e.Slot(o.tensor), "], ", offset, ", ",
            values[o.value], ");");
  }
}

void GeneratePointwise(Emitter& e, const BlockGraph& b) {
  e.Linef("const i64 n = ", e.NumelExpr(b.iteration_shape), ";");
  e.Open("for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; "
         "i += static_cast<i64>(gridDim.x) * blockDim.x)");
  const std::vector<std::string> coords = e.Unravel("i", b.iteration_shape);
  ThreadEmitter te(e, b, coords, {});
  const std::vector<std::string> values = te.Emit(b.epilogue);
  StoreOutputs(e, b, coords, values, false, "");
  e.Close();
}

void GenerateRow(Emitter& e, const BlockGraph& b) {
  Shape kept, reduced;
  for (int a = 0; a < b.iteration_shape.rank(); ++a) {
    const bool r = std::find(b.reduced_axes.begin(), b.reduced_axes.end(), a) != b.reduced_axes.end();
    (r ? reduced : kept).push_back(b.iteration_shape[a]);
  }
  e.Line("__shared__ float scratch_f[32];");
  e.Line("__shared__ i64 scratch_i[32];");
  e.Linef("const i64 rows = ", e.NumelExpr(kept), ";");
  e.Linef("const i64 inner = ", e.NumelExpr(reduced), ";");
  e.Open("for (i64 row = blockIdx.x; row < rows; row += gridDim.x)");
  const std::vector<std::string> kept_coords = e.Unravel("row", kept);
  // Full coordinates from the kept ones and an inner index.
  const auto coords_at = [&](const std::string& j) {
    const std::vector<std::string> red = e.Unravel(j, reduced);
    std::vector<std::string> c;
    size_t ki = 0, ri = 0;
    for (int a = 0; a < b.iteration_shape.rank(); ++a) {
      const bool r = std::find(b.reduced_axes.begin(), b.reduced_axes.end(), a) != b.reduced_axes.end();
      c.push_back(r ? red[ri++] : kept_coords[ki++]);
    }
    return c;
  };
  std::vector<std::string> totals;
  for (size_t p = 0; p + 1 < b.phases.size(); ++p) {
    const ugraph::Phase& phase = b.phases[p];
    std::vector<std::string> partial;
    for (const ugraph::Accumulator& acc : phase.accumulators) {
      const bool is_float = IsFloating(acc.dtype);
      const std::string name = e.Fresh("partial");
      const std::string init =
          acc.kind == ugraph::AccumulatorKind::kMax
              ? (is_float ? "__int_as_float(0xff800000)" : "(-9223372036854775807LL - 1)")
              : (is_float ? "0.0f" : "0LL");
      e.Linef(is_float ? "float " : "i64 ", name, " = ", init, ";");
      partial.push_back(name);
    }
    e.Open("for (i64 j = threadIdx.x; j < inner; j += blockDim.x)");
    ThreadEmitter te(e, b, coords_at("j"), totals);
    const std::vector<std::string> values = te.Emit(phase.graph);
    for (size_t a = 0; a < phase.accumulators.size(); ++a) {
      const ugraph::Accumulator& acc = phase.accumulators[a];
      e.Linef(partial[a], " = combine<", acc.kind == ugraph::AccumulatorKind::kMax ? "true" : "false",
              ">(", partial[a], ", ", values[acc.value], ");");
    }
    e.Close();
    for (size_t a = 0; a < phase.accumulators.size(); ++a) {
      const ugraph::Accumulator& acc = phase.accumulators[a];
      const bool is_float = IsFloating(acc.dtype);
      const std::string total = e.Fresh("total");
      e.Linef(is_float ? "float " : "i64 ", total, " = block_reduce<",
              acc.kind == ugraph::AccumulatorKind::kMax ? "true" : "false", ">(", partial[a], ", ",
              is_float ? "scratch_f" : "scratch_i", ");");
      if (acc.mean) e.Linef(total, " = ", total, " / static_cast<float>(inner);");
      totals.push_back(total);
    }
  }
  const ugraph::Phase& last = b.phases.back();
  const bool elements = std::any_of(b.outputs.begin(), b.outputs.end(),
                                    [](const ugraph::OutputSaver& o) { return !o.per_row; });
  const bool rows = std::any_of(b.outputs.begin(), b.outputs.end(),
                                [](const ugraph::OutputSaver& o) { return o.per_row; });
  if (elements) {
    e.Open("for (i64 j = threadIdx.x; j < inner; j += blockDim.x)");
    const std::vector<std::string> coords = coords_at("j");
    ThreadEmitter te(e, b, coords, totals);
    StoreOutputs(e, b, coords, te.Emit(last.graph), false, "");
    e.Close();
  }
  if (rows) {
    // Only what the per-row values need: element loads could fall outside an
    // empty row.
    std::vector<int> roots;
    for (const ugraph::OutputSaver& o : b.outputs) {
      if (o.per_row) roots.push_back(o.value);
    }
    e.Open("if (threadIdx.x == 0)");
    const std::vector<std::string> coords = coords_at("0LL");
    ThreadEmitter te(e, b, coords, totals);
    StoreOutputs(e, b, coords, te.Emit(last.graph, &roots), true, "row");
    e.Close();
  }
  e.Close();
}

}  // namespace

absl::StatusOr<KernelSource> GenerateKernel(const ugraph::KernelGraph& graph, int index) {
  if (index < 0 || index >= static_cast<int>(graph.kernels.size())) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: no kernel ", index));
  }
  const ugraph::Kernel& kernel = graph.kernels[index];
  const BlockGraph& b = kernel.block;
  Emitter e(graph, kernel);
  // A tiled kernel declares them itself, once it has chosen its index type.
  if (b.kind != BlockKind::kTiled) {
    for (int t : e.slots()) e.Strides(t);
  }
  int64_t dynamic_shared_bytes = 0, workspace_bytes_per_point = 0;
  int64_t min_blocks = 1;  // resident blocks per SM the registers must allow
  int64_t inflight_bytes = 0;
  MatmulPath matmul_path = MatmulPath::kNone;
  std::vector<MatmulPath> op_paths;
  int64_t step_barriers = 0, mma_warps = 0, step_threads = b.threads, flash_groups = 1;
  bool flash_groups_share_columns = false;
  bool split_together = false, inputs_before_wait = false;
  int64_t split_cluster = 1;
  switch (b.kind) {
    case BlockKind::kPointwise:
      GeneratePointwise(e, b);
      break;
    case BlockKind::kRowReduce:
      GenerateRow(e, b);
      break;
    case BlockKind::kMatmul:
      if (absl::Status s = GenerateMatmul(e, b); !s.ok()) return s;
      break;
    case BlockKind::kTiled: {
      absl::StatusOr<TiledKernel> tiled = GenerateTiled(e, b);
      if (!tiled.ok()) return tiled.status();
      dynamic_shared_bytes = tiled->shared_bytes;
      workspace_bytes_per_point = tiled->workspace_bytes_per_point;
      min_blocks = tiled->min_blocks;
      inflight_bytes = tiled->inflight_bytes;
      matmul_path = tiled->matmul_path;
      op_paths = tiled->op_paths;
      step_barriers = tiled->step_barriers;
      mma_warps = tiled->mma_warps;
      step_threads = tiled->step_threads;
      flash_groups = tiled->flash_groups;
      flash_groups_share_columns = tiled->flash_groups_share_columns;
      split_together = tiled->split_together;
      split_cluster = tiled->split_cluster;
      inputs_before_wait = tiled->inputs_before_wait;
      break;
    }
  }
  KernelSource out;
  out.slots = e.slots();
  out.symbols = e.symbols().symbols();
  out.threads = b.threads;
  out.dynamic_shared_bytes = dynamic_shared_bytes;
  out.workspace_bytes_per_point = workspace_bytes_per_point;
  out.min_blocks = min_blocks;
  out.inflight_bytes = inflight_bytes;
  out.matmul_path = matmul_path;
  out.op_paths = std::move(op_paths);
  out.step_barriers = step_barriers;
  out.mma_warps = mma_warps;
  out.step_threads = step_threads;
  out.flash_groups = flash_groups;
  out.flash_groups_share_columns = flash_groups_share_columns;
  out.split_together = split_together;
  if (split_cluster > 1) out.split_cluster[ugraph::SplitGridAxis(b)] = static_cast<unsigned>(split_cluster);
  out.inputs_before_wait = inputs_before_wait;
  out.reports_errors = GraphReportsErrors(b.epilogue);
  for (const auto& p : b.phases) out.reports_errors |= GraphReportsErrors(p.graph);
  out.source = absl::StrCat(
      "// Generated by kiln: ", ugraph::BlockKindName(b.kind), " kernel.\n",
      "#include \"kiln/tiles.cuh\"\nusing namespace kiln;\n\n",
      "struct Params {\n  char* t[", std::max<size_t>(1, out.slots.size()), "];\n  long long s[",
      std::max<size_t>(1, out.symbols.size()), "];\n  int* err;\n  char* ws;\n  unsigned* counters;\n",
      "  unsigned together;\n};\n\n",
      "extern \"C\" __global__ void __launch_bounds__(", b.threads, min_blocks > 1 ? absl::StrCat(", ", min_blocks) : "",
      ") ", kKernelName,
      "(const Params p) {\n",
      // A tiled kernel waits at its first grid point (EmitWaitForPriorGrid).
      b.kind == BlockKind::kTiled ? "" : "  wait_for_prior_grid();  // launched early: the one before finishes first\n",
      e.code(), "}\n");
  return out;
}

std::string SourceFor(const KernelSource& source, bool together) {
  if (!source.split_together) return source.source;
  return absl::StrCat("#define KILN_TOGETHER ", together ? 1 : 0, "\n", source.source);
}

}  // namespace kiln::codegen
