// The online softmax with each warp owning whole rows (FlashAttention-2's
// layout), for graph-defined blocks whose loop step is
//   S = A @ B1          a step's tensor-core product (PlanStepMma)
//   P = stable_exp(S)   along the loop axis (a running max)
//   O += P @ B2         a direct tensor-core product, rescaled by P's max
//   l += sum(P)         (optional) along the loop axis, rescaled too
// and the query tile has more than one m16 slab of rows, or fewer than 16
// rows and 16 keys a step per warp (decode: the warps share out the keys
// instead, FlashDecoding within the block, and combine after the loop).
// With more warps than slabs, the warps come in groups of one per slab,
// each group taking its share of every step's keys, and the groups
// combine after the loop. One slab whose O is wide (MLA's decode step over
// the latent: 16 heads, 256 columns) has the warps share out O's columns
// instead: each warp takes the step's S and P whole (the scores' products
// taken once a warp, which at one slab are few) and its own columns of O.
// The generic form takes five barriers a step (S to shared memory, the max, the
// exponentials, the products); here warp w keeps rows 16w..16w+15 of S, P, O,
// the running max and the row sum in registers, the max and sum of a row are a
// tree of the lane's part and a quad's shuffles, and S's accumulator fragments
// are P@V's A fragments (m16n8 C and m16k16 A share their rows and columns):
// the step takes only the ring's barrier. Where the tile has two slabs for each
// warp, warp w keeps rows 32w..32w+31 (FlashAttention-2's layout): each of K's
// and V's fragments, read from shared memory once, feeds two products, and the
// two slabs' chains of work interleave. After the loop the registers go to the
// accumulators' tiles (written whole: no zeros before the loop, and they may
// lie in the ring's space) and the shift rows, and what follows (the split
// combine, the division, the stores) is the generic code's.
//
// The numbers are the generic form's: S in f32, the running max and its
// factor from the same helpers (tiles/math.cuh), P rounded to the
// product's dtype for P@V and summed unrounded, columns past the step's
// keys left out of the max and the sum and zero in P. P's exps are taken
// in base 2 with the row's shift in log2 units (stable_exp_log2: one FFMA
// and an exp2 a score, within 1e-5 relative of stable_exp's at shifts up
// to 100).
#include <functional>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

