// Direct matmuls of graph-defined blocks (see PlanDirect in
// tiled_generator.h): a weight tile streamed through registers, never
// through shared memory. Decode-shaped products (a few rows of A against a
// wide B) spend most of their time moving B; here each B element costs one
// conversion and one FMA per row, and the step takes no barrier for it.
#include <algorithm>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

bool TiledGenerator::IsMatrix(int x) const {
  const std::vector<TileAxis>& axes = tiles_[x].axes;
  if (axes.size() < 2) return false;
  for (size_t d = 0; d + 2 < axes.size(); ++d) {
    if (axes[d].size != 1) return false;
  }
  return true;
}

bool TiledGenerator::VectorB(int i, const std::vector<int>& uses, int from_last) const {
  const TileOp& op = b_.tile_ops[i];
  const int a = op.args[0], bm = op.args[1];
  if (a == bm || b_.tile_ops[a].kind == TileOp::Kind::kConstant) return false;
  if (b_.tile_ops[bm].kind != TileOp::Kind::kInput || uses[bm] != 1 || phase_[bm] != Phase::kLoop) return false;
  const InputPlan& in = inputs_[bm];
  // The tasks walk the vectors' axis fastest; B is stored in the
  // product's dtype (no rounding of its own; f32 products round anything).
  const int rank = static_cast<int>(in.task_sizes.size());
  const int axis = rank - 1 - from_last;
  if (!in.staged || in.width == 1 || !IsMatrix(bm) || in.vector_axis != axis || in.order.back() != axis) return false;
  if (op.dtype != DType::kF32 && in.dtype != op.dtype) return false;
  return IsMatrix(i) && IsMatrix(a);
}

bool TiledGenerator::RowRescale(int acc) const {
  const int s = b_.tile_ops[acc].rescale;
  if (s < 0) return true;
  // The factor depends on the accumulator's row only: the shift's rows
  // broadcast along its last axis.
  const std::vector<int64_t> rows = Sizes(ShiftRowTile(s));
  return rows.size() <= tiles_[acc].axes.size() && (rows.empty() || rows.back() == 1);
}

// A matmul summed into an accumulator whose B is a loop tile that only it
// reads, loaded as 16-byte vectors along N, with few rows of A: each thread
// multiplies the B vectors it loaded by A's column and keeps the sums in
// registers for the whole loop (B never reaches shared memory and the step
// needs no barrier for it); after the loop the threads' sums are added, in
// a fixed order, into the accumulator (EmitDirectFlush). An accumulator that
// follows a running max (the online softmax's P@V) has its register sums
// multiplied by the step's factor, row by row (EmitRegisterRescale), before
// the step adds to them. With B's vectors along k instead, the dot form
// (PlanDot, tiled_dot.cc).
void TiledGenerator::PlanDirect(const std::vector<int>& uses) {
  int64_t registers = 64;  // the sums all direct matmuls keep per thread
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kMatmul || fused_into_[i] < 0) continue;
    if (!DirectB(static_cast<int>(i), uses)) {
      if (PlanDot(static_cast<int>(i), uses, &registers)) PlanARing(static_cast<int>(i));
      continue;
    }
    // Sums that follow a running max are rescaled in registers each step.
    if (!RowRescale(fused_into_[i])) continue;
    const int a = op.args[0], bm = op.args[1];
    const InputPlan& in = inputs_[bm];
    if (PlanMma(static_cast<int>(i), /*step=*/false)) {
      MatmulPlan& plan = matmuls_[i];
      plan.flush = plan.k_groups > 1 ? plan.k_groups * plan.m16s * 16 * plan.cols : 0;  // EmitMmaFlush
      // A warp with few tiles runs one chain of dependent mma.sync a step:
      // two accumulators halve it (gated_mlp_bs8's two products of 8 rows:
      // 26.8 us on an H100, 26.2 paired). Not where the sums are rescaled
      // each step (the online softmax's).
      if (plan.per_warp <= 2 && b_.tile_ops[fused_into_[i]].rescale < 0) {
        plan.paired = true;
        registers_ += 4 * plan.per_warp;
      }
      PlanARing(static_cast<int>(i));
      continue;
    }
    const int64_t rows = RowAxis(static_cast<int>(i)).size, vectors = in.row_vectors();
    // A thread's vectors all sit in one column of vectors.
    if (b_.threads % vectors != 0 || rows * in.width > registers) continue;
    registers -= rows * in.width;
    MatmulPlan& plan = matmuls_[i];
    plan.direct = true;
    plan.rows = rows;
    plan.cols = ColAxis(static_cast<int>(i)).size;
    plan.depth = ColAxis(a).size;
    plan.vectors = vectors;
    inputs_[bm].direct = true;
    registers_ += rows * in.width + 4 * (in.ring ? 1 : in.per_thread);
    // EmitDirectFlush: a warp's lanes that hold the same columns add by
    // shuffles, then each warp's sums of every row go through the scratch.
    plan.flush = SharingLanes(vectors) > 1 ? b_.threads / 32 * rows * vectors * in.width : b_.threads * in.width;
    PlanARing(static_cast<int>(i));
  }
  // Tensor-core products of one A on the same tiles run in one loop, each
  // A fragment loaded once for all of them (gated_mlp_bs8's X@W1 and X@W2:
  // 26.6 -> 26.2 us on an H100).
  for (size_t q = 0; q < b_.tile_ops.size(); ++q) {
    for (size_t p = 0; p < q; ++p) {
      if (matmuls_[p].shares_a_of < 0 && SameMmaLoop(static_cast<int>(p), static_cast<int>(q))) {
        matmuls_[q].shares_a_of = static_cast<int>(p);
        matmuls_[p].sharing_a.push_back(static_cast<int>(q));
        break;
      }
    }
  }
}

