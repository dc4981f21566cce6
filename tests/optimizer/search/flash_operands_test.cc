// How the flash step reads B (K for the scores, V for P@V) from the ring:
// ldmatrix at shared-memory addresses worked out before the loop, two
// columns of tiles at a time, whether K is given transposed or by rows.

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::CountSubstr;
using testing::ValueOrFail;

// The chosen kernel's loop (from its first step on).
std::string ChosenLoop(const FusedCase& c, codegen::KernelSource* source) {
  SearchOptions options;
  options.budget_seconds = 8;
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  EXPECT_TRUE(r.graph.has_value()) << r.report.ToString();
  if (!r.graph) return "";
  *source = ValueOrFail(codegen::GenerateKernel(*r.graph, 0));
  const size_t step = source->source.find("i64 step = step_begin;");
  EXPECT_NE(step, std::string::npos) << source->source;
  return step == std::string::npos ? "" : source->source.substr(step);
}

// Each of `needles` found in `text` after the one before it.
void ExpectInOrder(const std::string& text, const std::vector<std::string>& needles) {
  size_t at = 0;
  for (const std::string& needle : needles) {
    const size_t found = text.find(needle, at);
    ASSERT_NE(found, std::string::npos) << needle << " after offset " << at << " of\n" << text;
    at = found + needle.size();
  }
}

// The reads of K (given transposed) and V take the lane's address in stage
// 0 plus the stage's and the k chunk's bytes (known when unrolled): no
// swizzle and no slot index in the step. Rows 16 apart swizzle alike, in
// rings of 8 vectors a row (head dim 64) as of 16 (head dim 128).
TEST(FlashOperands, BIsReadAtAddressesWorkedOutBeforeTheProducts) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const FusedCase& c : {AttentionCase(2, 256, 64, 4096), AttentionCase(2, 128, 128, 1000)}) {
    SCOPED_TRACE(c.name);
    codegen::KernelSource source;
    const std::string loop = ChosenLoop(c, &source);
    EXPECT_THAT(loop, ::testing::HasSubstr("the lane's ldmatrix rows in stage 0, rows 0-15"));
    EXPECT_THAT(loop, ::testing::HasSubstr("] = shared_address(ring"));
    const std::string read = R"(load_b_fragments_trans_x2\(fb, bo[0-9]+\[v / 2\] \+ 16u \* \(stage \* [0-9]+ \+ )";
    EXPECT_THAT(loop, ::testing::ContainsRegex(read + R"(c \* 16 \* [0-9]+\)\);)"));
    EXPECT_THAT(loop, ::testing::ContainsRegex(read + R"(\((kg \* [0-9]+ \+ )?c \* 16\) \* [0-9]+\)\);)"));
    EXPECT_EQ(loop.find("load_b_fragments_trans_x2(fb, &"), std::string::npos) << "no ldmatrix from a slot index";
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
  }
}

// K stored by rows (a KV cache's layout; causal prefill's): its fragments
// come two columns of tiles an ldmatrix (no .trans) too. The swizzle
// repeats every 4 k chunks, so 4 lane addresses serve head dim 128 (a
// chunk 4 on adds 8 vectors, or a panel's where the ring is in panels for
// wgmma) and 4 serve head dim 64.
TEST(FlashOperands, KeysByRowsAreReadTwoColumnsOfTilesAtATime) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  struct Case {
    FusedCase c;
    int64_t head_dim;
  };
  for (const Case& k : {Case{RowKeysAttentionCase(2, 256, 64, 4096), 64},
                        Case{CausalAttentionCase(1, 2, 512, 128, 1024, DType::kBF16), 128}}) {
    const FusedCase& c = k.c;
    SCOPED_TRACE(c.name);
    codegen::KernelSource source;
    const std::string loop = ChosenLoop(c, &source);
    EXPECT_THAT(loop, ::testing::HasSubstr("'s B by rows: the lane's ldmatrix rows in stage 0, k chunks 0-3"));
    const std::string chunk = k.head_dim == 128 ? R"(\[c % 4\])" : R"(\[c\])";
    const bool panels = source.source.find("wgmma_m64") != std::string::npos;
    const std::string wrap = k.head_dim != 128 ? "" : panels ? R"( \+ c / 4 \* [0-9]+)" : R"( \+ c / 4 \* 8)";
    const std::string columns = R"(\((0|kg \* [0-9]+|2 \* warp) \+ v\) \* [0-9]+)";
    EXPECT_THAT(loop, ::testing::ContainsRegex(absl::StrCat(R"(load_b_fragments_rows_x2\(fb, bo[0-9]+)", chunk,
                                                            R"( \+ 16u \* \(stage \* [0-9]+ \+ )", columns, wrap,
                                                            R"(\)\);)")));
    EXPECT_EQ(loop.find("load_b_fragment_rows("), std::string::npos) << "no fragment read alone";
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
  }
}