void TiledGenerator::PlanFlash(const std::vector<int>& uses) {
  flash_ = FlashPlan{};
  const size_t n = b_.tile_ops.size();
  const int64_t warps = b_.threads / 32;
  for (size_t i = 0; i < n; ++i) {
    const int pv = static_cast<int>(i);
    const MatmulPlan& pv_plan = matmuls_[i];
    if (b_.tile_ops[i].kind != TileOp::Kind::kMatmul || !pv_plan.mma || !pv_plan.direct) continue;
    const int e = b_.tile_ops[i].args[0], out = fused_into_[i];
    const TileOp& exp = b_.tile_ops[e];
    if (exp.kind != TileOp::Kind::kStableExp || !ugraph::IsRunningMax(b_, tiles_, e)) continue;
    if (b_.tile_ops[out].rescale != e || !IsMatrix(e)) continue;
    const int s = exp.args[0];
    const MatmulPlan& s_plan = matmuls_[s];
    if (b_.tile_ops[s].kind != TileOp::Kind::kMatmul || !s_plan.step || uses[s] != 1) continue;
    if (exp.axis != static_cast<int>(tiles_[e].axes.size()) - 1) continue;  // along S's columns
    // A causal mask on S's rows and columns (a fragment's are the lane's).
    if (exp.mask.on() && exp.mask.row != exp.axis - 1) continue;
    // Rows: more than one slab, one or two per warp; or under 16 rows
    // (decode) whose step has 16 keys per warp: each warp then takes its
    // own keys. (Query tiles of 16 rows shared out that way ran at 20-300
    // us on gqa_bs1 and gqa_bs8, against 24 and 45 with 64 rows owned by
    // warps: each block reads all of K and V again.)
    const bool keys_split = s_plan.rows < 16 && s_plan.n8s == 2 * warps && pv_plan.n8s <= 16;
    // One slab, O's columns shared out: each warp takes all of S's
    // columns (up to 64 keys) and n8s / warps of O's. On an H100, MLA's decode step
    // (16 heads, latent 256, 32 keys a step) took ~3800 cycles a step in
    // the generic form's five barriers, S and P through shared memory.
    // Only where the block holds all the rows (MLA's heads): with the
    // rows over the grid, each block would read all of K and V again (as
    // the note above found for keys shared out).
    const TileAxis& s_rows = RowAxis(s);
    const bool rows_whole = s_rows.source != TileAxis::Source::kGrid ||
                            (s_rows.extent.is_concrete() && s_rows.extent.value() <= s_rows.size);
    const bool cols_split = !keys_split && rows_whole && s_plan.m16s == 1 && pv_plan.n8s % warps == 0 &&
                            s_plan.n8s <= 8 && !exp.mask.on();
    // Warps to spare over the slabs, where no SM gets a second block to
    // run in their place: groups of a warp per slab share out each step's
    // keys, two or more columns of tiles (16 keys) a group. (On an H100,
    // qknorm_gqa_bs1's 128 blocks: 17.3 -> 15.9 us, gqa_bs1's 11.9 either
    // way; with 4 blocks an SM, gqa_bs8's grouped kernels took 45 us where
    // blocks of 4 warps took 31.) With O's columns shared out, two groups
    // of warps each take half the step's keys, its warps O's columns
    // between them: a step's two halves run side by side instead of the
    // whole step's chain of products once a warp.
    const bool sm_to_itself = ugraph::LaunchedBlocks(b_) <= ugraph::kPlannedSms;
    int64_t groups = 1;
    if (!keys_split && sm_to_itself && flash_groups_allowed_) {
      if (cols_split) {
        if (warps % 2 == 0 && s_plan.n8s % 4 == 0 && pv_plan.n8s % (warps / 2) == 0) groups = 2;
      } else if (warps > s_plan.m16s && warps % s_plan.m16s == 0) {
        const int64_t g = warps / s_plan.m16s;
        if (s_plan.n8s % (2 * g) == 0) groups = g;
      }
    }
    // Two slabs a warp where the tile has two for each warp: S's and O's
    // fragments of both: 4 x (16 + 32) registers for 64 keys at head dim
    // 128 (FlashAttention-2's 128 x 64 tiles).
    const int64_t warp_slabs = !keys_split && s_plan.m16s == 2 * warps ? 2 : 1;
    if (!keys_split && !cols_split && (s_plan.rows <= 16 || s_plan.m16s > warp_slabs * warps)) continue;
    if (pv_plan.rows != s_plan.rows || s_plan.n8s % 2 != 0 || pv_plan.depth != s_plan.cols) continue;
    const int64_t o_n8s = cols_split ? pv_plan.n8s / (warps / groups) : pv_plan.n8s;
    if (!keys_split && s_plan.n8s + o_n8s > (warp_slabs == 1 ? 32 : 24)) continue;
    // P's readers: the product and at most one row sum into an
    // accumulator that follows the same max.
    int sum = -1;
    bool other = false;
    for (size_t r = 0; r < n; ++r) {
      const TileOp& op = b_.tile_ops[r];
      if (r == i || std::find(op.args.begin(), op.args.end(), e) == op.args.end()) continue;
      const bool row_sum = op.kind == TileOp::Kind::kReduceSum && op.axis == exp.axis && fused_into_[r] >= 0 &&
                           b_.tile_ops[fused_into_[r]].rescale == e && fused_scale_[r] == 1.0 && sum < 0;
      if (row_sum) {
        sum = static_cast<int>(r);
      } else {
        other = true;
      }
    }
    for (const ugraph::OutputSaver& o : b_.outputs) other = other || o.value == e || o.value == s;
    if (other) continue;
    flash_.scores = s;
    flash_.exp = e;
    flash_.pv = pv;
    flash_.sum = sum;
    flash_.keys_split = keys_split;
    flash_.cols_split = cols_split;
    flash_.groups = groups;
    flash_.warp_slabs = warp_slabs;
    const int a = b_.tile_ops[s].args[0], b1 = b_.tile_ops[s].args[1];
    // Q's fragments in registers: 4 a k chunk and slab, up to 32 for two
    // slabs (head dim 64); deeper, in shared memory, packed.
    const bool a_before =
        phase_[a] == Phase::kBefore && !s_plan.a_ring && RowAxis(b1).source == TileAxis::Source::kFull;
    flash_.wgmma = FlashWgmma();  // (then Q from shared memory: see FlashPlan::wgmma)
    if (flash_.wgmma) {
      // Rows past 128 bytes in panels of 128-byte rows: wgmma's atoms.
      for (const int mm : {s, pv}) {
        InputPlan& b = inputs_[BInput(mm)];
        b.panels = b.row_vectors() > 8;
      }
    }
    flash_.a_registers = a_before && (warp_slabs == 1 || s_plan.depth <= 64) && !flash_.wgmma;
    flash_.a_shared = a_before && !flash_.a_registers;
    registers_ += FlashOffsets(s, FlashColumns()) + FlashOffsets(pv, FlashOColumns());
    if (flash_.a_registers) registers_ += 4 * warp_slabs * s_plan.depth / 16;
    // The scores shared out by a group's warps, whole tiles of 8 keys each
    // (see FlashPlan::scores_shared; a named barrier a group). On an H200,
    // MLA's decode step at 64 keys a block, hand-edited: 64 products a warp
    // for its 16 x 32 scores -> 16, and 8.65 -> 8.40 us for the two kernels.
    flash_.scores_shared = cols_split && groups > 1 && groups < 16 && warp_slabs == 1 && !flash_.wgmma &&
                           s_plan.b_rows && s_plan.b_scale < 0 && FlashPairsB(s, FlashColumns()) &&
                           FlashColumns() % FlashGroupWarps() == 0;
    if (flash_.scores_shared) registers_ += 8 * FlashColumns() / FlashGroupWarps();
    if (warp_slabs == 1) {
      registers_ += 4 * (FlashColumns() + FlashOColumns()) + 8;
    } else {
      // The products' plans counted both slabs' S and O fragments; with
      // them the count passes what a thread may hold, and the compiler
      // fits them in its 255 (FlashAttention-2's kernels do): two blocks
      // of 4 warps an SM.
      registers_ = std::min<int64_t>(registers_ + 16, 255);
    }
    return;
  }
}