std::string TiledGenerator::DirectA(int i, const std::string& k) const {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0];
  return RoundedTo(op.dtype, a,
                   plan.a_ring ? RingElement(a, "stage", "m", k) : absl::StrCat(Buffer(a), "[m * ", plan.depth, " + ", k, "]"));
}

bool TiledGenerator::SameMmaLoop(int p, int q) const {
  const MatmulPlan &a = matmuls_[p], &b = matmuls_[q];
  const auto plain = [&](int i) {
    const MatmulPlan& m = matmuls_[i];
    return b_.tile_ops[i].kind == TileOp::Kind::kMatmul && m.mma && m.direct && !m.step && m.a_ring && !m.b_tile &&
           !m.b_rows && m.b_scale < 0 && SharedA(i) && i != flash_.pv;
  };
  return plain(p) && plain(q) && b_.tile_ops[p].args[0] == b_.tile_ops[q].args[0] &&
         b_.tile_ops[p].dtype == b_.tile_ops[q].dtype && a.m16s == b.m16s && a.n8s == b.n8s &&
         a.per_warp == b.per_warp && a.k_groups == b.k_groups && a.paired == b.paired &&
         Length(RowAxis(BInput(p))) == Length(RowAxis(BInput(q)));
}

void TiledGenerator::PlanFlushScratch() {
  int64_t flush = 0;
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    if (register_sum_[i] >= 0) flush = std::max(flush, inputs_[register_sum_[i]].tasks);
    if (matmuls_[i].direct && static_cast<int>(i) != flash_.pv) flush = std::max(flush, matmuls_[i].flush);
  }
  if (flash_.keys_split) {
    const MatmulPlan& pv = matmuls_[flash_.pv];
    flush = std::max(flush, b_.threads / 32 * (32 + pv.rows * pv.cols));  // EmitKeysSplitFlush
  }
  if (flash_.groups > 1) flush = std::max(flush, FlashGroupScratch());
  if (b_.loop_split > 1) {
    int64_t factors = 0;  // SplitFactors
    for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
      if (b_.tile_ops[i].kind != TileOp::Kind::kStableExp) continue;
      if (ugraph::IsRunningMax(b_, tiles_, static_cast<int>(i))) {
        factors += b_.loop_split * ShiftRowTile(static_cast<int>(i)).elements();
      }
    }
    // Then the groups' sums where a combine's lanes take a vector in groups
    // (EmitCombineAcrossWarps): a vector a thread at most.
    flush = std::max(flush, factors + (b_.loop_split > 16 ? 4 * b_.threads : 0));
  }
  if (flush > 0) {
    direct_scratch_ = scratch_;
    scratch_ += flush;
  }
  if (flash_.scores_shared) {  // EmitFlashScoresShared: a float4 a lane and tile of each group
    flash_.scores_offset = scratch_;
    scratch_ += flash_.groups * FlashColumns() * 32 * 4;
  }
}

bool TiledGenerator::ComputedB(int i) const {
  const TileOp& op = b_.tile_ops[i];
  const int a = op.args[0], bm = op.args[1];
  const TileOp::Kind kind = b_.tile_ops[bm].kind;
  if (a == bm || kind == TileOp::Kind::kInput || kind == TileOp::Kind::kConstant || fused_into_[bm] >= 0) return false;
  if (b_.tile_ops[a].kind == TileOp::Kind::kConstant || DTypeSize(op.dtype) != 2) return false;
  return IsMatrix(i) && IsMatrix(a) && IsMatrix(bm);
}

