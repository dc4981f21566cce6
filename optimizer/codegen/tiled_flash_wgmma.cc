// Hopper's warpgroup products on the flash path (FlashPlan::wgmma): which
// kernels take them, and a step's product by wgmma with the mma.sync form
// under #else.
#include <algorithm>
#include <functional>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

bool TiledGenerator::FlashWgmma() const {
  // A group of 4 warps takes an m64 product: every warp in the flash code,
  // all of O's columns, and all of the step's keys or, with groups of
  // warps, its group's: each group then one warpgroup (4 slabs, one a
  // warp), whose keys start on a K-major 8-row group or an MN-major panel.
  if (flash_.keys_split || flash_.cols_split || b_.threads % 128 != 0 || FlashWarpsIdle()) return false;
  const bool grouped = flash_.groups > 1;
  if (grouped && (matmuls_[flash_.scores].m16s != 4 || flash_.warp_slabs != 1 || matmuls_[flash_.pv].b_rows)) {
    return false;
  }
  if (grouped && !matmuls_[flash_.scores].b_rows && FlashColumns() % 8 != 0) return false;
  // The scores' depth whole at every step (no tail to leave out).
  const MatmulPlan& s = matmuls_[flash_.scores];
  if (RowAxis(b_.tile_ops[flash_.scores].args[1]).source != TileAxis::Source::kFull || s.depth % 16 != 0) {
    return false;
  }
  for (const int mm : {flash_.scores, flash_.pv}) {
    const MatmulPlan& plan = matmuls_[mm];
    const DType dtype = b_.tile_ops[mm].dtype;
    if ((dtype != DType::kF16 && dtype != DType::kBF16) || plan.b_tile) return false;
    if (plan.b_scale >= 0 && !ScalesFlashScores(mm)) return false;  // B's fragments scaled, not the scores
    // B's ring: rows of 8 or 16 vectors (128 or 256 bytes: one or two
    // panels), swizzled, one row per k (MN-major) or per n (K-major, B by
    // rows), the other axes of one.
    const InputPlan& in = inputs_[BInput(mm)];
    const int64_t rv = in.row_vectors();
    if (!in.ring || !in.swizzle || in.dtype != dtype || (rv != 8 && rv != 16) || in.width != 8) return false;
    int64_t wide = 0;
    for (size_t d = 0; d < in.task_sizes.size(); ++d) {
      wide += in.task_sizes[d] > 1 && in.order.back() != static_cast<int>(d);
    }
    if (wide > 1) return false;
    const int64_t n = plan.n8s * 8, rows = plan.b_rows ? n : plan.depth;
    const int64_t product_n = mm == flash_.scores ? FlashColumns() * 8 : n;
    if (in.tasks != rv * rows || (product_n != 32 && product_n != 64 && product_n != 128) ||
        (plan.b_rows ? plan.depth : n) != 8 * rv) {
      return false;
    }
  }
  return true;
}

void TiledGenerator::EmitFlashWgmma(int mm, const std::string& acc, int64_t chunks, const std::function<void()>& fill,
                                    const std::function<void()>& otherwise, bool wait, const std::string& stage) {
  if (!flash_.wgmma) return otherwise();
  const MatmulPlan& plan = matmuls_[mm];
  const int b = BInput(mm);
  // A k chunk of 16 is 32 bytes along a K-major row (the next panel after
  // 4), 16 rows of 128 bytes MN-major; MN-major's N past 64 lies in the
  // next panels, LBO apart.
  const int64_t panel_bytes = 16 * inputs_[b].panel_stride();
  const std::string chunk_at = !plan.b_rows            ? "2048u * c"
                               : inputs_[b].panels ? absl::StrCat("c / 4 * ", panel_bytes, "u + c % 4 * 32u")
                                                   : "32u * c";
  const std::string lbo = plan.b_rows || !inputs_[b].panels ? "" : absl::StrCat(", ", panel_bytes);
  // With groups, group kg's keys: its panels where they lie along B's
  // rows (MN-major scores), else its rows of 128 bytes in each panel
  // (K-major scores, or P@V's k).
  const bool scores = mm == flash_.scores;
  const int64_t keys = FlashColumns() * 8, n = scores ? keys : plan.n8s * 8;
  std::string group_at;
  if (flash_.groups > 1) {
    const int64_t bytes = scores && !plan.b_rows ? keys / 64 * panel_bytes : keys * 128;
    group_at = absl::StrCat(" + kg * ", bytes, "u");
  }
  e_.Line("#if KILN_WGMMA");
  e_.Open("");
  const auto fence_accumulators = [&] {
    OpenFlashSlabs();
    e_.Linef("wgmma_fence_operands<", n / 2, ">(&", acc, "[sl][0][0]);");
    e_.Close();
  };
  e_.Linef("const unsigned bw = shared_address(ring", b, ") + 16u * (", stage, " * ", inputs_[b].tasks, ")", group_at,
           ";  // B's stage", group_at.empty() ? "" : ", the group's keys");
  // Every chunk's A first: a product reads its A registers after it is
  // issued, so none may be written again before the wait.
  e_.Linef("unsigned fw[", chunks, "][", flash_.warp_slabs, "][4];");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
  fill();
  e_.Linef("for (int sl = 0; sl < ", flash_.warp_slabs,
           "; ++sl) for (int h = 0; h < 4; ++h) fw[c][sl][h] = fa[sl][h];");
  e_.Close();
  fence_accumulators();
  e_.Line("wgmma_fence();");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
  OpenFlashSlabs();
  e_.Linef("wgmma_m64k16<", n, ", ", b_.tile_ops[mm].dtype == DType::kBF16 ? "true" : "false", ", ",
           plan.b_rows ? 0 : 1, ">(&", acc, "[sl][0][0], fw[c][sl], wgmma_descriptor(bw + ", chunk_at, ", 1024",
           lbo, "));");
  e_.Close();
  e_.Close();
  if (wait) {
    e_.Line("wgmma_commit_and_wait();");
    fence_accumulators();
  } else {
    e_.Line("wgmma_commit();  // in flight until EmitFlashWgmmaWait's wait");
  }
  e_.Close();
  e_.Line("#else");
  otherwise();
  e_.Line("#endif");
}

