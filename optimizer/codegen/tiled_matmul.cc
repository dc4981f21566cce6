// Products of graph-defined blocks on f32 shared-memory tiles (the form
// every matmul can take; tiled_direct.cc has the register and tensor-core
// ones): a task is a few rows of one output column, and where there are
// fewer tasks than threads, several threads split the contraction and a
// second pass adds their partial sums in a fixed order. And how a
// product's operands are rounded to its dtype (all forms).
#include "optimizer/codegen/tiled_generator.h"
#include "optimizer/ugraph_validate.h"

namespace kiln::codegen::tiled_internal {

std::string TiledGenerator::RoundedTo(DType dtype, int x, const std::string& v) const {
  const TileOp& src = b_.tile_ops[x];
  const bool exact = dtype == DType::kF32 ||
                     (src.kind == TileOp::Kind::kInput &&
                      e_.graph().tensors[b_.inputs[src.input].view.tensor].dtype == dtype);
  return exact ? v : absl::StrCat("round_", DTypeSuffix(dtype), "(", v, ")");
}

void TiledGenerator::PlanMatmul(int i) {
  const TileInfo& out = tiles_[i];
  const TileInfo& a = tiles_[b_.tile_ops[i].args[0]];
  const size_t r = out.axes.size();
  MatmulPlan& plan = matmuls_[i];
  plan.rows = out.axes[r - 2].size;
  plan.cols = out.axes[r - 1].size;
  plan.depth = a.axes[r - 1].size;
  plan.batches = Product(Sizes(out), 0, r - 2);
  // Several rows per task read each B element once for all of them; as
  // many as still leave every thread a task.
  const int64_t rows = Useful(out.axes[r - 2]), cols = Useful(out.axes[r - 1]);
  for (int64_t p : {4, 2}) {
    if (p <= rows && plan.batches * ((rows + p - 1) / p) * cols >= b_.threads) {
      plan.per = p;
      break;
    }
  }
  plan.groups = (rows + plan.per - 1) / plan.per;
  plan.tasks = plan.batches * plan.groups * cols;
  while (plan.split < 16 && 2 * plan.split * plan.tasks <= b_.threads && 8 * plan.split <= plan.depth) {
    plan.split *= 2;
  }
  // Partial sums, a region per matmul: no barrier guards its reuse
  // within a step.
  const int64_t scratch = plan.split > 1 ? plan.split * plan.tasks * plan.per : 0;
  if (4 * (buffers_ + scratch_ + scratch) > ugraph::DeviceLimits().max_shared_memory_per_block) {
    plan.split = 1;
    return;
  }
  plan.scratch = scratch_;
  scratch_ += scratch;
}

void TiledGenerator::EmitMatmul(int i) {
  if (i == flash_.pv) return EmitFlashStep();
  if (matmuls_[i].direct) return EmitDirectMatmul(i);
  if (matmuls_[i].step) return EmitMmaMatmul(i);
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0], bm = op.args[1];
  const TileInfo& out = tiles_[i];
  const size_t r = out.axes.size();
  const int64_t cols = Useful(out.axes[r - 1]);
  const bool fused = fused_into_[i] >= 0;
  const int target = fused ? fused_into_[i] : i;
  const auto rounded = [&](int x, const std::string& v) { return RoundedTo(op.dtype, x, v); };
  Read(a, Spread::kOther);
  Read(bm, Spread::kOther);
  Read(target, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), fused ? absl::StrCat(", summed into x", target) : "", ": ",
           plan.per, " row(s) x 1 column per task, ", plan.tasks, " tasks, k split ", plan.split, " ways");
  const std::string store = fused ? " += " : " = ";
  const std::string m_length = Length(out.axes[r - 2]);
  e_.Open(absl::StrCat("for (int l = threadIdx.x; l < ", plan.tasks * plan.split, "; l += ", b_.threads, ")"));
  // Neighbouring threads take neighbouring columns (conflict-free B reads).
  e_.Linef("const int task = l % ", plan.tasks, ", slice = l / ", plan.tasks, ";");
  e_.Linef("const int col = task % ", cols, ", row0 = task / ", cols, " % ", plan.groups, " * ", plan.per,
           ", bt = ", plan.batches == 1 ? std::string("0") : absl::StrCat("task / ", plan.groups * cols), ";");
  e_.Linef("const float* pa = ", Buffer(a), " + (bt * ", plan.rows, " + row0) * ", plan.depth, ";");
  e_.Linef("const float* pb = ", Buffer(bm), " + bt * ", plan.depth * plan.cols, " + col;");
  e_.Linef("float acc[", plan.per, "];");
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) acc[q] = 0.0f;");
  // Tasks outside the tensor sum nothing (their values are never read).
  e_.Linef("const int kl = col < ", Length(out.axes[r - 1]), " && row0 < ", m_length, " ? ",
           Length(tiles_[a].axes[r - 1]), " : 0;");
  const auto fma = [&](const std::string& av, const std::string& bv) {
    return absl::StrCat("acc[q] = fmaf(", rounded(a, av), ", ", bv, ", acc[q]);");
  };
  // Chunks of 4 k: one 16-byte read of A per row where rows are aligned
  // (shared memory, not the FMAs, bounds this loop); slices take every
  // split-th chunk.
  static constexpr const char* kLane[4] = {"x", "y", "z", "w"};
  const std::string row = absl::StrCat("pa + q * ", plan.depth, " + c");
  e_.Open(absl::StrCat("for (int c = ", plan.split > 1 ? "slice * 4" : "0", "; c < kl; c += ", 4 * plan.split, ")"));
  e_.Open("if (c + 4 <= kl)");
  e_.Line("float bk[4];");
  e_.Linef("for (int j = 0; j < 4; ++j) bk[j] = ", rounded(bm, absl::StrCat("pb[(c + j) * ", plan.cols, "]")), ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int q = 0; q < ", plan.per, "; ++q)"));
  e_.Linef("const float4 av = ",
           plan.depth % 4 == 0 ? absl::StrCat("*reinterpret_cast<const float4*>(", row, ")")
                               : absl::StrCat("make_float4((", row, ")[0], (", row, ")[1], (", row, ")[2], (", row,
                                              ")[3])"),
           ";");
  for (int j = 0; j < 4; ++j) e_.Line(fma(absl::StrCat("av.", kLane[j]), absl::StrCat("bk[", j, "]")));
  e_.Close();
  e_.Close();
  e_.Open("else");
  e_.Open("for (int k = c; k < kl; ++k)");
  e_.Linef("const float bk = ", rounded(bm, absl::StrCat("pb[k * ", plan.cols, "]")), ";");
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) ", fma(absl::StrCat("pa[q * ", plan.depth, " + k]"), "bk"));
  e_.Close();
  e_.Close();
  e_.Close();
  const std::string element = absl::StrCat("(bt * ", plan.rows, " + row0 + q) * ", plan.cols, " + col");
  e_.Line("#pragma unroll");
  if (plan.split == 1) {
    e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) if (row0 + q < ", m_length, ") ", Buffer(target), "[",
             element, "]", store, "acc[q];");
    e_.Close();
    Wrote(target, Spread::kOther);
    return;
  }
  const std::string partial = absl::StrCat("scratch + ", plan.scratch);
  e_.Linef("for (int q = 0; q < ", plan.per, "; ++q) (", partial, ")[l * ", plan.per, " + q] = acc[q];");
  e_.Close();
  Sync();
  e_.Linef("// x", i, ": add the ", plan.split, " partial sums of each output");
  e_.Open(absl::StrCat("for (int o = threadIdx.x; o < ", plan.tasks * plan.per, "; o += ", b_.threads, ")"));
  e_.Linef("const int task = o / ", plan.per, ", q = o % ", plan.per, ";");
  e_.Linef("const int col = task % ", cols, ", row0 = task / ", cols, " % ", plan.groups, " * ", plan.per,
           ", bt = ", plan.batches == 1 ? std::string("0") : absl::StrCat("task / ", plan.groups * cols), ";");
  e_.Line("float sum = 0.0f;");
  e_.Line("#pragma unroll");
  e_.Linef("for (int s = 0; s < ", plan.split, "; ++s) sum += (", partial, ")[(s * ", plan.tasks, " + task) * ",
           plan.per, " + q];");
  e_.Linef("if (row0 + q < ", m_length, ") ", Buffer(target), "[", element, "]", store, "sum;");
  e_.Close();
  Wrote(target, Spread::kOther);
}

}  // namespace kiln::codegen::tiled_internal