// One slab of rows held whole by the block, O wide (MLA's heads against
// its latent): every warp takes S and P whole (its group's half of the
// step's keys, where two groups share them), and its own columns of O
// (its B offsets from its first column of tiles); after the loop each
// warp stores its columns, warp 0 the rows' max and sum.
TEST(FlashOperands, AWideOOfOneSlabIsSharedOutByColumns) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  const FusedCase c = RowKeysAttentionCase(1, 16, 256, 4096);
  codegen::KernelSource source;
  const std::string loop = ChosenLoop(c, &source);
  const size_t step = loop.find("columns of O, in registers (no barrier)");
  ASSERT_NE(step, std::string::npos) << source.source;
  EXPECT_EQ(source.mma_warps, source.threads / 32);
  // The columns of tiles a warp holds, from O's declaration.
  const std::string declared = "'s accumulator fragments: this warp's 16 rows, its ";
  const size_t at = source.source.find(declared);
  ASSERT_NE(at, std::string::npos) << source.source;
  const int per_warp = std::stoi(source.source.substr(at + declared.size())) / 8;
  ASSERT_GE(per_warp, 1);
  // Where no SM holds a second block, two groups of warps take each
  // step's halves, the warps of a group O's columns between them (merged
  // after the loop): the warp's first column of tiles is within its group.
  std::smatch grouped;
  const bool groups = std::regex_search(source.source, grouped, std::regex(R"(kg = warp / (\d+);  // the one slab)"));
  const std::string first = groups ? absl::StrCat("warp % ", grouped[1].str(), " * ", per_warp)
                                   : absl::StrCat("warp * ", per_warp);
  if (groups) {
    EXPECT_EQ(std::stoi(grouped[1].str()) * 2, source.threads / 32) << "two groups";
    EXPECT_THAT(source.source, ::testing::HasSubstr("brought to group 0's warp of the same columns and lane"));
  }
  EXPECT_THAT(loop.substr(step), ::testing::HasSubstr(first)) << "B from the warp's first column of tiles";
  // (To its tile, or where a split loop's partials are all the flush's, to
  // the workspace: FlashPartialsDirect.)
  EXPECT_THAT(loop, ::testing::HasSubstr(absl::StrCat("(", first, " + v) * 8 + t2")));
  EXPECT_THAT(loop, ::testing::HasSubstr("if ((lane & 3) == 0 && warp == 0)"));
  EXPECT_EQ(loop.find("if (warp < "), std::string::npos) << "no warp idles";
  if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
}

// The search's candidate's kernel under each schedule variant; none, with
// a failure, if the search found nothing.
std::vector<VariantKernel> FoundVariants(const FusedCase& c) {
  SearchOptions options;
  options.budget_seconds = 8;
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  EXPECT_TRUE(r.candidate.has_value()) << r.report.ToString();
  if (!r.candidate) return {};
  return KernelsOfVariants(c.region, *r.candidate);
}