void TiledGenerator::EmitFlashWgmmaWait(int mm, const std::string& acc, int pending) {
  const int64_t n = mm == flash_.scores ? FlashColumns() * 8 : matmuls_[mm].n8s * 8;
  e_.Line("#if KILN_WGMMA");
  e_.Line(pending == 0 ? "wgmma_wait_all();" : absl::StrCat("wgmma_wait<", pending, ">();"));
  OpenFlashSlabs();
  e_.Linef("wgmma_fence_operands<", n / 2, ">(&", acc, "[sl][0][0]);");
  e_.Close();
  e_.Line("#endif");
}

bool TiledGenerator::FlashPipelineable() const {
  // One slab a warp, one group, and a ring of 3 stages or more (it runs
  // one step less ahead); a fold under the scores' products only where
  // the scores run a step ahead (FoldAhead).
  if (!flash_.wgmma || flash_.groups != 1 || flash_.warp_slabs != 1 || stages_ < 3) return false;
  return FlashPairsB(flash_.pv, FlashOColumns()) && (DeferredScaleFold() < 0 || AheadRegistersFit());
}

bool TiledGenerator::FlashPipelined() const { return FlashPipelineable() && LeanLoop(); }

bool TiledGenerator::AheadRegistersFit() const {
  // The next step's scores beside this step's and O in at most 96
  // registers a thread: head dim 128's O (64) with both (32 each) made
  // causal_prefill's kernel spill at 255 registers (H100, hand-timed: 411
  // us against 404 pipelined without them; the bench 416 against 388).
  const int64_t floats = 4 * flash_.warp_slabs * (2 * FlashColumns() + FlashOColumns());
  return stages_ >= 4 && floats <= 96;
}

bool TiledGenerator::FlashAheadFits() const { return FlashPipelineable() && AheadRegistersFit(); }

// Step j's scores are done when it starts (`sc`); it issues step j - 1's
// P@V, then step j + 1's scores into `sa` (K from the next stage), runs its
// softmax under both, waits for P@V alone (wgmma_wait<1>), packs P, then
// waits for the scores. The loop is unrolled twice so that the two score
// arrays trade places (scores0/scores1: a copy between them cost 0.8 us of
// gqa_bs8's 19.7 on an H100); the first step's scores come before the loop
// (EmitFlashScoresPrologue), and each step waits for the next step's
// copies. Needs a ring of 4 stages or more (P@V's stage, the step's, the
// next's, and copies in flight).
bool TiledGenerator::FlashScoresAhead() const { return FlashAheadFits() && LeanLoop(); }

int64_t TiledGenerator::RingAhead() const {
  return FlashPingPong() ? stages_ - 3 : FlashPipelined() ? stages_ - 2 : stages_ - 1;
}

int TiledGenerator::FoldAhead() const {
  // (Plan asks before LeanLoop can: the scales' tile is doubled wherever
  // the registers fit.)
  return DeferredScaleFold() >= 0 && FlashAheadFits() ? matmuls_[flash_.scores].b_scale : -1;
}