std::optional<std::pair<int, int>> TiledGenerator::ScaledB(int i, const std::vector<int>& uses) const {
  const TileOp& op = b_.tile_ops[i];
  const int bm = op.args[1];
  const TileOp& b = b_.tile_ops[bm];
  if (b.kind != TileOp::Kind::kBinary || b.op != OpKind::kMul || uses[bm] != 1 || DTypeSize(op.dtype) != 2) {
    return std::nullopt;
  }
  for (int k = 0; k < 2; ++k) {
    const int x = b.args[k], s = b.args[1 - k];
    if (x == s || b_.tile_ops[x].kind != TileOp::Kind::kInput || b_.tile_ops[s].kind == TileOp::Kind::kConstant) {
      continue;
    }
    const InputPlan& in = inputs_[x];
    const int last = static_cast<int>(in.task_sizes.size()) - 1;
    // X: B's shape, in the ring, vectors along n, in the product's dtype.
    if (!SameShape(x, bm) || !IsMatrix(x) || phase_[x] != Phase::kLoop || !in.ring || !in.staged ||
        in.ring_of >= 0 || in.width == 1 || in.dtype != op.dtype || in.vector_axis != last || in.order.back() != last) {
      continue;
    }
    // s: one row of B's columns.
    std::vector<int64_t> row = Sizes(tiles_[bm]);
    row[row.size() - 2] = 1;
    if (Sizes(tiles_[s]) != row) continue;
    // X's other readers take it from the ring too: no tile of X is left.
    bool others = false;
    for (size_t c = 0; c < b_.tile_ops.size(); ++c) {
      const std::vector<int>& args = b_.tile_ops[c].args;
      const bool reads = std::find(args.begin(), args.end(), x) != args.end();
      others = others || (reads && static_cast<int>(c) != bm && ring_chain_[c] != x);
    }
    for (const ugraph::OutputSaver& o : b_.outputs) others = others || o.value == x;
    if (!others && IsMatrix(i) && IsMatrix(op.args[0])) return std::make_pair(x, s);
  }
  return std::nullopt;
}

void TiledGenerator::PlanStepMma(const std::vector<int>& uses) {
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const TileOp& op = b_.tile_ops[i];
    if (op.kind != TileOp::Kind::kMatmul || fused_into_[i] >= 0) continue;
    const std::optional<std::pair<int, int>> scaled = ScaledB(static_cast<int>(i), uses);
    const bool rows = !scaled && op.dtype != DType::kF32 && RowsB(static_cast<int>(i), uses);
    const bool ring = scaled || rows || DirectB(static_cast<int>(i), uses);
    if (!ring && !ComputedB(static_cast<int>(i))) continue;
    matmuls_[i].b_tile = !ring;
    matmuls_[i].b_rows = rows;
    if (scaled) std::tie(matmuls_[i].b_input, matmuls_[i].b_scale) = *scaled;
    if (PlanMma(static_cast<int>(i), /*step=*/true)) {
      PlanARing(static_cast<int>(i));
    } else {
      matmuls_[i].b_tile = matmuls_[i].b_rows = false;
      matmuls_[i].b_input = matmuls_[i].b_scale = -1;
    }
  }
}

