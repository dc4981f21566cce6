// The dot form of a direct matmul (MatmulPlan::dot; PlanDirect in
// tiled_direct.cc has the other): B's vectors run along k, as a weight
// stored [N, K] (a Linear's) or MLA's W_uk read transposed. Each thread dots
// the vectors it copied with A's rows at their k, in registers for the
// whole loop; after it, a column's lanes add by shuffles and its first lane
// adds the sum into the accumulator. B never widens into an f32 tile: MLA's
// q W_uk^T widened W_uk's with 8-way bank conflicts and took three barriers
// a step (on an H200, that kernel alone 1.84 -> 1.35 us).
#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

bool TiledGenerator::PlanDot(int i, const std::vector<int>& uses, int64_t* registers) {
  // B's vectors along k, a column's in consecutive lanes of one warp (the
  // tasks walk k fastest), and each of a thread's vectors at the same k
  // (the threads a multiple of a column's vectors).
  if (!RowsB(i, uses) || b_.tile_ops[fused_into_[i]].rescale >= 0) return false;
  const int a = b_.tile_ops[i].args[0], bm = b_.tile_ops[i].args[1];
  InputPlan& in = inputs_[bm];
  const int64_t vectors = in.row_vectors(), rows = RowAxis(i).size;
  if (vectors > 32 || 32 % vectors != 0 || b_.threads % vectors != 0) return false;
  if (ColAxis(a).size != RowAxis(bm).size || rows * in.per_thread > *registers) return false;
  *registers -= rows * in.per_thread;
  MatmulPlan& plan = matmuls_[i];
  plan.direct = plan.dot = true;
  plan.rows = rows;
  plan.cols = ColAxis(i).size;
  plan.depth = ColAxis(a).size;
  plan.vectors = vectors;
  in.direct = true;
  registers_ += rows * in.per_thread + 4 * (in.ring ? 1 : in.per_thread);
  return true;
}

void TiledGenerator::EmitDotMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0], bm = op.args[1];
  const InputPlan& in = inputs_[bm];
  if (!plan.a_ring) Read(a, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", summed into x", fused_into_[i],
           " after the loop: this thread's B vectors (along k) dotted with A's rows", plan.a_ring ? " (from its ring)" : "",
           ", in registers");
  const std::string a_value = DirectA(i, "k");
  e_.Linef("const int dot_k = threadIdx.x % ", plan.vectors, " * ", in.width, ";  // the k of this thread's vectors");
  // Only in-range k: A's tail may hold anything (B's is zero).
  e_.Linef("const int dot_kn = ", Length(RowAxis(bm)), " - dot_k;");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", in.per_thread, "; ++it)"));
  e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ";");
  const bool ragged = in.tasks % b_.threads != 0;
  if (ragged) e_.Open(absl::StrCat("if (l < ", in.tasks, ")"));
  e_.Linef("const uint4 v = ", in.ring ? RingSlot(bm, "stage", "l") : absl::StrCat("cur", bm, "[it]"), ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
  e_.Linef("float s = d", i, "[m][it];");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", in.width, "; ++j)"));
  e_.Line("const int k = dot_k + j;");
  e_.Linef("if (j < dot_kn) s = fmaf(", a_value, ", bits_to_", DTypeSuffix(in.dtype), "(vector_bits(v, j, ",
           DTypeSize(in.dtype), ")), s);");
  e_.Close();
  e_.Linef("d", i, "[m][it] = s;");
  e_.Close();
  if (ragged) e_.Close();
  e_.Close();
}

void TiledGenerator::EmitDotFlush(int i) {
  const MatmulPlan& plan = matmuls_[i];
  const int target = fused_into_[i];
  const InputPlan& in = inputs_[b_.tile_ops[i].args[1]];
  Read(target, Spread::kOther);
  e_.Linef("// x", target, " += the threads' dots of x", i, ": a column's ", plan.vectors,
           " lanes by shuffles, then its first lane");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", in.per_thread, "; ++it)"));
  e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ", n = l / ", plan.vectors, ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
  e_.Linef("float s = d", i, "[m][it];");
  for (int64_t d = plan.vectors / 2; d >= 1; d /= 2) e_.Linef("s += __shfl_xor_sync(0xffffffffu, s, ", d, ");");
  e_.Linef("if (l % ", plan.vectors, " == 0 && l < ", in.tasks, ") ", Buffer(target), "[m * ", plan.cols,
           " + n] += s;");
  e_.Close();
  e_.Close();
  Wrote(target, Spread::kOther);
}

}  // namespace kiln::codegen::tiled_internal