std::string TiledGenerator::FoldAheadHalf(const std::string& step) const {
  const int scales = matmuls_[flash_.scores].b_scale;
  return absl::StrCat(Buffer(scales), " + (", step, " & 1) * ", tiles_[scales].padded_floats());
}

void TiledGenerator::EmitFoldAhead(const std::string& step, const std::string& stage) {
  // The fold reads `stage` and writes its scales' tile: both names stand
  // for the given step's here. No barrier follows: the half it writes is
  // read after the barrier that starts the next step (or the loop), and
  // was last read before the one that started this step.
  const int fold = DeferredScaleFold(), scales = matmuls_[flash_.scores].b_scale;
  e_.Linef("// x", scales, " for step ", step, " (FoldAhead): folded from its stage into the half of x", scales,
           " for its parity");
  e_.Open("");
  e_.Linef("const int fold_stage = ", stage, ";");
  e_.Linef("float* const fold_half = ", FoldAheadHalf(step), ";");
  e_.Open("");
  e_.Line("const int stage = fold_stage;");
  e_.Linef("float* const ", Buffer(scales), " = fold_half;");
  const std::map<int, Spread> dirty = dirty_;
  const bool wrote = step_wrote_;
  EmitReduce(fold);
  dirty_ = dirty;
  step_wrote_ = wrote;
  e_.Close();
  e_.Close();
}

int64_t TiledGenerator::registers() const {
  return registers_ + (FlashScoresAhead() ? 4 * flash_.warp_slabs * FlashColumns() : 0);
}

void TiledGenerator::EmitFlashScoresPrologue() {
  const int64_t slabs = flash_.warp_slabs, sn = FlashColumns();
  e_.Linef("float scores0[", slabs, "][", sn, "][4] = {}, scores1[", slabs, "][", sn,
           "][4];  // a whole step's scores and the next one's (FlashScoresAhead)");
  e_.Open("if (lean_end > step_begin)");
  e_.Linef("// the first whole step's x", flash_.scores, ": its copies landed and visible to every warp");
  e_.Linef("copy_async_wait<", RingAhead() - 1, ">();");
  e_.Line("#if KILN_WGMMA");
  e_.Line("fence_async_shared();");
  e_.Line("#endif");
  Sync();
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  DeclareFlashOffsets(flash_.scores, sn, FlashScoresFirst());
  EmitFlashScores("scores0", /*wait=*/true, "0");
  if (FoldAhead() >= 0) EmitFoldAhead("step_begin", "0");
  CloseFlashWarps();
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitFlashPreviousPv() {
  e_.Linef("// the previous whole step's x", flash_.pv, " (its P in pp, V in stage pstage; zeros at the first, ",
           "which add nothing), under the scores' products");
  EmitFlashPv([&] {
    e_.Linef("unsigned fa[", flash_.warp_slabs, "][4];");
    OpenFlashSlabs();
    e_.Line("for (int h = 0; h < 4; ++h) fa[sl][h] = pp[sl][c][h];");
    e_.Close();
  }, "", /*wait=*/false, "pstage");
}

void TiledGenerator::EmitFlashPipelineDrain() {
  e_.Open("if (lean_end > step_begin)");
  DeclareMmaLane();
  OpenFlashWarps();
  DeclareFlashOffsets(flash_.pv, FlashOColumns(), FlashOFirst());
  EmitFlashPreviousPv();
  EmitFlashWgmmaWait(flash_.pv, absl::StrCat("o", flash_.pv));
  CloseFlashWarps();
  e_.Close();
}

int TiledGenerator::DeferredScaleFold() const {
  if (!flash_.wgmma || flash_.pv < 0 || !ScalesFlashScores(flash_.scores) || FlashWarpsIdle()) return -1;
  const int scale = matmuls_[flash_.scores].b_scale, scaled_b = b_.tile_ops[flash_.scores].args[1];
  // Nothing else may read the scales before the step (in op order).
  for (size_t r = 0; r < b_.tile_ops.size(); ++r) {
    const std::vector<int>& args = b_.tile_ops[r].args;
    const bool reads = std::find(args.begin(), args.end(), scale) != args.end();
    if (reads && needed_[r] && static_cast<int>(r) != scaled_b && epilogue_of_[r] < 0) return -1;
  }
  for (size_t i = 0; i < b_.tile_ops.size(); ++i) {
    const bool writes = static_cast<int>(i) == scale || epilogue_end_[i] == scale;
    if (writes && b_.tile_ops[i].kind == TileOp::Kind::kReduceSum && ring_chain_[b_.tile_ops[i].args[0]] >= 0 &&
        phase_[i] == Phase::kLoop) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace kiln::codegen::tiled_internal