bool TiledGenerator::PlanMma(int i, bool step) {
  const TileOp& op = b_.tile_ops[i];
  const int a = op.args[0], bm = BInput(i);
  const bool b_tile = matmuls_[i].b_tile;
  InputPlan& in = inputs_[bm];
  if (!b_tile && (!in.ring || DTypeSize(in.dtype) != 2 || op.dtype != in.dtype)) return false;
  const int64_t rows = RowAxis(i).size, cols = ColAxis(i).size, depth = ColAxis(a).size;
  const int64_t warps = b_.threads / 32;
  if (rows > 128 || depth % 16 != 0 || RowAxis(bm).size != depth || cols % 8 != 0 || b_.threads % 32 != 0) {
    return false;
  }
  // B's ring: rows of k with 2, 4 or a multiple of 8 vectors along n
  // (swizzled for ldmatrix .trans), or rows of n with its vectors along k
  // (b_rows).
  const int64_t row_vectors = in.row_vectors();
  if (!b_tile && !matmuls_[i].b_rows &&
      (in.vector_axis != static_cast<int>(in.task_sizes.size()) - 1 || !Swizzles(row_vectors) ||
       cols != row_vectors * in.width)) {
    return false;
  }
  if (matmuls_[i].b_rows && (row_vectors * in.width != depth || in.task_sizes.back() != cols)) return false;
  const int64_t n8s = cols / 8, m16s = (rows + 15) / 16, tiles = n8s * m16s;
  if (tiles >= warps ? tiles % warps != 0 : warps % tiles != 0) return false;
  // 32 accumulator registers; for attention's P@V where each warp owns
  // whole rows of the output, 64 a slab of 16 rows (FlashAttention's O in
  // registers: head dim 128 over query tiles of 16 rows a warp), twice
  // that for two slabs (32 rows a warp, the flash path's alone: Plan).
  const bool attention_rows = b_.tile_ops[a].kind == TileOp::Kind::kStableExp && n8s <= 16 &&
                              (tiles / warps == n8s || tiles / warps == 2 * n8s);
  // Attention's scores (a step's product a stable exp reads): 64 too where
  // each warp takes two slabs of 64 keys (the flash path's 32 rows a warp).
  // Not one slab of 128 keys: its K fragments alone would take 128
  // registers a thread, and on the H100 such kernels spilled at 255, took
  // 2-6 s to compile, and ran slower than 64 keys a step wherever timed
  // (gqa_bs1 12.1 against 11.2 us, gqa_bs8 43.7 against 28.2).
  const bool scores = step && m16s == 2 * warps &&
                      std::any_of(b_.tile_ops.begin(), b_.tile_ops.end(), [&](const TileOp& r) {
                        return r.kind == TileOp::Kind::kStableExp && r.args[0] == i;
                      });
  if (!attention_rows && tiles / warps > (scores ? 16 : 8)) return false;
  MatmulPlan& plan = matmuls_[i];
  plan.n8s = n8s;
  plan.m16s = m16s;
  plan.per_warp = std::max<int64_t>(1, tiles / warps);
  // A step's product takes whole tiles per warp (the warps past them
  // idle): its k groups would need adding up within the step.
  plan.k_groups = step ? 1 : std::max<int64_t>(1, warps / tiles);
  plan.mma = true;
  plan.direct = !step;
  plan.step = step;
  plan.rows = rows;
  plan.cols = cols;
  plan.depth = depth;
  if (!b_tile) {
    in.direct = in.cross_read = true;
    // Conflict-free ldmatrix needs a row swizzled (SlotIndex).
    in.swizzle = Swizzles(row_vectors);
  }
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
  if (!in.ring || in.order != RowMajorOrder(in.task_sizes.size()) || !IsMatrix(a) || RowAxis(a).size != plan.rows ||
      ColAxis(a).size != plan.depth) {
    return;
  }
  if (plan.mma) {
    // ldmatrix reads 8 rows of 16 bytes, conflict-free where the ring is
    // swizzled (8 vectors a row at least); the elements are the operands
    // as they are (no rounding).
    if (in.dtype != op.dtype || in.row_vectors() % 8 != 0) return;
    in.swizzle = true;
  }
  in.cross_read = true;
  plan.a_ring = true;
}

void TiledGenerator::DeclareMmaLane() {
  e_.Line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t2 = (lane & 3) * 2;");
}

void TiledGenerator::DeclareMmaTile(int i) {
  const MatmulPlan& plan = matmuls_[i];
  const int64_t tiles = plan.n8s * plan.m16s;
  // Without k groups a warp's tiles are consecutive: along one row of
  // tiles where per_warp divides it, so that they share A's fragments.
  const std::string t = plan.k_groups > 1 ? absl::StrCat("warp % ", tiles, " + j * ", b_.threads / 32)
                                          : absl::StrCat("warp * ", plan.per_warp, " + j");
  if (plan.m16s == 1) {
    e_.Linef("const int m0 = 0, v = ", t, ";");
  } else {
    e_.Linef("const int t = ", t, ", m0 = t / ", plan.n8s, " * 16, v = t % ", plan.n8s, ";");
  }
}

bool TiledGenerator::SharedA(int i) const {
  const MatmulPlan& plan = matmuls_[i];
  return plan.k_groups == 1 && plan.n8s % plan.per_warp == 0;
}

std::string TiledGenerator::MmaGroup(int i) const {
  const MatmulPlan& plan = matmuls_[i];
  return plan.k_groups > 1 ? absl::StrCat("warp / ", plan.n8s * plan.m16s) : "0";
}

std::string TiledGenerator::InRangeK(int i, int offset, const std::string& value) const {
  return absl::StrCat("c * 16 + t2 + ", offset, " < ", Length(RowAxis(b_.tile_ops[i].args[1])), " ? ", value,
                      " : 0.0f");
}