void TiledGenerator::DropFlashTiles() {
  if (flash_.pv < 0) return;
  // S and P live in registers: no tiles.
  needed_[flash_.scores] = needed_[flash_.exp] = false;
}

void TiledGenerator::DeclareFlash() {
  const bool q_from_bits = FlashQFromBits().q >= 0;
  if (q_from_bits) Sync();  // Q's words, stored by other threads (none where it follows a barrier)
  const int64_t slabs = flash_.warp_slabs;
  e_.Linef("float o", flash_.pv, "[", slabs, "][", FlashOColumns(), "][4] = {};  // x", flash_.pv,
           "'s accumulator fragments: this warp's ", 16 * slabs, " rows",
           flash_.cols_split ? absl::StrCat(", its ", 8 * FlashOColumns(), " columns") : "");
  e_.Linef("float run_max[", slabs, "][2], run_sum[", slabs, "][2];  // x", flash_.exp,
           "'s: rows g and g + 8 of each slab");
  OpenFlashSlabs();
  e_.Line("for (int h = 0; h < 2; ++h) run_max[sl][h] = no_shift(), run_sum[sl][h] = 0.0f;");
  e_.Close();
  if (!flash_.a_registers && !flash_.a_shared) return;
  const MatmulPlan& s = matmuls_[flash_.scores];
  const int a = b_.tile_ops[flash_.scores].args[0];
  const int64_t chunks = s.depth / 16;
  Read(a, Spread::kOther);
  if (q_from_bits && !flash_.a_registers) {
    return e_.Linef("const uint4* const qa = reinterpret_cast<const uint4*>(smem + ", flash_.a_offset, ");  // x",
                    flash_.scores, "'s A fragments, stored as x", a, " loaded");
  }
  if (flash_.a_registers) {
    e_.Linef("unsigned qa[", slabs, "][", chunks, "][4];  // x", flash_.scores, "'s A fragments (x", a,
             ", the same every step): this warp's ", 16 * slabs, " rows");
  } else {
    e_.Linef("uint4* const qa = reinterpret_cast<uint4*>(smem + ", flash_.a_offset, ");  // x",
             flash_.scores, "'s A fragments (x", a, ", the same every step), packed: [warp][slab][k chunk][lane]");
  }
  if (flash_.cols_split && flash_.a_registers) return DeclareSharedRowsA(a, chunks, q_from_bits);
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  OpenFlashSlabs();
  if (flash_.a_registers) {
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
    EmitMmaA(flash_.scores, "(m0 + 16 * sl)", "qa[sl][c]");
  } else {
    // (Each lane reads back only its own words: no barrier.)
    e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
    EmitMmaA(flash_.scores, "(m0 + 16 * sl)");
    e_.Linef("qa[", FlashSharedAIndex(), "] = make_uint4(fa[0], fa[1], fa[2], fa[3]);");
  }
  e_.Close();
  e_.Close();
  CloseFlashWarps();
  e_.Close();
}

std::string TiledGenerator::FlashScoresFirst() const {
  return flash_.keys_split ? "2 * warp" : flash_.groups > 1 ? absl::StrCat("kg * ", FlashColumns()) : "0";
}

void TiledGenerator::EmitFlashScoresA() {
  e_.Linef("unsigned fa[", flash_.warp_slabs, "][4];");
  OpenFlashSlabs();
  if (flash_.a_registers) {
    e_.Line("for (int h = 0; h < 4; ++h) fa[sl][h] = qa[sl][c][h];");
  } else if (flash_.a_shared) {
    e_.Linef("const uint4 q = qa[", FlashSharedAIndex(), "];");
    e_.Line("fa[sl][0] = q.x, fa[sl][1] = q.y, fa[sl][2] = q.z, fa[sl][3] = q.w;");
  } else {
    EmitMmaA(flash_.scores, "(m0 + 16 * sl)", "fa[sl]");
  }
  e_.Close();
}

void TiledGenerator::EmitFlashScores(const std::string& acc, bool wait, const std::string& stage) {
  const MatmulPlan& s = matmuls_[flash_.scores];
  const int k_tile = b_.tile_ops[flash_.scores].args[1];
  const int64_t sn = FlashColumns();
  EmitFlashWgmma(flash_.scores, acc, s.depth / 16, [this] { EmitFlashScoresA(); }, [&] {
    // (B by rows in pairs: each k chunk's offsets are known at compile time.)
    if (flash_.a_registers || (s.b_rows && FlashPairsB(flash_.scores, sn))) e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int c = 0; c * 16 < ", Length(RowAxis(k_tile)), "; ++c)"));
    EmitFlashScoresA();
    e_.Line("const int k = c * 16 + (lane & 15);");  // the lane's ldmatrix row
    EmitFlashProducts(flash_.scores, acc, sn, FlashScoresFirst(), "c * 16", stage);
    e_.Close();
  }, wait, stage);
}