// B's ring rows 128 bytes (head dim 64, wgmma's 128-byte swizzle) or 256
// (head dim 128, two panels of 128-byte rows): both flash products by
// wgmma on sm_90a, B straight from the ring through a descriptor, K given
// transposed (MN-major: a k chunk 16 rows of 128 bytes on) or by rows
// (K-major: 32 bytes on, k chunks 4-7 in the second panel); V MN-major,
// at head dim 128 its second panel LBO on. The ldmatrix form under
// #else; the rings 1024-byte aligned and made visible to the async proxy
// before the step's barrier; Q's fragments from shared memory each step.
// With warps in groups (each its share of a step's keys), each group is a
// warpgroup, B's descriptors start at its keys. The first two of each
// case compile, for sm_90 and sm_90a.
TEST(FlashOperands, ProductsTakeWgmmaOnHopper) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  struct Case {
    FusedCase c;
    std::string scores, pv;  // the products, as emitted (patterns)
  };
  // Each product: its accumulators and A, then B's descriptor a k chunk on.
  const std::string scores = R"(>\(&sc\[sl\]\[0\]\[0\], fw\[c\]\[sl\], wgmma_descriptor\(bw \+ )";
  const std::string pv = R"(>\(&o[0-9]+\[sl\]\[0\]\[0\], fw\[c\]\[sl\], wgmma_descriptor\(bw \+ 2048u \* c, 1024)";
  const std::string pv64 = "wgmma_m64k16<64, false, 1" + pv + R"(\)\);)";
  for (const Case& k :
       {Case{AttentionCase(2, 256, 64, 4096),
             "wgmma_m64k16<64, false, 1" + scores + R"(2048u \* c, 1024(, 8192)?\)\);)", pv64},
        Case{RowKeysAttentionCase(2, 256, 64, 4096),
             "wgmma_m64k16<(32|64|128), false, 0" + scores + R"(32u \* c, 1024\)\);)", pv64},
        Case{CausalAttentionCase(1, 2, 512, 128, 1024, DType::kBF16),
             "wgmma_m64k16<(32|64|128), true, 0" + scores + R"(c / 4 \* [0-9]+u \+ c % 4 \* 32u, 1024\)\);)",
             "wgmma_m64k16<128, true, 1" + pv + R"(, [0-9]+\)\);)"}}) {
    SCOPED_TRACE(k.c.name);
    int wgmma = 0, grouped_wgmma = 0;
    for (const auto& [s, graph, kernel] : FoundVariants(k.c)) {
      const std::string& source = kernel.source;
      const bool grouped = source.find("and its group's") != std::string::npos;
      if (source.find("wgmma_m64") == std::string::npos) continue;
      ++wgmma;
      if (grouped) {
        ++grouped_wgmma;
        EXPECT_EQ(kernel.threads % 128, 0);
        EXPECT_THAT(source, ::testing::ContainsRegex(R"(\+ kg \* [0-9]+u;  // B's stage, the group's keys)"));
      }
      EXPECT_THAT(source, ::testing::ContainsRegex(k.scores));
      EXPECT_THAT(source, ::testing::ContainsRegex(k.pv));
      EXPECT_THAT(source, ::testing::HasSubstr("extern __shared__ __align__(1024) float smem[];"));
      EXPECT_THAT(source, ::testing::ContainsRegex(R"(fence_async_shared\(\);\s*#endif\s*__syncthreads\(\);)"));
      EXPECT_THAT(source, ::testing::HasSubstr("const uint4 q = qa["));
      EXPECT_THAT(source, ::testing::HasSubstr("#else"));
      if (nvrtc.ok() && (wgmma <= 2 || (grouped && grouped_wgmma == 1))) ExpectCompilesForHopper(**nvrtc, kernel);
    }
    EXPECT_GE(wgmma, 1);
    if (k.c.name == AttentionCase(2, 256, 64, 4096).name) {
      EXPECT_GE(grouped_wgmma, 1);
    }
  }
}