void TiledGenerator::EmitMmaA(int i, const std::string& m0, const std::string& into) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0];
  const std::string fa = into.empty() ? "fa" : into;
  if (into.empty()) e_.Line("unsigned fa[4];");
  // Rows past the tile's are never stored: they read row 0 (ring) or zeros.
  const bool whole_rows = plan.rows % 16 == 0;
  if (plan.a_ring) {
    // Lane q * 8 + r gives row r (+ 8 for odd q) of 8x8 matrix q.
    const int64_t va = inputs_[a].row_vectors();
    const bool x4 = plan.rows > 8;
    e_.Linef("const int q = lane >> 3, ar = ", m0, " + (lane & 7)", x4 ? " + (q & 1) * 8" : "", ";");
    const std::string row =
        whole_rows || plan.rows == 8 ? "ar" : absl::StrCat("(ar < ", plan.rows, " ? ar : 0)");
    e_.Linef("load_a_fragment_", x4 ? "x4" : "x2", "(", fa, ", &",
             RingSlot(a, "stage", absl::StrCat(row, " * ", va, " + c * 2 + ", x4 ? "(q >> 1)" : "(q & 1)")), ");");
    return;
  }
  if (plan.a_packed >= 0) {
    e_.Linef("const uint4 pk = reinterpret_cast<const uint4*>(smem + ", plan.a_packed, ")[((", m0, ") / 16 * ",
             plan.depth / 16, " + c) * 32 + lane];");
    e_.Linef(fa, "[0] = pk.x, ", fa, "[1] = pk.y, ", fa, "[2] = pk.z, ", fa, "[3] = pk.w;");
    return;
  }
  EmitMmaAFromTile(i, m0, fa);
}

void TiledGenerator::EmitMmaAFromTile(int i, const std::string& m0, const std::string& fa) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int a = op.args[0];
  const bool whole_rows = plan.rows % 16 == 0;
  // Pairs of f32 elements (8-byte aligned: the depth is a multiple of 16).
  // A computed A's elements past the in-range k are zeros: B's are zero
  // there, but A's may be inf (an exponential of a score that is no
  // score), and inf * 0 is NaN.
  const std::string pack = absl::StrCat("pack_", DTypeSuffix(op.dtype), "x2");
  const bool mask_k = b_.tile_ops[a].kind != TileOp::Kind::kInput;
  e_.Linef("const float* pa = ", Buffer(a), " + c * 16 + t2;");
  for (int h = 0; h < 4; ++h) {
    const int col = h < 2 ? 0 : 8;
    const std::string row = absl::StrCat(m0, " + g", h % 2 == 0 ? "" : " + 8");
    const bool guarded = plan.m16s == 1 ? (h % 2 == 0 ? 7 : 15) >= plan.rows : !whole_rows;
    const std::string pair = absl::StrCat("*reinterpret_cast<const float2*>(pa + (", row, ") * ", plan.depth,
                                          " + ", col, ")");
    e_.Linef("const float2 p", h, " = ", guarded ? absl::StrCat("(", row, ") < ", plan.rows, " ? ") : "", pair,
             guarded ? " : make_float2(0.0f, 0.0f)" : "", ";");
    const auto element = [&](int e) {
      const std::string value = absl::StrCat("p", h, e == 0 ? ".x" : ".y");
      return mask_k ? InRangeK(i, col + e, value) : value;
    };
    e_.Linef(fa, "[", h, "] = ", pack, "(", element(0), ", ", element(1), ");");
  }
}

void TiledGenerator::EmitMmaB(int i, const std::string& v) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  const int bm = BInput(i);
  e_.Line("unsigned fb[2];");
  const int64_t vectors = inputs_[bm].row_vectors();
  if (plan.b_rows) {
    // Lane l (of 0-15) gives row n = 8 v + l % 8 of the ring, at k vector 2 c + l / 8.
    e_.Linef("load_b_fragment_rows(fb, &",
             RingSlot(bm, "stage", absl::StrCat("(", v, " * 8 + (lane & 7)) * ", vectors, " + c * 2 + ((lane >> 3) & 1)")),
             ");");
    return;
  }
  if (!plan.b_tile) {
    e_.Linef("load_b_fragment_trans(fb, &", RingSlot(bm, "stage", absl::StrCat("k * ", vectors, " + ", v)), ");");
    EmitScaleB(i, "fb", v);
    return;
  }
  // Rows t2, t2 + 1 (and + 8) of k chunk c, column g of n8 tile v; rows
  // past the in-range k are zeros (A's are too, and inf * 0 is NaN).
  const std::string pack = absl::StrCat("pack_", DTypeSuffix(op.dtype), "x2");
  e_.Linef("const float* pb = ", Buffer(bm), " + (c * 16 + t2) * ", plan.cols, " + ", v, " * 8 + g;");
  const auto element = [&](int row) {
    return InRangeK(i, row, absl::StrCat("pb[", row * plan.cols, "]"));
  };
  e_.Linef("fb[0] = ", pack, "(", element(0), ", ", element(1), ");");
  e_.Linef("fb[1] = ", pack, "(", element(8), ", ", element(9), ");");
}