void TiledGenerator::EmitFlashStep() {
  const MatmulPlan& s = matmuls_[flash_.scores];
  const TileOp& s_op = b_.tile_ops[flash_.scores];
  const TileOp& pv_op = b_.tile_ops[flash_.pv];
  const int k_tile = s_op.args[1];
  const bool split = flash_.keys_split;
  const int64_t groups = flash_.groups, sn = FlashColumns(), slabs = flash_.warp_slabs;
  if (!s.a_ring) Read(s_op.args[0], Spread::kOther);
  if (s.b_tile) Read(k_tile, Spread::kOther);
  const int deferred = DeferredScaleFold();
  const bool piped = lean_step_ && FlashPipelined();
  const bool ahead = piped && FlashScoresAhead();
  if (s.b_scale >= 0 && deferred < 0) Read(s.b_scale, Spread::kOther);
  const std::string rows = absl::StrCat(16 * slabs, " rows");
  e_.Linef("// x", flash_.scores, " = ", ugraph::TileOpText(s_op), ", x", flash_.exp, " = ",
           ugraph::TileOpText(b_.tile_ops[flash_.exp]), ", x", flash_.pv, " = ", ugraph::TileOpText(pv_op),
           flash_.sum >= 0 ? absl::StrCat(", x", flash_.sum, " = its row sum") : "",
           split              ? ": each warp 16 keys"
           : groups > 1 && flash_.cols_split
               ? absl::StrCat(": each warp ", rows, ", its group's ", sn * 8, " keys of ", s.cols, " and ",
                              8 * FlashOColumns(), " columns of O")
           : groups > 1       ? absl::StrCat(": each warp ", rows, " and its group's ", sn * 8, " keys of ", s.cols)
           : flash_.cols_split ? absl::StrCat(": each warp ", rows, " and ", 8 * FlashOColumns(), " columns of O")
                              : absl::StrCat(": each warp ", rows),
           ", in registers (no barrier)");
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  DeclareFlashOffsets(flash_.scores, sn, FlashScoresFirst());
  DeclareFlashOffsets(flash_.pv, FlashOColumns(), FlashOFirst());
  if (ping_pong_ != PingPong::kOff) {
    EmitFlashPingPongStep();
    CloseFlashWarps();
    e_.Close();
    return;
  }
  if (ahead) {
    // 1. S came with the step (sc, issued by the step before). The last
    // step's P@V, then the next step's S from the next stage (into sa),
    // run under this step's softmax (H100, gqa_bs8's kernel hand-edited:
    // 21.7 -> 19.0 us).
    EmitFlashPreviousPv();
    e_.Linef("// the next step's x", flash_.scores, " (past the loop's last step: not used)");
    OpenFlashSlabs();
    e_.Linef("for (int v = 0; v < ", sn, "; ++v) for (int h = 0; h < 4; ++h) sa[sl][v][h] = 0.0f;");
    e_.Close();
    EmitFlashScores("sa", /*wait=*/false, absl::StrCat("(stage + 1) % ", stages_));
  } else {
    // 1. S = A @ B1: the warp's rows, its columns; each of B's fragments
    // serves every slab.
    e_.Linef("float sc[", slabs, "][", sn, "][4] = {};");
    if (flash_.scores_shared) {
      EmitFlashScoresShared("stage");
    } else {
      EmitFlashScores("sc", /*wait=*/deferred < 0 && !piped, "stage");
    }
  }
  if (deferred >= 0 && !ahead) {
    // The scales' fold and its barrier while the scores' products run.
    EmitReduce(deferred);
    Read(s.b_scale, Spread::kOther);
    EmitFlashWgmmaWait(flash_.scores, "sc");
  }
  if (piped && !ahead) {
    // The last step's P@V behind the scores' products; the softmax below
    // runs while it does (on H100, causal_prefill's kernel 424.5 -> 403 us
    // hand-edited).
    EmitFlashPreviousPv();
    EmitFlashWgmmaWait(flash_.scores, "sc", /*pending=*/1);
  }
  EmitFlashAfterScores(piped, ahead);
  CloseFlashWarps();
  e_.Close();
}

void TiledGenerator::EmitFlashPv(const std::function<void()>& fill, const std::string& col0, bool wait,
                                 const std::string& stage) {
  const std::string o = absl::StrCat("o", flash_.pv);
  const int64_t chunks = FlashColumns() / 2;
  EmitFlashWgmma(flash_.pv, o, chunks, fill, [&] {
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int c = 0; c < ", chunks, "; ++c)"));
    fill();
    e_.Linef("const int k = ", col0, "c * 16 + (lane & 15);");
    EmitFlashProducts(flash_.pv, o, FlashOColumns(), FlashOFirst(), absl::StrCat("(", col0, "c * 16)"), stage);
    e_.Close();
  }, wait, stage);
}

void TiledGenerator::OpenFlashSlabs() {
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int sl = 0; sl < ", flash_.warp_slabs, "; ++sl)"));
}

int64_t TiledGenerator::FlashSharedAFloats() const {
  if (flash_.pv < 0) return 0;
  const int64_t chunks = matmuls_[flash_.scores].depth / 16;
  if (flash_.cols_split && flash_.a_registers) return 32 * chunks * 4;  // DeclareSharedRowsA
  return flash_.a_shared ? b_.threads * flash_.warp_slabs * chunks * 4 : 0;
}

