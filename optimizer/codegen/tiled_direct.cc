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
    if (register_sum_[i] >= 0) flush = std::max(flush, inputs_[register_sum_[i]].tasks);
  }
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    // Sums kept in registers for the whole loop cannot follow a running max.
    if (op.kind != TileOp::Kind::kMatmul || fused_into_[i] < 0 || b_.tile_ops[fused_into_[i]].rescale >= 0) continue;
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
    if (PlanMma(static_cast<int>(i))) {
      const MatmulPlan& plan = matmuls_[i];
      flush = std::max(flush, plan.k_groups * 16 * plan.cols);
      PlanARing(static_cast<int>(i));
      continue;
    }
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
    PlanARing(static_cast<int>(i));
  }
  if (flush > 0) {
    direct_scratch_ = scratch_;
    scratch_ += flush;
  }
}

bool TiledGenerator::PlanMma(int i) {
  const TileOp& op = b_.tile_ops[i];
  const int a = op.args[0], bm = op.args[1];
  InputPlan& in = inputs_[bm];
  if (!in.ring || DTypeSize(in.dtype) != 2 || op.dtype != in.dtype) return false;
  // A is an input tile: its elements past the tensor's ends are zeros (a
  // product of garbage and B's zero tail could be NaN).
  if (b_.tile_ops[a].kind != TileOp::Kind::kInput || tiles_[a].axes.size() != 2) return false;
  const int64_t rows = tiles_[i].axes[0].size, cols = tiles_[i].axes[1].size, depth = tiles_[a].axes[1].size;
  const int64_t vectors = in.task_sizes[1], warps = b_.threads / 32;
  if (rows > 16 || depth % 16 != 0 || tiles_[bm].axes[0].size != depth || vectors % 8 != 0 ||
      cols != vectors * in.width || b_.threads % 32 != 0) {
    return false;
  }
  const int64_t n8s = cols / 8;
  if (n8s >= warps ? n8s % warps != 0 : warps % n8s != 0) return false;
  if (n8s / warps > 8) return false;  // 32 accumulator registers
  MatmulPlan& plan = matmuls_[i];
  plan.n8s = n8s;
  plan.per_warp = std::max<int64_t>(1, n8s / warps);
  plan.k_groups = std::max<int64_t>(1, warps / n8s);
  plan.direct = plan.mma = true;
  plan.rows = rows;
  plan.cols = cols;
  plan.depth = depth;
  in.direct = in.swizzle = in.cross_read = true;
  registers_ += 4 * plan.per_warp + 12;
  return true;
}

void TiledGenerator::PlanARing(int i) {
  const TileOp& op = b_.tile_ops[i];
  MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0];
  if (b_.tile_ops[a].kind != TileOp::Kind::kInput) return;
  InputPlan& in = inputs_[a];
  // Rows of vectors along k, in row-major order, exactly the product's.
  if (!in.ring || in.task_sizes.size() != 2 || in.order != std::vector<int>{0, 1} || tiles_[a].axes.size() != 2 ||
      tiles_[a].axes[0].size != plan.rows || tiles_[a].axes[1].size != plan.depth) {
    return;
  }
  if (plan.mma) {
    // ldmatrix reads 8 rows of 16 bytes, conflict-free where the ring is
    // swizzled (8 vectors a row at least); the elements are the operands
    // as they are (no rounding).
    if (in.dtype != op.dtype || in.task_sizes[1] % 8 != 0) return;
    in.swizzle = true;
  }
  in.cross_read = true;
  plan.a_ring = true;
}

void TiledGenerator::DeclareMmaLane() {
  e_.Line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t2 = (lane & 3) * 2;");
}

std::string TiledGenerator::MmaTile(int i) const {
  const MatmulPlan& plan = matmuls_[i];
  return absl::StrCat(plan.k_groups > 1 ? absl::StrCat("warp % ", plan.n8s) : "warp", " + j * ", b_.threads / 32);
}

std::string TiledGenerator::MmaGroup(int i) const {
  const MatmulPlan& plan = matmuls_[i];
  return plan.k_groups > 1 ? absl::StrCat("warp / ", plan.n8s) : "0";
}