// The kernel of QK-norm case c's found candidate at 64 queries a block,
// `keys` a step, `threads` and a `split`-way split.
codegen::KernelSource QkNormKernel(const FusedCase& c, int64_t keys, int threads, int split) {
  SearchOptions options;
  options.budget_seconds = 8;
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  EXPECT_TRUE(r.candidate.has_value()) << r.report.ToString();
  if (!r.candidate) return {};
  return KernelWithSchedule(c.region, *r.candidate, [&](const Schedule& s) {
    bool tiles = true;
    for (size_t k = 0; k < s.map.size(); ++k) {
      if (c.region.class_size[k] == Dim(256)) tiles &= s.tile[k] == 64;
      if (c.region.class_size[k] == Dim(4096)) tiles &= s.tile[k] == keys;
    }
    return tiles && s.threads == threads && s.loop_split == split;
  });
}

// With the scores taken by wgmma and every warp in the flash step, K's
// fold (QK-norm) runs under the scores' products. Head dim 128 (4 warps,
// 64 rows, 4-way split): the deferred form, the fold, its barrier and the
// scales' rsqrt between issuing the step's scores and waiting for them,
// the scores scaled after the wait. Head dim 64 (qknorm_gqa_bs8's
// schedule), where the scores run a step ahead: the fold runs a step
// ahead too (FoldAhead): after P is packed, under the next step's
// scores' products, the next step's K from the next stage is folded into
// the half of the scales' tile for that step's parity; the step scales its
// scores by its own half, and takes no barrier but the one after the
// ring's wait; the prologue folds the first step. Both compile for sm_90a.
TEST(FlashOperands, QkNormFoldRunsWhileTheScoresWgmmaDoes) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const int64_t head_dim : {128, 64}) {
    SCOPED_TRACE(head_dim);
    const FusedCase c = QkNormAttentionCase(16, 256, head_dim, 4096, DType::kF16);
    const codegen::KernelSource source = QkNormKernel(c, 64, 128, 4);
    const size_t step = source.source.find("for (; step < lean_end; ++step) {");
    ASSERT_NE(step, std::string::npos) << source.source;
    const std::string loop = source.source.substr(step);
    if (head_dim == 128) {
      EXPECT_EQ(loop.find("(FoldAhead)"), std::string::npos) << loop;
      const size_t issued = loop.find("wgmma_commit();"), fold = loop.find("halving shuffles");
      ASSERT_NE(issued, std::string::npos) << loop;
      EXPECT_LT(issued, fold) << loop;
      const size_t barrier = loop.find("__syncthreads();", fold), wait = loop.find("wgmma_wait_all();", fold);
      EXPECT_LT(fold, barrier) << loop;
      EXPECT_LT(barrier, wait) << loop;
      EXPECT_LT(wait, loop.find("times their scales", fold)) << loop;
    } else {
      const std::string before = source.source.substr(0, step);
      EXPECT_THAT(before, ::testing::HasSubstr("x14 for step step_begin (FoldAhead)"));
      const size_t rest = loop.find("// the rest: tails");
      ASSERT_NE(rest, std::string::npos) << loop;
      const std::string whole = loop.substr(0, rest);
      const size_t next = whole.find("// the next step's x17");
      const size_t fold = whole.find("x14 for step (step + 1) (FoldAhead)");
      ASSERT_NE(next, std::string::npos) << whole;
      ASSERT_NE(fold, std::string::npos) << whole;
      EXPECT_LT(whole.find("wgmma_commit();", next), fold) << whole;
      EXPECT_THAT(whole.substr(fold), ::testing::HasSubstr("const int fold_stage = (stage + 1) % 4;"));
      EXPECT_THAT(whole.substr(fold), ::testing::HasSubstr("float* const fold_half = x14 + ((step + 1) & 1) * 64;"));
      // After the step's own scores are scaled and P packed, before the
      // wait for the next scores.
      EXPECT_LT(whole.find("const float* const bs = (x14 + (step & 1) * 64) + (0 + v) * 8 + t2;"), fold) << whole;
      EXPECT_LT(whole.find("pp[sl][c][3] = pack_f16x2("), fold) << whole;
      EXPECT_LT(fold, whole.find("pstage = stage;")) << whole;
      EXPECT_LT(whole.find("pstage = stage;"), whole.find("wgmma_wait_all();", fold)) << whole;
      // One barrier a step (two steps a pass): the ring's.
      EXPECT_EQ(CountSubstr(whole, "__syncthreads();"), 2) << whole;
    }
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
  }
}