void TiledGenerator::EmitScaleB(int i, const std::string& fb, const std::string& v) {
  const MatmulPlan& plan = matmuls_[i];
  if (plan.b_scale < 0 || ScalesFlashScores(i)) return;
  e_.Linef("const float bs = ", Buffer(plan.b_scale), "[(", v, ") * 8 + g];  // the lane's column");
  const std::string scale = absl::StrCat("scale_", DTypeSuffix(b_.tile_ops[i].dtype), "x2");
  e_.Linef(fb, "[0] = ", scale, "(", fb, "[0], bs);");
  e_.Linef(fb, "[1] = ", scale, "(", fb, "[1], bs);");
}

void TiledGenerator::EmitMmaMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  if (plan.shares_a_of >= 0) {
    e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ": in x", plan.shares_a_of, "'s loop");
    return;
  }
  const int a = op.args[0], bm = BInput(i);
  const int64_t warps = b_.threads / 32, tiles = plan.n8s * plan.m16s;
  if (!plan.a_ring && plan.a_packed < 0) Read(a, Spread::kOther);
  Read(bm, Spread::kOther);  // other threads' copies into the ring
  for (const int q : plan.sharing_a) Read(BInput(q), Spread::kOther);
  if (plan.b_scale >= 0) Read(plan.b_scale, Spread::kOther);
  if (plan.step) Read(i, Spread::kOther);
  std::string with, into = absl::StrCat("x", fused_into_[i]);
  for (const int q : plan.sharing_a) {
    absl::StrAppend(&with, " and x", q, " = ", ugraph::TileOpText(b_.tile_ops[q]));
    absl::StrAppend(&into, " and x", fused_into_[q]);
  }
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), with,
           plan.step ? std::string(", this step's") : absl::StrCat(", summed into ", into, " after the loop"),
           ": on tensor cores, ", plan.m16s, " x ", plan.n8s, " m16n8 tiles, ", plan.per_warp, " per warp",
           plan.k_groups > 1 ? absl::StrCat(", k split ", plan.k_groups, " ways") : "",
           plan.sharing_a.empty() ? "" : ", one A fragment for all");
  e_.Open("");
  DeclareMmaLane();
  const std::string d = plan.step ? "d" : absl::StrCat("d", i);
  if (plan.step) e_.Linef("float d[", plan.per_warp, "][4] = {};");
  // Warps past the tiles of a step's product have none.
  if (plan.step && tiles < warps) e_.Open(absl::StrCat("if (warp < ", tiles, ")"));
  const std::string length = Length(RowAxis(bm));
  if (plan.paired) {
    // Even k chunks into d, odd ones into its pair: two chains of
    // dependent mma.sync, not one.
    e_.Open(absl::StrCat("for (int c0 = ", MmaGroup(i), "; c0 * 16 < ", length, "; c0 += ", 2 * plan.k_groups, ")"));
    e_.Line("#pragma unroll");
    e_.Open("for (int odd = 0; odd < 2; ++odd)");
    e_.Linef("const int c = c0 + odd * ", plan.k_groups, ";");
    e_.Open(absl::StrCat("if (c * 16 < ", length, ")"));
  } else {
    e_.Open(absl::StrCat("for (int c = ", MmaGroup(i), "; c * 16 < ", length, "; c += ", plan.k_groups, ")"));
  }
  e_.Line("const int k = c * 16 + (lane & 15);");
  const bool shared_a = SharedA(i);
  if (shared_a) {
    // One A fragment serves all of this warp's tiles (one row of tiles;
    // the tiles' own m0 below is the same).
    e_.Linef("const int m0 = ", plan.m16s == 1 ? "0" : absl::StrCat("warp * ", plan.per_warp, " / ", plan.n8s, " * 16"),
             ";");
    EmitMmaA(i);
  }
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
  DeclareMmaTile(i);
  if (!shared_a) EmitMmaA(i);
  std::vector<int> products = {i};
  products.insert(products.end(), plan.sharing_a.begin(), plan.sharing_a.end());
  for (const int q : products) {
    const std::string dq = plan.step ? "d" : absl::StrCat("d", q);
    if (products.size() > 1) e_.Open("");
    EmitMmaB(q, "v");
    e_.Linef("mma_", DTypeSuffix(op.dtype), "(", plan.paired ? absl::StrCat("(odd ? ", dq, "b : ", dq, ")") : dq,
             "[j], fa, fb);");
    if (products.size() > 1) e_.Close();
  }
  e_.Close();
  e_.Close();
  if (plan.paired) {
    e_.Close();
    e_.Close();
  }
  if (plan.step) {
    // The fragments into the product's tile, its rows only, in pairs.
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
    DeclareMmaTile(i);
    e_.Line("#pragma unroll");
    e_.Open("for (int h = 0; h < 4; h += 2)");
    e_.Line("const int r = m0 + g + 4 * h;");
    e_.Linef("if (r < ", plan.rows, ") *reinterpret_cast<float2*>(", Buffer(i), " + r * ", plan.cols,
             " + v * 8 + t2) = make_float2(d[j][h], d[j][h + 1]);");
    e_.Close();
    e_.Close();
    if (tiles < warps) e_.Close();
  }
  e_.Close();
  if (plan.step) Wrote(i, Spread::kOther);
}