std::string TiledGenerator::FlashSharedAIndex() const {
  return absl::StrCat("((warp * ", flash_.warp_slabs, " + sl) * ", matmuls_[flash_.scores].depth / 16,
                      " + c) * 32 + lane");
}

bool TiledGenerator::FlashAccumulator(int i) const {
  if (flash_.pv < 0 || flash_.keys_split) return false;
  return i == fused_into_[flash_.pv] || (flash_.sum >= 0 && i == fused_into_[flash_.sum]);
}

int64_t TiledGenerator::FlashColumns() const {
  return flash_.keys_split ? 2 : matmuls_[flash_.scores].n8s / flash_.groups;
}

int64_t TiledGenerator::FlashOColumns() const {
  const int64_t n8s = matmuls_[flash_.pv].n8s;
  return flash_.cols_split ? n8s / FlashGroupWarps() : n8s;
}

std::string TiledGenerator::FlashOFirst() const {
  if (!flash_.cols_split) return "0";
  const int64_t warps = FlashGroupWarps();
  return flash_.groups > 1 ? absl::StrCat("warp % ", warps, " * ", FlashOColumns())
                           : absl::StrCat("warp * ", FlashOColumns());
}

int64_t TiledGenerator::FlashGroupWarps() const {
  return flash_.cols_split ? b_.threads / 32 / flash_.groups : matmuls_[flash_.scores].m16s;
}

bool TiledGenerator::FlashWarpsIdle() const {
  return !flash_.keys_split && !flash_.cols_split && flash_.groups == 1 &&
         matmuls_[flash_.scores].m16s < b_.threads / 32;
}

void TiledGenerator::OpenFlashWarps() {
  const int64_t slabs = matmuls_[flash_.scores].m16s;
  if (FlashWarpsIdle()) e_.Open(absl::StrCat("if (warp < ", slabs, ")"));
  if (flash_.groups > 1 && flash_.cols_split) {
    e_.Linef("const int m0 = 0, kg = warp / ", FlashGroupWarps(), ";  // the one slab; the warp's group");
    return;
  }
  if (flash_.groups > 1) {
    e_.Linef("const int m0 = warp % ", slabs, " * 16, kg = warp / ", slabs, ";  // the warp's slab and group");
    return;
  }
  e_.Linef("const int m0 = ",
           flash_.keys_split || flash_.cols_split ? "0" : absl::StrCat("warp * ", 16 * flash_.warp_slabs),
           ";  // the warp's first row");
}

void TiledGenerator::CloseFlashWarps() {
  if (FlashWarpsIdle()) e_.Close();
}

bool TiledGenerator::ScalesFlashScores(int mm) const {
  return flash_.pv >= 0 && mm == flash_.scores && matmuls_[mm].b_scale >= 0;
}

bool TiledGenerator::FlashPairsB(int mm, int64_t count) const {
  // B by rows in pairs for the scores alone, whose k chunks start at the
  // step's first key (EmitFlashProducts reads chunk c there).
  return !matmuls_[mm].b_tile && count % 2 == 0 && (!matmuls_[mm].b_rows || mm == flash_.scores);
}

int64_t TiledGenerator::FlashRowsOffsets(int mm) const {
  return std::max<int64_t>(1, std::min<int64_t>(inputs_[BInput(mm)].row_vectors() / 2, 4));
}

int64_t TiledGenerator::FlashOffsets(int mm, int64_t count) const {
  if (!FlashPairsB(mm, count)) return 0;
  return matmuls_[mm].b_rows ? FlashRowsOffsets(mm) : count / 2;
}

void TiledGenerator::DeclareFlashOffsets(int mm, int64_t count, const std::string& first) {
  if (!FlashPairsB(mm, count)) return;
  const int b = BInput(mm);
  const int64_t rv = inputs_[b].row_vectors();
  // Shared-memory addresses: a step adds its stage's and k chunk's bytes,
  // which ptxas folds into ldmatrix's immediate where they are constants
  // (with int slot indices it worked each address out again: two
  // instructions an ldmatrix).
  const auto declare = [&](int64_t n, const std::string& what, const std::string& slot) {
    e_.Linef("unsigned bo", mm, "[", n, "];  // x", mm, "'s B", what);
    e_.Line("#pragma unroll");
    e_.Linef("for (int j = 0; j < ", n, "; ++j) bo", mm, "[j] = shared_address(ring", b, ") + 16u * ",
             SlotIndex(b, slot), ";");
  };
  if (matmuls_[mm].b_rows) {
    // Lane l gives key row l % 8 (+ 8 for lanes 16-31) at k vector 2 c +
    // l / 8 % 2. The swizzle takes the row's low bits only, so a column of
    // tiles further adds 8 rows' slots, and k chunk c + 4 adds 8 vectors'
    // (the next panel's) to chunk c's slot.
    const int64_t n = FlashRowsOffsets(mm);
    declare(n, absl::StrCat(" by rows: the lane's ldmatrix rows in stage 0, k chunks 0-", n - 1, " of keys 0-15"),
            absl::StrCat("((lane & 7) + (lane >> 4) * 8) * ", rv, " + 2 * j + ((lane >> 3) & 1)"));
    return;
  }
  declare(count / 2, ": the lane's ldmatrix rows in stage 0, rows 0-15",
          absl::StrCat("(lane & 15) * ", rv, " + ", first, " + 2 * j + (lane >> 4)"));
}