// Where the loop has whole steps enough and a ring of 3 stages or more,
// the wgmma step pipelines its products (FlashAttention-3's overlap within
// a warpgroup), and the ring runs stages - 2 steps ahead (P@V reads the
// stage the last step read); the last whole step's P@V follows the loop.
// A step issues its scores' products, then the last step's P@V (A from
// pp, V from stage pstage), waits for the scores alone (wgmma_wait<1>)
// and runs its softmax while P@V does; then O is brought to the new max
// and P packed for the next step. With 4 stages or more and registers
// enough (head dim 64), the scores run a step ahead too
// (FlashScoresAhead): the first whole step's come before the loop; a step
// waits for the next step's copies, issues the last step's P@V and then
// the next step's scores (K from the next stage, into sa), runs its
// softmax on sc, waits for P@V alone, packs P, then waits for the next
// scores; the loop takes two steps a pass, scores0 and scores1 trading
// places, and its copies past the block's last step copy that step
// again, so it runs to the block's end where its steps are all whole.
// Causal prefill's kernel (64 keys a step, 128 rows, head dim 128: the
// first form) and gqa_bs8's (64 rows, 4-way split: the second) compile for
// sm_90a and for sm_90 (mma.sync in the same order under #else).
TEST(FlashOperands, WholeStepsPipelineTheirProducts) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const FusedCase& c :
       {CausalAttentionCase(8, 4, 4096, 128, 4096, DType::kBF16), AttentionCase(16, 256, 64, 4096)}) {
    SCOPED_TRACE(c.name);
    const bool ahead = c.name == AttentionCase(16, 256, 64, 4096).name;
    codegen::KernelSource source;
    const std::string loop = ChosenLoop(c, &source);
    const size_t lean = loop.find("for (; step < lean_end; ++step) {"), rest = loop.find("// the rest: tails");
    ASSERT_NE(lean, std::string::npos) << loop;
    ASSERT_NE(rest, std::string::npos) << loop;
    const std::string before = loop.substr(0, lean), step = loop.substr(lean, rest - lean);
    EXPECT_THAT(before, ::testing::HasSubstr("unsigned pp["));
    EXPECT_THAT(step, ::testing::HasSubstr("16u * (pstage * "));
    EXPECT_EQ(before.find("float scores0[") != std::string::npos, ahead) << before;
    // The drain: the last whole step's P@V after the loop.
    const size_t drain = loop.find("if (lean_end > step_begin) {", lean);
    ASSERT_NE(drain, std::string::npos) << loop;
    EXPECT_LT(drain, rest);
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
    if (!ahead) {
      // (Its two warpgroups half a step apart, FlashPingPong: the ring one
      // step ahead; warpgroup 0's loop, first, is this pipelined step.)
      EXPECT_THAT(before, ::testing::HasSubstr("opaque(ring_whole ? max(step_begin, min(step_end, "));
      EXPECT_THAT(step, ::testing::HasSubstr("copy_async_wait<0>();"));
      EXPECT_THAT(step, ::testing::HasSubstr("const i64 kr = (step + 1) * "));
      ExpectInOrder(step, {"wgmma_commit();", "fa[sl][h] = pp[sl][c][h];", "wgmma_commit();", "wgmma_wait<1>();",
                           "stable_exp_log2(", "wgmma_wait_all();", "] *= factor[sl][h >> 1];", "pp[sl][c][0] = pack_",
                           "pstage = stage;"});
      continue;
    }
    EXPECT_THAT(before, ::testing::HasSubstr("lean_end = opaque(ring_whole ? (step_end <= "));
    EXPECT_THAT(step, ::testing::HasSubstr("const i64 kr = (min(step + 2, step_end - 1)) * "));
    // A step, each of the two a pass: the first one's.
    ExpectInOrder(before, {"// the first whole step's x", "wgmma_commit_and_wait();"});
    const size_t second = step.find("if (++step == lean_end) break;");
    ASSERT_NE(second, std::string::npos) << step;
    EXPECT_THAT(step.substr(0, second), ::testing::HasSubstr("= scores0;  // this step's scores, done"));
    EXPECT_THAT(step.substr(second), ::testing::HasSubstr("= scores1;  // this step's scores, done"));
    const std::string one = step.substr(0, second);
    EXPECT_THAT(one, ::testing::HasSubstr("copy_async_wait<0>();"));  // the next step's copies, 4 stages
    ExpectInOrder(one, {"fa[sl][h] = pp[sl][c][h];", "wgmma_commit();", "sa[sl][v][h] = 0.0f;", "wgmma_commit();",
                        "stable_exp_log2(", "wgmma_wait<1>();", "] *= factor[sl][h >> 1];", "pp[sl][c][0] = pack_",
                        "pstage = stage;", "wgmma_wait_all();"});
    EXPECT_THAT(one, ::testing::ContainsRegex(R"(16u \* \(\(stage \+ 1\) % [0-9]+ \* [0-9]+\))"));
    EXPECT_EQ(one.find("float sc["), std::string::npos) << "the step's scores came with it";
  }
}