void TiledGenerator::EmitRegisterRescale(int mm, int s) {
  const MatmulPlan& plan = matmuls_[mm];
  const int acc = fused_into_[mm];
  const auto factor = [&](const std::string& row) {
    return absl::StrCat("rescale", s, "[", RowOf(s, tiles_[acc], RowCoords(tiles_[acc], row)), "]");
  };
  e_.Linef("// x", acc, "'s sums in registers (x", mm, ") follow x", s, "'s running max");
  e_.Open("");
  if (plan.mma) {
    DeclareMmaLane();
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
    DeclareMmaTile(mm);
    e_.Line("#pragma unroll");
    e_.Open("for (int h = 0; h < 4; ++h)");
    e_.Line("const int r = m0 + g + 8 * (h >> 1);");
    e_.Linef("if (r < ", plan.rows, ") d", mm, "[j][h] *= ", factor("r"), ";");
    e_.Close();
    e_.Close();
  } else {
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
    e_.Linef("const float f = ", factor("m"), ";");
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < ", inputs_[b_.tile_ops[mm].args[1]].width, "; ++j) d", mm, "[m][j] *= f;");
    e_.Close();
  }
  e_.Close();
}

void TiledGenerator::OpenFragmentElements(int i) {
  e_.Open("");
  DeclareMmaLane();
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", matmuls_[i].per_warp, "; ++j)"));
  DeclareMmaTile(i);
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 4; ++h)");
  e_.Line("const int r = m0 + g + 8 * (h / 2);");
}

void TiledGenerator::CloseFragmentElements() {
  e_.Close();
  e_.Close();
  e_.Close();
}

std::string TiledGenerator::FragmentSums(int i) const {
  return absl::StrCat("d", i, "[j][h]", matmuls_[i].paired ? absl::StrCat(" + d", i, "b[j][h]") : "");
}

void TiledGenerator::EmitMmaFlush(int i) {
  const MatmulPlan& plan = matmuls_[i];
  const int target = fused_into_[i];
  const std::string part = FlushScratch();
  const int64_t group = plan.m16s * 16 * plan.cols;  // floats of a k group's sums
  const std::string sums = FragmentSums(i);
  if (plan.k_groups == 1) {
    // Each element's sums are in one lane's fragments: added straight into
    // the tile, with no scratch and no barriers of their own (gated_mlp_bs8:
    // four of the seven after its loop).
    e_.Linef("// x", target, " += x", i, "'s tensor-core sums, each lane its fragments' elements");
    Read(target, Spread::kOther);
    OpenFragmentElements(i);
    e_.Linef(plan.rows % 16 == 0 ? "" : absl::StrCat("if (r < ", plan.rows, ") "), Buffer(target), "[r * ",
             plan.cols, " + v * 8 + t2 + h % 2] += ", sums, ";");
    CloseFragmentElements();
    Wrote(target, Spread::kOther);
    return;
  }
  e_.Linef("// x", target, " += x", i, "'s tensor-core sums: fragments to the scratch, k groups added in order");
  Sync();  // the scratch may hold another product's sums
  e_.Open("");
  DeclareMmaLane();
  e_.Linef("float* const part = ", part, " + ", MmaGroup(i), " * ", group, ";");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int j = 0; j < ", plan.per_warp, "; ++j)"));
  DeclareMmaTile(i);
  e_.Line("#pragma unroll");
  e_.Linef("for (int h = 0; h < 4; ++h) part[(m0 + g + 8 * (h / 2)) * ", plan.cols, " + v * 8 + t2 + h % 2] = ",
           sums, ";");
  e_.Close();
  e_.Close();
  Sync();
  e_.Open(absl::StrCat("for (int c = threadIdx.x; c < ", plan.rows * plan.cols, "; c += ", b_.threads, ")"));
  e_.Line("float sum = 0.0f;");
  e_.Linef("for (int q = 0; q < ", plan.k_groups, "; ++q) sum += ", part, "[q * ", group, " + c];");
  e_.Linef(Buffer(target), "[c] += sum;");
  e_.Close();
  Wrote(target, Spread::kOther);
}