void TiledGenerator::EmitFlashProducts(int mm, const std::string& acc, int64_t count, const std::string& first,
                                       const std::string& k_rows, const std::string& stage) {
  const TileOp& op = b_.tile_ops[mm];
  const MatmulPlan& plan = matmuls_[mm];
  const std::string mma = absl::StrCat("mma_", DTypeSuffix(op.dtype));
  // Each B fragment into every slab's product.
  const auto into_slabs = [&](const std::vector<std::string>& products) {
    OpenFlashSlabs();
    for (const std::string& p : products) e_.Line(p);
    e_.Close();
  };
  e_.Line("#pragma unroll");
  // (B by rows, K stored as the cache holds it: a fragment per column of tiles.)
  if (!FlashPairsB(mm, count)) {
    e_.Open(absl::StrCat("for (int v = 0; v < ", count, "; ++v)"));
    EmitMmaB(mm, absl::StrCat("(", first, " + v)"));
    into_slabs({absl::StrCat(mma, "(", acc, "[sl][v], fa[sl], fb);")});
    e_.Close();
    return;
  }
  // Two columns of tiles per ldmatrix (lanes 16-31 address the second).
  const int b = BInput(mm);
  const InputPlan& in = inputs_[b];
  e_.Open(absl::StrCat("for (int v = 0; v < ", count, "; v += 2)"));
  e_.Line("unsigned fb[4];");
  if (plan.b_rows) {
    // k chunk c of B's rows (keys) from column of tiles `first` + v.
    e_.Linef("load_b_fragments_rows_x2(fb, ", FlashRowsAddress(mm, absl::StrCat(first, " + v"), stage), ");");
  } else {
    e_.Linef("load_b_fragments_trans_x2(fb, bo", mm, "[v / 2] + 16u * (", stage, " * ", in.tasks, " + ", k_rows, " * ",
             in.row_stride(), "));");
  }
  if (plan.b_scale >= 0 && !ScalesFlashScores(mm)) {
    e_.Open("");
    EmitScaleB(mm, "fb", absl::StrCat(first, " + v"));
    e_.Close();
    e_.Open("");
    EmitScaleB(mm, "(fb + 2)", absl::StrCat(first, " + v + 1"));
    e_.Close();
  }
  into_slabs({absl::StrCat(mma, "(", acc, "[sl][v], fa[sl], fb);"),
              absl::StrCat(mma, "(", acc, "[sl][v + 1], fa[sl], fb + 2);")});
  e_.Close();
}

std::string TiledGenerator::FlashRowsAddress(int mm, const std::string& tile, const std::string& stage) const {
  const InputPlan& in = inputs_[BInput(mm)];
  const int64_t n = FlashRowsOffsets(mm);
  const bool wraps = in.row_vectors() / 2 > n;
  return absl::StrCat("bo", mm, wraps ? absl::StrCat("[c % ", n, "]") : "[c]", " + 16u * (", stage, " * ", in.tasks,
                      " + (", tile, ") * ", 8 * in.row_stride(),
                      wraps ? absl::StrCat(" + c / ", n, " * ", 2 * n / 8 * in.panel_stride()) : "", ")");
}

void TiledGenerator::EmitFlashScoresShared(const std::string& stage) {
  const int k_tile = b_.tile_ops[flash_.scores].args[1];
  const int64_t sn = FlashColumns(), warps = FlashGroupWarps(), per = sn / warps;
  const std::string mma = absl::StrCat("mma_", DTypeSuffix(b_.tile_ops[flash_.scores].dtype));
  const std::string first = FlashScoresFirst();  // the group's first tile of the step's
  const std::string tile = absl::StrCat(first, " + warp % ", warps, " * ", per, " + v");
  e_.Linef("// the warp's ", per, " of its group's ", sn, " tiles of 8 keys over all of k (even and odd k chunks",
           " in two chains), then the group's from its warps");
  e_.Open("");
  e_.Linef("float own[2][", per, "][4] = {};");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int c = 0; c * 16 < ", Length(RowAxis(k_tile)), "; ++c)"));
  EmitFlashScoresA();
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int v = 0; v < ", per, "; ++v)"));
  e_.Line("unsigned fb[2];");
  e_.Linef("ldmatrix_x2(fb[0], fb[1], ", FlashRowsAddress(flash_.scores, tile, stage), ");");
  e_.Linef(mma, "(own[c & 1][v], fa[0], fb);");
  e_.Close();
  e_.Close();
  e_.Linef("float4* const shared_sc = reinterpret_cast<float4*>(scratch + ", flash_.scores_offset,
           ");  // [the group's tile][lane]");
  e_.Line("#pragma unroll");
  e_.Linef("for (int v = 0; v < ", per, "; ++v) shared_sc[(", tile, ") * 32 + lane] = make_float4(own[0][v][0] + ",
           "own[1][v][0], own[0][v][1] + own[1][v][1], own[0][v][2] + own[1][v][2], own[0][v][3] + own[1][v][3]);");
  e_.Linef("sync_warps(1 + kg, ", 32 * warps, ");  // the group's warps");
  e_.Line("#pragma unroll");
  e_.Open(absl::StrCat("for (int t = 0; t < ", sn, "; ++t)"));
  e_.Linef("const float4 y = shared_sc[(", first, " + t) * 32 + lane];");
  e_.Line("sc[0][t][0] = y.x, sc[0][t][1] = y.y, sc[0][t][2] = y.z, sc[0][t][3] = y.w;");
  e_.Close();
  e_.Close();
}

