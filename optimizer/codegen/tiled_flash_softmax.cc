// A flash step's softmax once its scores are done (tiled_flash.cc issues
// them): the rows' maxes and the factor the sums so far take, the
// exponentials and their row sums, and O brought to the new max; then P
// packed for the next step's P@V where the step is pipelined, else P@V.
#include <functional>

#include "optimizer/codegen/tiled_generator.h"

namespace kiln::codegen::tiled_internal {

void TiledGenerator::EmitFlashAfterScores(bool piped, bool ahead) {
  const MatmulPlan& s = matmuls_[flash_.scores];
  const TileOp& pv_op = b_.tile_ops[flash_.pv];
  const std::string keys = Length(ColAxis(flash_.exp));
  const int64_t sn = FlashColumns(), slabs = flash_.warp_slabs;
  const std::string first = FlashScoresFirst();
  const std::string col0 = flash_.keys_split ? "warp * 16 + "
                           : flash_.groups > 1 ? absl::StrCat("kg * ", sn * 8, " + ")
                                               : "";
  if (ScalesFlashScores(flash_.scores)) {
    // B's columns scaled (K's rows normalized, QK-norm): each score times
    // its column's scale, which commutes with the product. Scaling B's
    // fragments took five instructions an element (two widenings, two
    // multiplies, a pack), each k chunk again; this takes one a score.
    e_.Linef("// x", flash_.scores, "'s columns times their scales (x", s.b_scale, ")");
    OpenFlashSlabs();
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int v = 0; v < ", sn, "; ++v)"));
    const std::string scales = ahead && FoldAhead() >= 0 ? absl::StrCat("(", FoldAheadHalf("step"), ")")
                                                         : Buffer(s.b_scale);
    e_.Linef("const float* const bs = ", scales, " + (", first, " + v) * 8 + t2;");
    e_.Line("#pragma unroll");
    e_.Line("for (int h = 0; h < 4; ++h) sc[sl][v][h] *= bs[h & 1];");
    e_.Close();
    e_.Close();
  }
  // 2. The rows' max over this step's columns (a quad holds a row), the
  // running max and the factor the sums so far take.
  // Columns past the step's keys (the last step's tail) are left out; a
  // full step, every step but that one, skips the compares.
  // Under a causal mask a step is full where it lies wholly on the kept
  // side for the warp's rows: its last key against the warp's first row.
  std::string full = absl::StrCat(keys, " == ", s.cols);
  const std::string col = absl::StrCat(col0, "v * 8 + t2 + (h & 1)");
  std::string in_range = absl::StrCat(col, " < ", keys);
  if (b_.tile_ops[flash_.exp].mask.on()) {
    absl::StrAppend(&full, " && ", MaskKeeps(flash_.exp, "m0", absl::StrCat(col0, sn * 8 - 1)));
    absl::StrAppend(&in_range, " && ", MaskKeeps(flash_.exp, "(m0 + 16 * sl + g + 8 * (h >> 1))", col));
  }
  // (`in_range` empty: every column is.)
  const auto by_fullness = [&](const std::function<void(const std::string& in_range)>& emit) {
    e_.Open(absl::StrCat("if (", full, ")"));
    emit("");
    e_.Close();
    e_.Open("else");
    emit(in_range);
    e_.Close();
  };
  // A row's values into `into`[sl][h] (h: rows g and g + 8) by `op`, in a
  // tree: as a chain, 2 sn dependent ops a row, with two warps a scheduler
  // to hide their latency (H100, causal_prefill: 425.0 -> 421.3 us).
  const auto row_tree = [&](const std::string& op, const std::string& into) {
    OpenFlashSlabs();
    e_.Line("#pragma unroll");
    e_.Open("for (int h = 0; h < 2; ++h)");
    e_.Linef("float part[", sn, "];");
    e_.Line("#pragma unroll");
    e_.Linef("for (int v = 0; v < ", sn, "; ++v) part[v] = ", op, "(sc[sl][v][2 * h], sc[sl][v][2 * h + 1]);");
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int w = 1; w < ", sn, "; w *= 2)"));
    e_.Line("#pragma unroll");
    e_.Linef("for (int v = 0; v + w < ", sn, "; v += 2 * w) part[v] = ", op, "(part[v], part[v + w]);");
    e_.Close();
    e_.Linef(into, "[sl][h] = ", op, "(", into, "[sl][h], part[0]);");
    e_.Close();
    e_.Close();
  };
  e_.Linef("float top[", slabs, "][2];");
  OpenFlashSlabs();
  e_.Line("top[sl][0] = top[sl][1] = no_shift();");
  e_.Close();
  by_fullness([&](const std::string& in_range) {
    if (in_range.empty()) return row_tree("fmaxf", "top");
    OpenFlashSlabs();
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int v = 0; v < ", sn, "; ++v)"));
    e_.Line("#pragma unroll");
    e_.Linef("for (int h = 0; h < 4; ++h) if (", in_range, ") top[sl][h >> 1] = fmaxf(top[sl][h >> 1], sc[sl][v][h]);");
    e_.Close();
    e_.Close();
  });
  e_.Linef("float factor[", slabs, "][2], shift_log2[", slabs, "][2];");
  OpenFlashSlabs();
  e_.Line("#pragma unroll");
  e_.Open("for (int h = 0; h < 2; ++h)");
  e_.Line("const float after = fmaxf(run_max[sl][h], quad_max(top[sl][h]));");
  e_.Line("factor[sl][h] = shift_rescale(run_max[sl][h], after);");
  e_.Line("run_max[sl][h] = after;");
  e_.Line("run_sum[sl][h] *= factor[sl][h];");
  e_.Line("shift_log2[sl][h] = log2_shift(after);");
  e_.Close();
  // Once a row's max settles its factor is 1: the warp skips the
  // products where none of its rows' maxes moved (a vote; the warp's lanes
  // all run the step). Pipelined, after the last step's P@V is done.
  const auto rescale_o = [&] {
    e_.Open("if (__any_sync(0xffffffffu, factor[sl][0] != 1.0f || factor[sl][1] != 1.0f))");
    e_.Line("#pragma unroll");
    e_.Linef("for (int v = 0; v < ", FlashOColumns(), "; ++v) for (int h = 0; h < 4; ++h) o", flash_.pv,
             "[sl][v][h] *= factor[sl][h >> 1];");
    e_.Close();
  };
  if (!piped) rescale_o();
  e_.Close();
  // 3. P = exp(S - max), zero past the step's columns; the row sums.
  by_fullness([&](const std::string& in_range) {
    OpenFlashSlabs();
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int v = 0; v < ", sn, "; ++v)"));
    e_.Line("#pragma unroll");
    e_.Open("for (int h = 0; h < 4; ++h)");
    const std::string exp = "stable_exp_log2(sc[sl][v][h], shift_log2[sl][h >> 1])";
    e_.Linef("const float pe = ", in_range.empty() ? exp : absl::StrCat(in_range, " ? ", exp, " : 0.0f"), ";");
    e_.Line("sc[sl][v][h] = pe;");
    e_.Close();
    e_.Close();
    e_.Close();
  });
  row_tree("op_add", "run_sum");
  // P packed into `into` (a slab's A fragment of k chunk c): S's
  // fragments, paired along k, are P@V's A fragments.
  const std::string pack = absl::StrCat("pack_", DTypeSuffix(pv_op.dtype), "x2");
  const auto pack_p = [&](const std::string& into) {
    e_.Linef(into, "[0] = ", pack, "(sc[sl][2 * c][0], sc[sl][2 * c][1]);");
    e_.Linef(into, "[1] = ", pack, "(sc[sl][2 * c][2], sc[sl][2 * c][3]);");
    e_.Linef(into, "[2] = ", pack, "(sc[sl][2 * c + 1][0], sc[sl][2 * c + 1][1]);");
    e_.Linef(into, "[3] = ", pack, "(sc[sl][2 * c + 1][2], sc[sl][2 * c + 1][3]);");
  };
  if (piped) {
    // 4. The last step's P@V done (the next step's scores may still run):
    // O to this step's max, and P for the next step's P@V (the pipeline's
    // drain after the loop takes the last).
    EmitFlashWgmmaWait(flash_.pv, absl::StrCat("o", flash_.pv), /*pending=*/ahead ? 1 : 0);
    OpenFlashSlabs();
    rescale_o();
    e_.Line("#pragma unroll");
    e_.Open(absl::StrCat("for (int c = 0; c < ", sn / 2, "; ++c)"));
    pack_p("pp[sl][c]");
    e_.Close();
    e_.Close();
    // The next step's fold (FoldAhead) last, under the next scores'
    // products: it needs only its stage. (Before the softmax it held the
    // softmax back: qknorm_gqa_bs8's kernel on the H100 30.0 us, here
    // 28.7; without the fold 25.0.)
    if (ahead && FoldAhead() >= 0) EmitFoldAhead("(step + 1)", absl::StrCat("(stage + 1) % ", stages_));
    e_.Line("pstage = stage;");
    if (ahead) EmitFlashWgmmaWait(flash_.scores, "sa");  // the next step's scores
    return;
  }
  // 4. O += P @ B2.
  EmitFlashPv([&] {
    e_.Linef("unsigned fa[", slabs, "][4];");
    OpenFlashSlabs();
    pack_p("fa[sl]");
    e_.Close();
  }, col0);
}

}  // namespace kiln::codegen::tiled_internal