void TiledGenerator::EmitDirectMatmul(int i) {
  const TileOp& op = b_.tile_ops[i];
  const MatmulPlan& plan = matmuls_[i];
  if (plan.mma) return EmitMmaMatmul(i);
  if (plan.dot) return EmitDotMatmul(i);
  const int a = op.args[0], bm = op.args[1];
  const InputPlan& in = inputs_[bm];
  if (!plan.a_ring) Read(a, Spread::kOther);
  e_.Linef("// x", i, " = ", ugraph::TileOpText(op), ", summed into x", fused_into_[i],
           " after the loop: this thread's B vectors times A's column", plan.a_ring ? " (from its ring)" : "",
           ", in registers");
  const std::string a_value = DirectA(i, "kk");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int it = 0; it < ", in.per_thread, "; ++it)"));
  e_.Linef("const int l = threadIdx.x + it * ", b_.threads, ", kk = l / ", plan.vectors, ";");
  // Only in-range k: A's tail may hold anything (B's is zero).
  const bool ragged = in.tasks % b_.threads != 0;
  e_.Open(absl::StrCat("if (", ragged ? absl::StrCat("l < ", in.tasks, " && ") : "", "kk < ",
                       Length(RowAxis(bm)), ")"));
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
    if (static_cast<int>(i) == flash_.pv) {
      EmitFlashFlush();
      continue;
    }
    if (!fragment_.products.empty() &&
        std::find(fragment_.products.begin(), fragment_.products.end(), static_cast<int>(i)) !=
            fragment_.products.end()) {
      if (static_cast<int>(i) == fragment_.products[0]) EmitFragmentEpilogue();
      continue;
    }
    if (plan.mma) {
      EmitMmaFlush(static_cast<int>(i));
      continue;
    }
    if (plan.dot) {
      EmitDotFlush(static_cast<int>(i));
      continue;
    }
    const int target = fused_into_[i];
    const int64_t width = inputs_[b_.tile_ops[i].args[1]].width;
    const std::string part = FlushScratch();
    const int64_t lanes = SharingLanes(plan.vectors);
    if (lanes > 1) {
      // Thread t holds columns (t % vectors) * width ...: the lanes of a
      // warp 32 / vectors apart hold the same ones. Their sums by
      // shuffles, then the warps', in warp order, from the scratch: two
      // barriers in all, not two a row and a serial sum over the threads
      // (lora_r16 on an H100: 6.7 us, from 7.4).
      e_.Linef("// x", target, " += the threads' sums of x", i, ": a warp's lanes that hold the same columns by ",
               "shuffles, then the warps in order");
      e_.Line("#pragma unroll");
      e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
      e_.Line("#pragma unroll");
      e_.Open(absl::StrCat("for (int j = 0; j < ", width, "; ++j)"));
      for (int64_t d = plan.vectors; d < 32; d *= 2) {
        e_.Linef("d", i, "[m][j] += __shfl_xor_sync(0xffffffffu, d", i, "[m][j], ", d, ");");
      }
      e_.Close();
      e_.Close();
      Sync();  // the scratch may hold other sums
      // A warp's sums of row m: a row of the vectors' width each (the
      // last vector's may pass the columns).
      const int64_t pitch = plan.vectors * width;
      e_.Open(absl::StrCat("if ((threadIdx.x & 31) < ", plan.vectors, ")"));
      e_.Line("#pragma unroll");
      e_.Open(absl::StrCat("for (int m = 0; m < ", plan.rows, "; ++m)"));
      e_.Line("#pragma unroll");
      e_.Linef("for (int j = 0; j < ", width, "; ++j) ", part, "[((threadIdx.x >> 5) * ", plan.rows, " + m) * ", pitch,
               " + (threadIdx.x & 31) * ", width, " + j] = d", i, "[m][j];");
      e_.Close();
      e_.Close();
      Sync();
      e_.Open(absl::StrCat("for (int c = threadIdx.x; c < ", plan.rows * plan.cols, "; c += ", b_.threads, ")"));
      e_.Linef("const int m = c / ", plan.cols, ", col = c % ", plan.cols, ";");
      e_.Line("float sum = 0.0f;");
      e_.Line("#pragma unroll");
      e_.Linef("for (int w = 0; w < ", b_.threads / 32, "; ++w) sum += ", part, "[(w * ", plan.rows, " + m) * ", pitch,
               " + col];");
      e_.Linef(Buffer(target), "[c] += sum;");
      e_.Close();
      Wrote(target, Spread::kOther);
      continue;
    }
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
    Wrote(target, Spread::kOther);
  }
}

int64_t TiledGenerator::SharingLanes(int64_t vectors) { return vectors < 32 && 32 % vectors == 0 ? 32 / vectors : 1; }

}  // namespace kiln::codegen::tiled_internal
