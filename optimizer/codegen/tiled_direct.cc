// Direct matmuls of graph-defined blocks (see PlanDirect in
// tiled_generator.h): a weight tile streamed through registers, never
// through shared memory. Decode-shaped products (a few rows of A against a
// wide B) spend most of their time moving B; here each B element costs one
// conversion and one FMA per row, and the step takes no barrier for it.
#include <algorithm>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

void TiledGenerator::PlanDirect(const std::vector<int>& uses) {
  int64_t registers = 64;  // the sums all direct matmuls keep per thread
  int64_t flush = 0;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kMatmul || fused_into_[i] < 0) continue;
    const int a = op.args[0], bm = op.args[1];
    if (a == bm || b_.tile_ops[a].kind == TileOp::Kind::kConstant) continue;
    if (b_.tile_ops[bm].kind != TileOp::Kind::kInput || uses[bm] != 1 || phase_[bm] != Phase::kLoop) continue;
    const InputPlan& in = inputs_[bm];
    // B's vectors run along N (its last axis), and B is stored in the
    // product's dtype (no rounding of its own).
    if (!in.staged || in.width == 1 || in.task_sizes.size() != 2 || in.order.back() != 1) continue;
    if (op.dtype != DType::kF32 && in.dtype != op.dtype) continue;
    const TileInfo& out = tiles_[i];
    if (out.axes.size() != 2) continue;
    const int64_t rows = out.axes[0].size, vectors = in.task_sizes[1];
    // A thread's vectors all sit in one column of vectors.
    if (b_.threads % vectors != 0 || rows * in.width > registers) continue;
    registers -= rows * in.width;
    MatmulPlan& plan = matmuls_[i];
    plan.direct = true;
    plan.rows = rows;
    plan.cols = out.axes[1].size;
    plan.depth = tiles_[a].axes[1].size;
    plan.vectors = vectors;
    inputs_[bm].direct = true;
    registers_ += rows * in.width + 4 * (in.ring ? 1 : in.per_thread);
    flush = std::max(flush, b_.threads * in.width);
  }
  if (flush > 0) {
    direct_scratch_ = scratch_;
    scratch_ += flush;
  }
}

void TiledGenerator::EmitDirectMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0], bm = op.args[1];
  const InputPlan& in = inputs_[bm];
  Read(a, false);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", summed into x", fused_into_[i],
           " after the loop: this thread's B vectors times A's column, in registers");
  const bool exact = op.dtype == DType::kF32 ||
                     (b_.tile_ops[a].kind == TileOp::Kind::kInput &&
                      e_.graph().tensors[b_.inputs[b_.tile_ops[a].input].view.tensor].dtype == op.dtype);
  const std::string a_value = absl::StrCat(Buffer(a), "[m * ", plan.depth, " + kk]");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", in.per_thread, "; ++it)"));
  e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ", kk = l / ", plan.vectors, ";");
  // Only in-range k: A's tail may hold anything (B's is zero).
  const bool ragged = in.tasks % b_.threads != 0;
  e_.Open(absl::StrCat("if (", ragged ? absl::StrCat("l < ", in.tasks, " && ") : "", "kk < ",
                       Length(tiles_[bm].axes[0]), ")"));
  e_.Linef("const uint4 v = ", in.ring ? RingSlot(bm, "stage", "l") : absl::StrCat("cur", bm, "[it]"), ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
  e_.Linef("const float a = ", exact ? a_value : absl::StrCat("round_", DTypeSuffix(op.dtype), "(", a_value, ")"),
           ";");
  e_.Line("#pragma unroll");
  e_.Linef("for (int j = 0; j < ", in.width, "; ++j) d", i, "[m][j] = fmaf(a, bits_to_", DTypeSuffix(in.dtype),
           "(vector_bits(v, j, ", DTypeSize(in.dtype), ")), d", i, "[m][j]);");
  e_.Close();
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitDirectFlush() {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const MatmulPlan& plan = matmuls_[i];
    if (b_.tile_ops[i].kind != TileOp::Kind::kMatmul || !plan.direct) continue;
    const int target = fused_into_[i];
    const int64_t width = inputs_[b_.tile_ops[i].args[1]].width;
    const std::string part = absl::StrCat("(scratch + ", direct_scratch_, ")");
    e_.Linef("// x", target, " += the threads' sums of x", i, ", a row at a time, in thread order");
    e_.Line("#pragma unroll");  // d's indices must be constants
    e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
    Sync();  // the scratch may hold the previous row
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < ", width, "; ++j) ", part, "[threadIdx.x * ", width, " + j] = d", i, "[m][j];");
    Sync();
    e_.Open(absl::StrCat("for (int c = threadIdx.x; c < ", plan.cols, "; c += ", b_.threads, ")"));
    e_.Line("float sum = 0.0f;");
    e_.Linef("for (int g = 0; g < ", b_.threads / plan.vectors, "; ++g) sum += ", part, "[(g * ", plan.vectors,
             " + c / ", width, ") * ", width, " + c % ", width, "];");
    e_.Linef(Buffer(target), "[m * ", plan.cols, " + c] += sum;");
    e_.Close();
    e_.Close();
    Wrote(target, false);
  }
}

}  // namespace kiln::codegen::tiled_internal