// Causal prefill's kernel (8 warps of 16 rows, head dim 128, 64 keys a
// step, pipelined) runs its whole steps as two loops, one a warpgroup
// (FlashPingPong): warpgroup 1 issues its first step's products, then at
// each step takes the last one's softmax (both products waited for) after
// the barrier and issues its own, which stay in flight across the next
// barrier; after its loop, the last step's softmax and a wait on every
// path. The barriers are the unaligned form, one a step in each loop; the
// warpgroup's index and the loop's bound are broadcasts (uniform to
// ptxas, which otherwise serialized the products). Compiled for sm_90a and
// sm_90.
TEST(FlashOperands, TwoWarpgroupsRunHalfAStepApart) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  codegen::KernelSource source;
  const std::string loop = ChosenLoop(CausalAttentionCase(8, 4, 4096, 128, 4096, DType::kBF16), &source);
  const size_t lean = loop.find("FlashPingPong"), rest = loop.find("// the rest: tails");
  ASSERT_NE(lean, std::string::npos) << loop;
  ASSERT_NE(rest, std::string::npos) << loop;
  EXPECT_THAT(loop.substr(0, lean), ::testing::HasSubstr("lean_end = __shfl_sync(0xffffffffu, opaque("));
  const std::string loops = loop.substr(lean, rest - lean);
  const size_t wg1 = loops.find("];  // a step's scores, in flight across its barrier");
  ASSERT_NE(wg1, std::string::npos) << loops;
  const std::string first = loops.substr(0, wg1), second = loops.substr(wg1);
  EXPECT_THAT(first, ::testing::HasSubstr("if (__shfl_sync(0xffffffffu, threadIdx.x / 128, 0) == 0) {"));
  // One barrier a step in each loop (and the first step's), all unaligned.
  EXPECT_EQ(CountSubstr(first, "sync_threads_unaligned();"), 1);
  EXPECT_EQ(CountSubstr(second, "sync_threads_unaligned();"), 2);
  EXPECT_EQ(CountSubstr(loops, "__syncthreads()"), 0);
  EXPECT_EQ(CountSubstr(second, "wgmma_wait<1>"), 0) << "warpgroup 1 waits for both products";
  ExpectInOrder(first, {"wgmma_commit();", "wgmma_commit();", "wgmma_wait<1>();", "stable_exp_log2(",
                        "wgmma_wait_all();", "pstage = stage;"});
  ExpectInOrder(second, {"if (step < lean_end) {", "sync_threads_unaligned();", "sc[sl][v][h] = 0.0f;",
                         "wgmma_commit();", "fa[sl][h] = pp[sl][c][h];", "wgmma_commit();", "++step;",
                         "for (; step < lean_end; ++step) {", "sync_threads_unaligned();",
                         "const i64 k0 = (step - 1) * 64;", "wgmma_wait_all();", "stable_exp_log2(",
                         "pstage = stage;", "sc[sl][v][h] = 0.0f;", "wgmma_commit();", "wgmma_commit();",
                         "if (lean_end > step_begin) {", "const i64 k0 = (step - 1) * 64;", "wgmma_wait_all();",
                         "pstage = stage;", "wgmma_wait_all();"});
  if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
}