void TiledGenerator::EmitMmaMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0], bm = op.args[1];
  const int64_t v = inputs_[bm].task_sizes[1];
  if (!plan.a_ring) Read(a, false);
  Read(bm, false);  // other threads' copies into the ring
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", summed into x", fused_into_[i], " after the loop: on tensor cores, ",
           plan.per_warp, " n8 tile(s) per warp", plan.k_groups > 1 ? absl::StrCat(", k split ", plan.k_groups, " ways") : "");
  e_.Open("");
  DeclareMmaLane();
  const std::string pack = absl::StrCat("pack_", DTypeSuffix(op.dtype), "x2");
  e_.Open(absl::StrCat("for (int c = ", MmaGroup(i), "; c * 16 < ", Length(tiles_[bm].axes[0]), "; c += ", plan.k_groups,
                       ")"));
  e_.Line("unsigned fa[4], fb[2];");
  if (plan.a_ring) {
    // Lane q * 8 + r gives row r (+ 8 for odd q) of 8x8 matrix q; rows
    // past the tile's read row 0 (their products are never used).
    const int64_t va = inputs_[a].task_sizes[1];
    const bool x4 = plan.rows > 8;
    e_.Linef("const int q = lane >> 3, ar = (lane & 7)", x4 ? " + (q & 1) * 8" : "", ";");
    const std::string row = plan.rows == (x4 ? 16 : 8) ? "ar" : absl::StrCat("(ar < ", plan.rows, " ? ar : 0)");
    e_.Linef("load_a_fragment_", x4 ? "x4" : "x2", "(fa, &",
             RingSlot(a, "stage", absl::StrCat(row, " * ", va, " + c * 2 + ", x4 ? "(q >> 1)" : "(q & 1)")), ");");
  } else {
    e_.Linef("const float* pa = ", Buffer(a), " + c * 16 + t2;");
    // Rows past the tile's are zeros.
    const auto a_pair = [&](const std::string& row, int64_t highest, int col) {
      const std::string at = absl::StrCat("pa[(", row, ") * ", plan.depth, " + ", col, "]");
      const std::string value = absl::StrCat(pack, "(", at, ", pa[(", row, ") * ", plan.depth, " + ", col + 1, "])");
      return highest < plan.rows ? value : absl::StrCat("(", row, ") < ", plan.rows, " ? ", value, " : 0u");
    };
    e_.Linef("fa[0] = ", a_pair("g", 7, 0), ";");
    e_.Linef("fa[1] = ", a_pair("g + 8", 15, 0), ";");
    e_.Linef("fa[2] = ", a_pair("g", 7, 8), ";");
    e_.Linef("fa[3] = ", a_pair("g + 8", 15, 8), ";");
  }
  e_.Line("const int k = c * 16 + (lane & 15);");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
  e_.Linef("const int v = ", MmaTile(i), ";");
  e_.Linef("load_b_fragment_trans(fb, &", RingSlot(bm, "stage", absl::StrCat("k * ", v, " + v")), ");");
  e_.Linef("mma_", DTypeSuffix(op.dtype), "(d", i, "[j], fa, fb);");
  e_.Close();
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitMmaFlush(int i) {
  const MatmulPlan& plan = matmuls_[i];
  const int target = fused_into_[i];
  const std::string part = FlushScratch();
  e_.Linef("// x", target, " += x", i, "'s tensor-core sums: fragments to the scratch, k groups added in order");
  Sync();  // the scratch may hold another product's sums
  e_.Open("");
  DeclareMmaLane();
  e_.Linef("float* const part = ", part, " + ", MmaGroup(i), " * ", 16 * plan.cols, ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
  e_.Linef("const int n = (", MmaTile(i), ") * 8 + t2;");
  e_.Line("#pragma unroll");
  e_.Linef("for (int h = 0; h < 4; ++h) part[(g + 8 * (h / 2)) * ", plan.cols, " + n + h % 2] = d", i, "[j][h];");
  e_.Close();
  e_.Close();
  Sync();
  e_.Open(absl::StrCat("for (int c = threadIdx.x; c < ", plan.rows * plan.cols, "; c += ", b_.threads, ")"));
  e_.Line("float sum = 0.0f;");
  e_.Linef("for (int q = 0; q < ", plan.k_groups, "; ++q) sum += ", part, "[q * ", 16 * plan.cols, " + c];");
  e_.Linef(Buffer(target), "[c] += sum;");
  e_.Close();
  Wrote(target, false);
}

void TiledGenerator::EmitDirectMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  if (plan.mma) return EmitMmaMatmul(i);
  const int a = op.args[0], bm = op.args[1];
  const InputPlan& in = inputs_[bm];
  if (!plan.a_ring) Read(a, false);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", summed into x", fused_into_[i],
           " after the loop: this thread's B vectors times A's column", plan.a_ring ? " (from its ring)" : "",
           ", in registers");
  const std::string a_value = RoundedTo(
      op.dtype, a,
      plan.a_ring ? RingElement(a, "stage", "m", "kk") : absl::StrCat(Buffer(a), "[m * ", plan.depth, " + kk]"));
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
  e_.Linef("const float a = ", a_value, ";");
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
    if (plan.mma) {
      EmitMmaFlush(static_cast<int>(i));
      continue;
    }
    const int target = fused_into_[i];
    const int64_t width = inputs_[b_.tile_ops[i].args[1]].width;
    const std::string part = FlushScratch();
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