void TiledGenerator::EmitKeysSplitFlush() {
  const MatmulPlan& pv = matmuls_[flash_.pv];
  const int out = fused_into_[flash_.pv];
  const int64_t warps = b_.threads / 32, rows = pv.rows, cols = pv.cols;
  const std::string part = FlushScratch();
  // Scratch: each warp's running max and row sum of its 16 rows, then its
  // sums of the in-range rows.
  const auto max_of = [&](const std::string& w, const std::string& r) {
    return absl::StrCat(part, "[", w, " * 16 + ", r, "]");
  };
  const auto sum_of = [&](const std::string& w, const std::string& r) {
    return absl::StrCat(part, "[", warps * 16, " + ", w, " * 16 + ", r, "]");
  };
  const auto o_of = [&](const std::string& w, const std::string& r, const std::string& c) {
    return absl::StrCat(part, "[", warps * 32, " + (", w, " * ", rows, " + ", r, ") * ", cols, " + ", c, "]");
  };
  e_.Linef("// x", out, flash_.sum >= 0 ? absl::StrCat(", x", fused_into_[flash_.sum]) : "", " and x", flash_.exp,
           "'s running max: the warps' parts (each over its own keys) brought to the largest max and added");
  Sync();  // the scratch may hold other sums
  e_.Open("");
  DeclareMmaLane();
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 2; ++h)");
  e_.Line("const float total = quad_reduce<false>(run_sum[0][h]);");
  e_.Line("const int r = g + 8 * h;");
  e_.Open("if ((lane & 3) == 0)");
  e_.Linef(max_of("warp", "r"), " = run_max[0][h];");
  e_.Linef(sum_of("warp", "r"), " = total;");
  e_.Close();
  e_.Linef("if (r >= ", rows, ") continue;");
  e_.Line("#pragma unroll");
  e_.Linef("for (int v = 0; v < ", pv.n8s, "; ++v) for (int q = 0; q < 2; ++q) ", o_of("warp", "r", "v * 8 + t2 + q"),
           " = o", flash_.pv, "[0][v][2 * h + q];");
  e_.Close();
  e_.Close();
  Sync();
  Read(out, Spread::kOther);
  if (flash_.sum >= 0) Read(fused_into_[flash_.sum], Spread::kOther);
  OpenLinear(rows * cols);
  e_.Linef("const int r = l / ", cols, ", c = l % ", cols, ";");
  e_.Line("float top = no_shift(), o = 0.0f;");
  e_.Linef("for (int w = 0; w < ", warps, "; ++w) top = fmaxf(top, ", max_of("w", "r"), ");");
  e_.Linef("for (int w = 0; w < ", warps, "; ++w) o += ", o_of("w", "r", "c"), " * split_factor(", max_of("w", "r"),
           ", top);");
  e_.Linef(Buffer(out), "[r * ", cols, " + c] += o;");
  e_.Open("if (c == 0)");
  if (flash_.sum >= 0) {
    const TileInfo& sums = tiles_[fused_into_[flash_.sum]];
    e_.Line("float total = 0.0f;");
    e_.Linef("for (int w = 0; w < ", warps, "; ++w) total += ", sum_of("w", "r"), " * split_factor(", max_of("w", "r"),
             ", top);");
    e_.Linef(Buffer(fused_into_[flash_.sum]), "[", RowMajor(Sizes(sums), RowCoords(sums, "r")), "] += total;");
  }
  e_.Linef("shift", flash_.exp, "[", RowOf(flash_.exp, tiles_[out], RowCoords(tiles_[out], "r")), "] = top;");
  e_.Close();
  e_.Close();
  Wrote(out, Spread::kOther);
  if (flash_.sum >= 0) Wrote(fused_into_[flash_.sum], Spread::kOther);
}