// A split flash loop's partials (P@V's accumulator, its row sums and the
// running max: all of them) go from the warps' registers straight to the
// block's part of the workspace, 8 bytes a store, not through the tiles
// and a copy after a barrier; then one barrier before the count. Q skips
// its tile too. gqa_bs8's kernel (64 rows, 4-way split), compiled for
// sm_90a and sm_90.
TEST(FlashOperands, ASplitLoopsQAndPartialsSkipTheTiles) {
  const FusedCase c = AttentionCase(16, 256, 64, 4096);
  codegen::KernelSource source;
  const std::string loop = ChosenLoop(c, &source);
  const size_t flush = loop.find("from the warps' registers");
  ASSERT_NE(flush, std::string::npos) << loop;
  const std::string after = loop.substr(flush);
  ExpectInOrder(loop, {"float* const mine = partials + (i64)", "from the warps' registers",
                       "*reinterpret_cast<float2*>((mine + 0) + r * 64 + v * 8 + t2) = make_float2(o",
                       "(mine + 4096)[r] = total;", "[r] = run_max[sl][h];", "__syncthreads();", "split_gather("});
  EXPECT_EQ(after.find("*reinterpret_cast<float4*>(mine"), std::string::npos) << after;
  // Q (f16, 8 a load along its depth, read by the scores alone) goes from
  // its loaded bits straight to its fragments' words: no f32 tile and no
  // pack (FlashQFromBits).
  const std::string& code = source.source;
  EXPECT_THAT(code, ::testing::HasSubstr("x0 straight to x3's A fragments' words (FlashQFromBits)"));
  EXPECT_THAT(code, ::testing::HasSubstr("w[j] = vector_bits(raw0[it], j, 4);"));
  EXPECT_EQ(code.find("float* const x0 ="), std::string::npos) << code;
  EXPECT_EQ(code.find("pack_f16x2(p0.x, p0.y)"), std::string::npos) << code;
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
}

// QK-norm's Q at qknorm_gqa_bs1's schedule (64 rows, 128 keys a step, two
// groups of 4 warps, 16-way split: wgmma, Q's fragments in shared memory)
// is normalized in registers on its way from the loaded bits to its
// fragments (FlashQFromBits): a row's threads add their squares by
// shuffles, and none of the norm's ops has a tile or a pass of its own.
// Both groups' copies are stored. Compiled for sm_90a and sm_90.
TEST(FlashOperands, QkNormsQOnItsWayToTheFragments) {
  const codegen::KernelSource source =
      QkNormKernel(QkNormAttentionCase(2, 256, 64, 4096, DType::kF16), 128, 256, 16);
  const std::string& code = source.source;
  EXPECT_THAT(code, ::testing::HasSubstr("normalized (x8) in registers, a row's 8 threads' sums by shuffles"));
  ExpectInOrder(code, {"ss += op_mul(v[j], v[j]);", "ss += __shfl_xor_sync(0xffffffffu, ss, 1);",
                       "ss += __shfl_xor_sync(0xffffffffu, ss, 4);", "const float rs = op_rsqrt(op_add(op_mul(ss, ",
                       "w[j] = pack_f16x2(op_mul(v[2 * j], rs), op_mul(v[2 * j + 1], rs));",
                       "[(((4 + r / 16) * 4 + c / 16) * 32"});
  EXPECT_EQ(code.find("// x1 = binary mul x0 x0"), std::string::npos) << code;
  EXPECT_EQ(code.find("// x8 = binary mul x0 x7"), std::string::npos) << code;
  EXPECT_EQ(code.find("float* const x0 ="), std::string::npos) << code;
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
}

}  // namespace
}  // namespace kiln::search