void TiledGenerator::EmitFlashFlush() {
  if (flash_.keys_split) return EmitKeysSplitFlush();
  if (flash_.groups > 1) EmitFlashGroupMerge();
  const MatmulPlan& pv = matmuls_[flash_.pv];
  const int out = fused_into_[flash_.pv];
  e_.Linef("// x", out, flash_.sum >= 0 ? absl::StrCat(", x", fused_into_[flash_.sum]) : "", " and x", flash_.exp,
           "'s running max from the warps' registers", flash_.groups > 1 ? " (group 0's)" : "");
  Read(out, Spread::kOther);
  if (flash_.sum >= 0) Read(fused_into_[flash_.sum], Spread::kOther);
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  if (flash_.groups > 1) e_.Open("if (kg == 0)");
  OpenFlashSlabs();
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 2; ++h)");
  e_.Line("const float total = quad_reduce<false>(run_sum[sl][h]);");
  e_.Line("const int r = m0 + 16 * sl + g + 8 * h;");
  e_.Linef("if (r >= ", pv.rows, ") continue;");
  e_.Line("#pragma unroll");
  const std::string first = flash_.cols_split ? absl::StrCat("(", FlashOFirst(), " + v)") : "v";
  const std::string at = absl::StrCat("r * ", pv.cols, " + ", first, " * 8 + t2");
  const std::string o = absl::StrCat("o", flash_.pv, "[sl][v][2 * h");
  const bool direct = FlashPartialsDirect();  // to the workspace, 8 bytes a store
  e_.Linef("for (int v = 0; v < ", FlashOColumns(), "; ++v) ",
           direct ? absl::StrCat("*reinterpret_cast<float2*>(", FlushTarget(out), " + ", at, ") = make_float2(", o,
                                 "], ", o, " + 1]);")
                  : absl::StrCat("for (int q = 0; q < 2; ++q) ", Buffer(out), "[", at, " + q] = ", o, " + q];"));
  // (Every warp has the rows' max and sum: warp 0 writes them.)
  e_.Open(flash_.cols_split ? "if ((lane & 3) == 0 && warp == 0)" : "if ((lane & 3) == 0)");
  if (flash_.sum >= 0) {
    const TileInfo& sums = tiles_[fused_into_[flash_.sum]];
    e_.Linef(FlushTarget(fused_into_[flash_.sum]), "[", RowMajor(Sizes(sums), RowCoords(sums, "r")), "] = total;");
  }
  e_.Linef(FlushTarget(-1), "[", RowOf(flash_.exp, tiles_[out], RowCoords(tiles_[out], "r")), "] = run_max[sl][h];");
  e_.Close();
  e_.Close();
  e_.Close();
  if (flash_.groups > 1) e_.Close();
  CloseFlashWarps();
  e_.Close();
  if (direct) return;
  Wrote(out, Spread::kOther);
  if (flash_.sum >= 0) Wrote(fused_into_[flash_.sum], Spread::kOther);
}

int64_t TiledGenerator::FlashGroupScratch() const {
  // Per lane of each warp past group 0: its two rows' running maxes and
  // sums, and its P@V fragments.
  return (flash_.groups - 1) * FlashGroupWarps() * 32 * (4 + 4 * FlashOColumns());
}

void TiledGenerator::EmitFlashGroupMerge() {
  // A group's warps: one a slab, or O's columns shared out between them.
  const int64_t slabs = FlashGroupWarps(), lanes = (flash_.groups - 1) * slabs * 32, o_n8s = FlashOColumns();
  const std::string part = FlushScratch();
  // Field f of lane `at` (past group 0's warps) at part[f * lanes + at]: a
  // warp's lanes read and write consecutive floats.
  const auto field = [&](const std::string& f) { return absl::StrCat(part, "[(", f, ") * ", lanes, " + at]"); };
  e_.Linef("// x", flash_.pv, "'s fragments, x", flash_.exp, "'s running max",
           flash_.sum >= 0 ? absl::StrCat(" and x", flash_.sum, "'s sums") : "",
           ": each group's, over its keys, brought to group 0's warp of the same ",
           flash_.cols_split ? "columns" : "slab", " and lane");
  Sync();  // the scratch may hold other sums
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  e_.Open("if (kg > 0)");
  e_.Linef("const int at = (warp - ", slabs, ") * 32 + lane;");
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 2; ++h)");
  e_.Linef(field("h"), " = run_max[0][h];");
  e_.Linef(field("2 + h"), " = run_sum[0][h];");
  e_.Close();
  e_.Line("#pragma unroll");
  e_.Linef("for (int v = 0; v < ", o_n8s, "; ++v) for (int h = 0; h < 4; ++h) ", field("4 + v * 4 + h"), " = o",
           flash_.pv, "[0][v][h];");
  e_.Close();
  e_.Close();
  Sync();
  e_.Open("");
  DeclareMmaLane();
  OpenFlashWarps();
  e_.Open("if (kg == 0)");
  e_.Open(absl::StrCat("for (int q = 1; q < ", flash_.groups, "; ++q)"));
  e_.Linef("const int at = ((q - 1) * ", slabs, " + warp) * 32 + lane;");
  e_.Line("float mine[2], theirs[2];");
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 2; ++h)");
  e_.Linef("const float other = ", field("h"), ", top = fmaxf(run_max[0][h], other);");
  e_.Line("mine[h] = split_factor(run_max[0][h], top);");
  e_.Line("theirs[h] = split_factor(other, top);");
  e_.Linef("run_sum[0][h] = run_sum[0][h] * mine[h] + ", field("2 + h"), " * theirs[h];");
  e_.Line("run_max[0][h] = top;");
  e_.Close();
  e_.Line("#pragma unroll");
  e_.Linef("for (int v = 0; v < ", o_n8s, "; ++v) for (int h = 0; h < 4; ++h) o", flash_.pv, "[0][v][h] = o",
           flash_.pv, "[0][v][h] * mine[h >> 1] + ", field("4 + v * 4 + h"), " * theirs[h >> 1];");
  e_.Close();
  e_.Close();
  e_.Close();
}

}  // namespace kiln::codegen::tiled_internal
