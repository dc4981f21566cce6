// The attention family from plain tensor code, matmul -> softmax -> matmul:
// the search finds one kernel with an online softmax (a running max whose
// rescale the accumulators follow), and the verifier treats the softmax's
// stabilizing max as an arbitrary shift (algebra.h): it accepts that kernel
// and rejects one that drops the rescale. All on the CPU.
#include <functional>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "ops/ops.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/schedules.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/search/verify.h"
#include "optimizer/tile_analysis.h"
#include "optimizer/ugraph_json.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;
using ugraph::TileOp;

SearchResult Search(const Region& region) {
  SearchOptions options;
  options.budget_seconds = 8;  // the kernel turns up within 2 s on a 2-core machine
  return ValueOrFail(Superoptimize(region, options));
}

// The kernel of each variant of the search's schedule for the case that
// the code generator emits (not those past shared memory); none, with a
// failure, if the search found nothing.
std::vector<VariantKernel> VariantKernels(const FusedCase& c) {
  SearchResult r = Search(c.region);
  EXPECT_TRUE(r.candidate.has_value()) << r.report.ToString();
  if (!r.candidate) return {};
  return KernelsOfVariants(c.region, *r.candidate);
}

// The search's candidate for the case, which passes the field tests (seed
// `seed`); an empty one, with a failure, if none was found.
Candidate FoundAndVerified(const FusedCase& c, uint64_t seed) {
  SearchResult r = Search(c.region);
  EXPECT_TRUE(r.candidate.has_value()) << r.report.ToString();
  if (!r.candidate) return {};
  EXPECT_TRUE(ValueOrFail(VerifyOverFiniteFields(c.region, *r.candidate, 3, seed))) << r.report.chosen_text;
  return *r.candidate;
}

TEST(AttentionSearch, TheRegionKeepsSoftmaxAsAStableExp) {
  FusedCase c = AttentionCase(2, 5, 8, 33);
  int stable = 0, max_ops = 0;
  for (const RegionOp& op : c.region.ops) {
    stable += op.kind == RegionOp::Kind::kStableExp;
    max_ops += op.op == OpKind::kReduceMax;
  }
  EXPECT_EQ(stable, 1) << c.region.ToString();
  EXPECT_EQ(max_ops, 0) << c.region.ToString();
  EXPECT_EQ(c.region.inputs.size(), 3u) << c.region.ToString();
  // Every node from the inputs to the output is the region's, the softmax's
  // max and subtraction included: the runtime path claims them all, and a
  // node left out would make the scores a region input of their own.
  std::set<const Node*> inside(c.region.nodes.begin(), c.region.nodes.end());
  std::vector<const Node*> stack = {c.output.node().get()};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (std::find(c.region.inputs.begin(), c.region.inputs.end(), n) != c.region.inputs.end()) continue;
    EXPECT_TRUE(inside.count(n)) << OpName(n->op) << " " << n->shape.ToString();
    for (const auto& in : n->inputs) stack.push_back(in.get());
  }
}

// The stable exp runs along the loop over the keys, and both sums that
// read it (the row sum and the product with V) follow its running max.
void ExpectOnlineSoftmax(const Region& region, const SearchResult& r) {
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 1u);
  EXPECT_EQ(r.graph->tensors.size(), region.inputs.size() + 1) << "an intermediate reached device memory";
  const ugraph::BlockGraph& b = r.graph->kernels[0].block;
  int stable = -1, rescaled = 0, matmuls = 0;
  for (size_t i = 0; i < b.tile_ops.size(); ++i) {
    if (b.tile_ops[i].kind == TileOp::Kind::kStableExp) stable = static_cast<int>(i);
    if (b.tile_ops[i].kind == TileOp::Kind::kMatmul) ++matmuls;
    if (b.tile_ops[i].kind == TileOp::Kind::kAccumulate) {
      EXPECT_EQ(b.tile_ops[i].rescale, stable) << r.report.chosen_text;
      ++rescaled;
    }
  }
  EXPECT_GE(stable, 0) << r.report.chosen_text;
  EXPECT_EQ(rescaled, 2) << r.report.chosen_text;
  EXPECT_EQ(matmuls, 2) << r.report.chosen_text;
  EXPECT_GT(b.forloop.tile, 1) << "the keys are walked by the loop";
  EXPECT_LE(r.report.float_error, 1e-2);
}

TEST(AttentionSearch, PrefillShapesGetOneKernelWithAnOnlineSoftmax) {
  FusedCase c = AttentionCase(2, 256, 64, 4096);
  SearchResult r = Search(c.region);
  ExpectOnlineSoftmax(c.region, r);
  // The cost model ranks query tiles of several 16-row slabs (the flash
  // path, one barrier a step) above one slab (the generic form, five): on
  // the H100 these ran 23-37 us against 33-73 (gqa_bs8: 44-84 against
  // 199-282).
  ASSERT_TRUE(r.candidate.has_value());
  EXPECT_GE(r.candidate->schedule.tile[1], 64) << r.report.schedule;
}

TEST(AttentionSearch, DecodeShapesGetOneKernelWithAnOnlineSoftmax) {
  FusedCase c = AttentionCase(64, 1, 128, 4096);
  ExpectOnlineSoftmax(c.region, Search(c.region));
}

TEST(AttentionSearch, OddShapesAreFoundAndChecked) {
  for (int64_t keys : {17, 127, 4097}) {
    FusedCase c = AttentionCase(3, 17, 16, keys);
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.graph.has_value()) << keys << ": " << r.report.ToString();
    EXPECT_EQ(r.graph->kernels.size(), 1u);
    EXPECT_LE(r.report.float_error, 1e-2) << keys;
  }
}

// QK-norm (rms of Q over its head dim, of K over its head dim, which is
// K's axis -2 here) is fused into the attention kernel: Q's normalization
// runs once before the loop, K's on each step's tile, and neither the
// normalized Q nor K reaches device memory. (127 keys are read whole, no
// loop: both then run before the products.)
void ExpectQkNormFused(const FusedCase& c, const SearchResult& r) {
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 1u);
  EXPECT_EQ(r.graph->tensors.size(), c.region.inputs.size() + 1) << "an intermediate reached device memory";
  const ugraph::BlockGraph& b = r.graph->kernels[0].block;
  const bool loop = b.forloop.tile > 1;
  if (loop) ExpectOnlineSoftmax(c.region, r);
  const std::vector<ugraph::TileInfo> tiles = ValueOrFail(ugraph::AnalyzeTiles(b));
  int before_loop = 0, in_loop = 0;
  for (size_t i = 0; i < b.tile_ops.size(); ++i) {
    if (b.tile_ops[i].kind != TileOp::Kind::kUnary || b.tile_ops[i].op != OpKind::kRsqrt) continue;
    (tiles[i].in_loop ? in_loop : before_loop) += 1;
  }
  EXPECT_EQ(before_loop, loop ? 1 : 2) << "Q's rsqrt, once per block\n" << r.report.chosen_text;
  EXPECT_EQ(in_loop, loop ? 1 : 0) << "K's rsqrt, per step\n" << r.report.chosen_text;
  EXPECT_LE(r.report.float_error, 1e-2);
}

TEST(AttentionSearch, QkNormIsFusedIntoTheKernel) {
  for (const FusedCase& c : {QkNormAttentionCase(2, 256, 64, 4096), QkNormAttentionCase(3, 17, 16, 127),
                             QkNormAttentionCase(5, 1, 128, 4097)}) {
    SCOPED_TRACE(c.name);
    ExpectQkNormFused(c, Search(c.region));
  }
}

// K's normalization at each step reads K from the ring: no f32 tile of K,
// of its squares or of the normalized K. The sum of squares folds the
// ring's whole 16-byte vectors (each warp a column of vectors, its lanes
// every 32nd row or 16th, halving shuffles leaving each lane one key's
// sum), which also scale it, add epsilon and take the rsqrt; the scores' B
// fragments are K's (ldmatrix), and each score is then times its key's
// rsqrt (a column's scale commutes with the product; B's fragments are not
// scaled). The step takes three barriers (the ring's, the rsqrt's, the
// step's end), where those tiles took six. f16 and bf16 both compile.
TEST(AttentionSearch, QkNormReadsKFromTheRingScaledByItsRsqrt) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    const FusedCase c = QkNormAttentionCase(2, 256, 64, 4096, dtype);
    SCOPED_TRACE(DTypeName(dtype));
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    const codegen::KernelSource source = ValueOrFail(codegen::GenerateKernel(*r.graph, 0));
    EXPECT_THAT(source.source, ::testing::HasSubstr("sc[sl][v][h] *= bs[h & 1];"));
    EXPECT_EQ(source.source.find("x2(fb[0], bs)"), std::string::npos) << "no fragment scaled";
    EXPECT_THAT(source.source, ::testing::HasSubstr("load_b_fragments_trans_x2(fb, bo"));
    const size_t step = source.source.find("i64 step = step_begin;");
    ASSERT_NE(step, std::string::npos) << source.source;
    // Q's tile is widened before the loop; nothing is in the loop.
    EXPECT_EQ(source.source.find("widen the loaded bits", step), std::string::npos) << source.source;
    const std::string loop = source.source.substr(step);
    EXPECT_THAT(loop, ::testing::HasSubstr("const uint4 w = ring"));
    for (const char* alone : {"load_bits_f16(&ring", "load_bits_bf16(&ring"}) {
      EXPECT_EQ(loop.find(alone), std::string::npos) << "no ring element read alone";
    }
    EXPECT_THAT(loop, ::testing::HasSubstr("+ __shfl_xor_sync(0xffffffffu, send, 4);"));
    EXPECT_THAT(loop, ::testing::HasSubstr("] = op_rsqrt(op_add(op_mul(v, "));
    EXPECT_EQ(source.step_barriers, 3) << source.source;
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
  }
}

// A flash kernel with rows owned by warps and many steps a block (gqa_bs8:
// 16 a block of a split of 4, 4 stages) runs its whole steps in a loop of
// their own, once every copy of the block is whole (ring_whole, one answer
// for the block: that loop takes barriers): kn is the tile there, no copy
// is checked, and no tail's code sits between the hot instructions. Where
// it issues the next step's scores (FlashScoresAhead) it runs to the
// block's end where the block's steps are all whole, its copies past them
// clamped to its last (into a stage no step reads), and its bound is
// opaque to the compiler (which unrolled it otherwise); elsewhere it stops
// where its copies would pass the whole steps. The rest follow in the
// general loop. Few steps a block (gqa_bs1: 4) keep one loop, unless
// their scores run ahead.
TEST(AttentionSearch, LongFlashLoopsRunTheirWholeStepsInALoopOfTheirOwn) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  const FusedCase c = AttentionCase(16, 256, 64, 4096);
  int lean = 0, single = 0, ahead = 0;
  for (const auto& [s, graph, source] : VariantKernels(c)) {
    const std::string& code = source.source;
    const size_t whole = code.find("for (; step < lean_end; ++step) {");
    const size_t rest = code.find("for (; step < step_end; ++step) {");
    ASSERT_NE(rest, std::string::npos) << code;
    const bool flash = code.find("in registers (no barrier)") != std::string::npos;
    if (whole == std::string::npos) {
      ++single;
      EXPECT_EQ(code.find("__syncthreads_and"), std::string::npos);
      continue;
    }
    ++lean;
    EXPECT_TRUE(flash) << s.ToString(c.region);
    const size_t agreed = code.find("ring_whole = __syncthreads_and(ring_whole);");
    ASSERT_NE(agreed, std::string::npos);
    EXPECT_LT(agreed, whole);
    // (The flash path's index math is 64-bit: TiledGenerator::Generate.)
    const std::string fast = code.substr(whole, rest - whole);
    if (code.find("float scores0[") == std::string::npos) {
      EXPECT_THAT(code, ::testing::HasSubstr("const i64 lean_end = ring_whole ? max(step_begin, min(step_end, 4096LL / "));
    } else {
      ++ahead;
      EXPECT_THAT(code, ::testing::HasSubstr("const i64 lean_end = opaque(ring_whole ? (step_end <= 4096LL / "));
      EXPECT_THAT(fast, ::testing::ContainsRegex(R"(const i64 kr = \(min\(step \+ [0-9]+, step_end - 1\)\) \* [0-9]+;)"));
    }
    EXPECT_THAT(fast, ::testing::ContainsRegex("const int kn = [0-9]+;"));
    EXPECT_EQ(fast.find("knr"), std::string::npos) << fast;
    EXPECT_EQ(fast.find("aligned16"), std::string::npos) << fast;
    EXPECT_THAT(fast, ::testing::HasSubstr("copy_async16("));
    EXPECT_THAT(code.substr(rest), ::testing::HasSubstr("else if (knr > 0) {"));
    if (nvrtc.ok() && lean <= 2) ExpectCompilesForHopper(**nvrtc, source);
  }
  EXPECT_GE(lean, 1);
  EXPECT_GE(ahead, 1);
  EXPECT_GE(single, 1);
  // gqa_bs1's chosen schedule: 4 steps a block, all in the loop of whole
  // steps where the scores run ahead (2 steps a block suffice there).
  const FusedCase small = AttentionCase(2, 256, 64, 4096);
  SearchResult s = Search(small.region);
  ASSERT_TRUE(s.graph.has_value()) << s.report.ToString();
  const std::string code = ValueOrFail(codegen::GenerateKernel(*s.graph, 0)).source;
  EXPECT_THAT(code, ::testing::HasSubstr("float scores0["));
  EXPECT_THAT(code, ::testing::HasSubstr("const i64 share = (steps + 15) / 16;"));
}

// The normalizations are fixed, not searched, but still verified: the
// found kernel with K normalized over its keys instead of its head dim, or
// with Q's rsqrt dropped, fails over the finite fields.
TEST(AttentionSearch, VerificationRejectsAWrongQkNorm) {
  FusedCase c = QkNormAttentionCase(2, 5, 8, 300);
  const Candidate good = FoundAndVerified(c, 31);
  int k_sum = -1, q_rsqrt = -1;
  for (size_t i = 0; i < good.ops.size(); ++i) {
    const TileOp& op = good.ops[i].op;
    if (op.kind == TileOp::Kind::kReduceSum && op.axis == 1) k_sum = static_cast<int>(i);  // K's head dim
    if (op.kind == TileOp::Kind::kUnary && op.op == OpKind::kRsqrt && q_rsqrt < 0) q_rsqrt = static_cast<int>(i);
  }
  ASSERT_GE(k_sum, 0);
  ASSERT_GE(q_rsqrt, 0);
  Candidate wrong_axis = good;
  wrong_axis.ops[k_sum].op.axis = 2;  // over the keys
  EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, wrong_axis, 3, 32)));
  Candidate no_rsqrt = good;
  no_rsqrt.ops[q_rsqrt].op.op = OpKind::kSqrt;
  EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, no_rsqrt, 3, 33)));
}

// The decision of algebra.h, tested: the found kernel passes; the same
// kernel with its accumulators no longer following the running max (a
// dropped rescale) fails, as does one where only the row sum drops it.
TEST(AttentionSearch, VerificationRejectsADroppedRescale) {
  FusedCase c = AttentionCase(2, 5, 8, 300);
  const Candidate good = FoundAndVerified(c, 21);
  Candidate none = good;
  int accumulators = 0;
  for (CandidateOp& op : none.ops) {
    if (op.op.kind != TileOp::Kind::kAccumulate) continue;
    op.op.rescale = -1;
    ++accumulators;
  }
  ASSERT_EQ(accumulators, 2);
  EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, none, 3, 22)));
  for (size_t i = 0; i < good.ops.size(); ++i) {
    if (good.ops[i].op.kind != TileOp::Kind::kAccumulate) continue;
    Candidate one = good;
    one.ops[i].op.rescale = -1;
    EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, one, 3, 23))) << "accumulator x" << i;
  }
  // In f32 a dropped rescale changes nothing unless a later step raises a
  // row's max; at the verification sizes the last step holds one key, so
  // the floating-point check alone would often pass it. The field's
  // arbitrary shifts catch it every time.
  EXPECT_TRUE(ValueOrFail(CheckFloatingPoint(c.region, good, 24)).passed);
}

// Softmax's shift invariance is what lets the verifier drop the max: an
// output that is not normalized (exp(x - max) itself) depends on the shift,
// and a candidate with running shifts cannot match it.
TEST(AttentionSearch, AnUnnormalizedStableExpIsNotFused) {
  Tensor q = random_normal(Shape{2, 5, 8}, 1, 0, 1, DType::kF32, Device::Cpu());
  Tensor k = random_normal(Shape{2, 8, 300}, 2, 0, 1, DType::kF32, Device::Cpu());
  Tensor v = random_normal(Shape{2, 300, 8}, 3, 0, 1, DType::kF32, Device::Cpu());
  const Tensor s = matmul(q, k);
  const Tensor out = matmul(exp(s - max(s, -1, /*keepdim=*/true)), v);
  const std::set<const Node*> leaves = {q.node().get(), k.node().get(), v.node().get()};
  Region region = ValueOrFail(
      ExtractRegion(out.node().get(), [&](const Node* n) { return leaves.count(n) > 0; }));
  SearchResult r = Search(region);
  if (r.graph.has_value()) {
    // Whatever was chosen must not walk the keys with a running max.
    for (const TileOp& op : r.graph->kernels[0].block.tile_ops) {
      EXPECT_EQ(op.rescale, -1) << r.report.chosen_text;
    }
  }
}

// The block of the found kernel survives a JSON round trip (rescale
// included), and malformed versions of it get clear errors.
TEST(AttentionSearch, RescaledBlocksRoundTripAndBadOnesAreRejected) {
  FusedCase c = AttentionCase(2, 5, 8, 300);
  SearchResult r = Search(c.region);
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  absl::StatusOr<ugraph::KernelGraph> back = ugraph::FromJson(ugraph::ToJson(*r.graph));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ugraph::ToJson(*back), ugraph::ToJson(*r.graph));
  const ugraph::BlockGraph& good = r.graph->kernels[0].block;
  ASSERT_TRUE(ugraph::AnalyzeTiles(good).ok());
  int stable = -1, acc = -1, matmul = -1;
  for (size_t i = 0; i < good.tile_ops.size(); ++i) {
    if (good.tile_ops[i].kind == TileOp::Kind::kStableExp) stable = static_cast<int>(i);
    if (good.tile_ops[i].kind == TileOp::Kind::kAccumulate) acc = static_cast<int>(i);
    if (good.tile_ops[i].kind == TileOp::Kind::kMatmul) matmul = static_cast<int>(i);
  }
  ASSERT_GE(stable, 0);
  ASSERT_GE(acc, 0);
  auto error = [&](const std::function<void(ugraph::BlockGraph&)>& mutate) {
    ugraph::BlockGraph b = good;
    mutate(b);
    absl::StatusOr<std::vector<ugraph::TileInfo>> tiles = ugraph::AnalyzeTiles(b);
    return tiles.ok() ? std::string("accepted") : std::string(tiles.status().message());
  };
  EXPECT_THAT(error([&](ugraph::BlockGraph& b) { b.tile_ops[acc].rescale = matmul; }),
              ::testing::HasSubstr("not an earlier stable exp"));
  EXPECT_THAT(error([&](ugraph::BlockGraph& b) { b.tile_ops[matmul].rescale = stable; }),
              ::testing::HasSubstr("only accumulators are rescaled"));
  EXPECT_THAT(error([&](ugraph::BlockGraph& b) { b.tile_ops[stable].axis = 7; }),
              ::testing::HasSubstr("stable exp axis"));
  // The max along the query rows (a grid axis) would differ between blocks.
  EXPECT_THAT(error([&](ugraph::BlockGraph& b) { b.tile_ops[stable].axis = 1; }),
              ::testing::HasSubstr("loop axis or an axis read whole"));
}

// Every kernel the search emits for attention compiles (NVRTC needs no GPU).
TEST(AttentionSearch, TheChosenKernelsCompile) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  for (const FusedCase& c : {AttentionCase(2, 256, 64, 4096), AttentionCase(64, 1, 128, 4096),
                             QkNormAttentionCase(2, 256, 64, 4096)}) {
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    for (size_t k = 0; k < r.graph->kernels.size(); ++k) {
      absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*r.graph, static_cast<int>(k));
      ASSERT_TRUE(source.ok()) << source.status();
      ExpectCompilesForHopper(**nvrtc, *source);
    }
  }
}

// The kernels of other schedules (query tiles of 1 to 64 rows, with
// tails; key tiles; splits; the head dim read whole to free an axis for
// the split) compile too, and at head dim 64 most run their products on
// tensor cores (key tiles of 32 do not: 4 vectors a row).
TEST(AttentionSearch, ScheduleVariantsCompile) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  for (const FusedCase& c : {AttentionCase(2, 256, 64, 4096), AttentionCase(3, 17, 16, 4097)}) {
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
    const bool wide = c.region.class_size[2] == Dim(64);
    int tensor_cores = 0, compiled = 0;
    for (const Schedule& s : ScheduleSpread(c.region, r.candidate->schedule, 6)) {
      Candidate candidate = *r.candidate;
      candidate.schedule = s;
      absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(c.region, candidate, c.region.class_size);
      ASSERT_TRUE(graph.ok()) << graph.status();
      absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*graph, 0);
      if (!source.ok()) continue;  // e.g. tiles past shared memory: the search skips these too
      tensor_cores += source->matmul_path == codegen::MatmulPath::kTensorCores;
      ExpectCompilesForHopper(**nvrtc, *source);
      ++compiled;
    }
    EXPECT_GE(compiled, 4);
    if (wide) {
      EXPECT_GE(tensor_cores, compiled / 2) << "f16 products on tensor cores";
    }
  }
}

// A split loop's last block reads the blocks' partial sums with all their
// loads in flight at once (the loops over blocks unrolled), 16 bytes at a
// time where four neighbours share a row's rescale (O's rows at head dim
// 64), one by one where they do not (O's rows at head dim 17). Each
// block's factor is taken once per row, with the row sums, in the pass
// that takes the blocks' maxes; O's pass reads the factors from shared
// memory. A barrier parts the four-wide writes from the linear reads after
// them. Both compile.
TEST(AttentionSearch, TheSplitCombineLoadsEveryBlocksPartialsAtOnce) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const int64_t d : {64, 17}) {
    const FusedCase c = AttentionCase(2, 33, d, 4096);
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
    const codegen::KernelSource source = KernelWithSchedule(c.region, *r.candidate, [&](const Schedule& s) {
      bool whole_rows = true;  // the head dim read whole
      for (size_t k = 0; k < s.map.size(); ++k) {
        whole_rows &= c.region.class_size[k] != Dim(d) || s.map[k] == Schedule::Map::kFull || s.tile[k] >= d;
      }
      return whole_rows && s.loop_split == 8 && s.threads == 256;
    });
    // The last block's code (where the blocks can go on together, theirs
    // comes first: SourceFor).
    size_t combine = source.source.find("// every row: the last block alone combines and stores them");
    if (combine == std::string::npos) combine = source.source.find("if (split_last)");
    ASSERT_NE(combine, std::string::npos) << source.source;
    const std::string last = source.source.substr(combine);
    EXPECT_EQ(last.find("__ldcg(reinterpret_cast<const float4*>(partials") != std::string::npos, d == 64) << last;
    // One exponential per block and row: the row sums added beside it. A
    // warp per row (few rows a block) loads the sums with the maxes.
    const size_t factor = last.find("split_factor(maxes[");
    ASSERT_NE(factor, std::string::npos) << last;
    EXPECT_EQ(factor, last.rfind("split_factor(")) << last;
    if (last.find("m = warp_reduce<true>(m);") != std::string::npos) {
      EXPECT_THAT(last, ::testing::ContainsRegex("parts[0-9]+\\[j\\] = [^;]*__ldcg\\(partials \\+ q \\* "));
      EXPECT_NE(last.find("[j] * f;", factor), std::string::npos) << last;
    } else {
      EXPECT_NE(last.find(" += __ldcg(partials + q * ", factor), std::string::npos) << last;
    }
    EXPECT_THAT(last, ::testing::ContainsRegex("const float f[0-9]+ = \\(scratch \\+ [0-9]+\\)\\[q \\* "));
    const size_t loop = last.find("for (int q = 0; q < 8; ++q) {");
    ASSERT_NE(loop, std::string::npos) << last;
    EXPECT_NE(last.rfind("#pragma unroll", loop), std::string::npos);
    EXPECT_LT(loop - last.rfind("#pragma unroll", loop), 40u) << last;
    const size_t wide = last.find("[l + 3] = sum.w;");
    if (wide != std::string::npos) {
      const size_t name = last.rfind(' ', wide) + 1;
      const std::string buffer = last.substr(name, wide - name);
      EXPECT_LT(last.find("__syncthreads();", wide), last.find(buffer + "[l]", wide)) << last;
    }
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, source);
  }
}

// One query's K and V tiles are large (128 keys by head dim 128, and half
// of V's columns: 48 KiB a step in f16); the ring takes more than its
// usual 96 KiB for 4 stages, three steps in flight, not one.
TEST(AttentionSearch, ASingleQueryStreamsThreeStepsAhead) {
  const FusedCase c = AttentionCase(64, 1, 128, 4096);
  SearchResult r = Search(c.region);
  ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
  const codegen::KernelSource source = KernelWithSchedule(c.region, *r.candidate, [&](const Schedule& s) {
    bool keys = false, half = false;
    for (size_t k = 0; k < s.map.size(); ++k) {
      keys |= s.map[k] == Schedule::Map::kLoop && s.tile[k] == 128;
      half |= s.map[k] == Schedule::Map::kGrid && c.region.class_size[k] == Dim(128) && s.tile[k] == 64;
    }
    return keys && half && s.loop_split == 1 && s.threads == 256;
  });
  EXPECT_THAT(source.source, ::testing::HasSubstr("4 stages of 2048 vectors"));
  EXPECT_THAT(source.source, ::testing::HasSubstr("copy_async_wait<2>()"));
  EXPECT_GT(source.dynamic_shared_bytes, 192 * 1024);
}

// K stored by rows ([batch, keys, head_dim], K^T a transposed view): the
// search finds the same online softmax; the kernels load K's tiles as
// vectors along the head dim and, in f16, read them as the rows of the
// scores' B (ldmatrix without .trans); they verify and compile.
TEST(AttentionSearch, KeysStoredByRowsAreReadAsRows) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const FusedCase& c : {RowKeysAttentionCase(2, 256, 64, 4096), RowKeysAttentionCase(3, 17, 16, 300)}) {
    SCOPED_TRACE(c.name);
    const Candidate found = FoundAndVerified(c, 61);
    if (found.ops.empty() || !nvrtc.ok()) continue;
    const std::vector<codegen::KernelSource> sources = CompiledSpread(**nvrtc, c.region, found, 6);
    EXPECT_GE(sources.size(), 4u);
    if (c.region.class_size[2] == Dim(64)) {
      EXPECT_GE(Containing(sources, "load_b_fragment_rows(") + Containing(sources, "load_b_fragments_rows_x2("), 1);
    }
  }
}

// Grouped KV heads (K and V [kv_heads, 1, keys, head_dim] broadcast over a
// group of query heads) with the attention op's 1/sqrt(d) scale: one kernel
// that reads K and V through an expand over the group (no copy per query
// head) and scales Q where it is read (the scale moved off the scores);
// it verifies and compiles.
TEST(AttentionSearch, GroupedKvHeadsAreReadThroughABroadcast) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const FusedCase& c : {GroupedAttentionCase(2, 4, 128, 64, 1024), GroupedAttentionCase(3, 2, 17, 16, 300)}) {
    SCOPED_TRACE(c.name);
    const Candidate found = FoundAndVerified(c, 67);
    if (found.ops.empty()) continue;
    const ugraph::KernelGraph graph = ValueOrFail(Instantiate(c.region, found, c.region.class_size));
    ASSERT_EQ(graph.kernels.size(), 1u);
    const ugraph::BlockGraph& b = graph.kernels[0].block;
    int expanded = 0;
    for (const ugraph::InputIterator& it : b.inputs) {
      expanded += !it.view.steps.empty() && it.view.steps.back().kind == ugraph::ViewStep::Kind::kExpand;
    }
    EXPECT_EQ(expanded, 2) << ugraph::ToText(graph);
    int scaled_reads = 0;
    for (const TileOp& op : b.tile_ops) {
      scaled_reads += op.kind == TileOp::Kind::kBinary && op.op == OpKind::kMul &&
                      b.tile_ops[op.args[0]].kind == TileOp::Kind::kInput &&
                      b.tile_ops[op.args[1]].kind == TileOp::Kind::kConstant;
    }
    EXPECT_EQ(scaled_reads, 1) << ugraph::ToText(graph);
    // (The spread's wider tiles of the larger case pass shared memory; the search skips those.)
    if (nvrtc.ok()) { EXPECT_GE(CompiledSpread(**nvrtc, c.region, found, 4).size(), 1u); }
  }
}

// Causal attention (prefill, grouped KV heads, masked as kiln's attention
// masks it; square, and with keys cached before the queries): the mask
// joins the region as its stable exp's, the search finds one kernel whose
// stable exp carries it, the verifier rejects that kernel without the mask
// or with its diagonal moved by one, and the kernels compile.
TEST(AttentionSearch, CausalPrefillIsOneKernelWithTheMaskInItsSoftmax) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  int larger = 0;  // schedules with query tiles larger than key tiles
  for (const FusedCase& c : {CausalAttentionCase(2, 2, 128, 64, 128), CausalAttentionCase(1, 3, 17, 16, 40)}) {
    SCOPED_TRACE(c.name);
    int masked = 0;
    for (const RegionOp& op : c.region.ops) masked += op.mask.on();
    ASSERT_EQ(masked, 1) << c.region.ToString();
    EXPECT_EQ(c.region.inputs.size(), 3u) << c.region.ToString();
    const Candidate found = FoundAndVerified(c, 71);
    if (found.ops.empty()) continue;
    int stable = -1;
    for (size_t i = 0; i < found.ops.size(); ++i) {
      if (found.ops[i].op.kind == TileOp::Kind::kStableExp) stable = static_cast<int>(i);
    }
    ASSERT_GE(stable, 0);
    EXPECT_TRUE(found.ops[stable].op.mask.on());
    Candidate unmasked = found;
    unmasked.ops[stable].op.mask = {};
    EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, unmasked, 3, 72)));
    for (int64_t moved : {-1, 1}) {
      Candidate off = found;
      off.ops[stable].op.mask.shift += moved;
      EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, off, 3, 73))) << "diagonal moved by " << moved;
    }
    EXPECT_TRUE(ValueOrFail(CheckFloatingPoint(c.region, found, 74)).passed);
    // The schedules with query tiles larger than key tiles pass the checks
    // (the verification sizes keep at least as many keys as queries).
    int rows = -1, keys = -1;
    for (const RegionOp& op : c.region.ops) {
      if (!op.mask.on()) continue;
      rows = op.classes[op.mask.row];
      keys = op.classes[op.mask.col];
    }
    for (const Schedule& s : ScheduleVariants(c.region, found.schedule)) {
      if (s.map[keys] == Schedule::Map::kFull || s.tile[rows] <= s.tile[keys]) continue;
      ++larger;
      Candidate variant = found;
      variant.schedule = s;
      absl::StatusOr<FloatCheck> check = CheckFloatingPoint(c.region, variant, 75);
      EXPECT_TRUE(check.ok() && check->passed) << s.ToString(c.region) << " " << check.status();
    }
    // The mask survives the cache's JSON; a malformed one gets a clear error.
    const ugraph::KernelGraph graph = ValueOrFail(Instantiate(c.region, found, c.region.class_size));
    const ugraph::KernelGraph back = ValueOrFail(ugraph::FromJson(ugraph::ToJson(graph)));
    EXPECT_EQ(ugraph::ToJson(back), ugraph::ToJson(graph));
    for (const TileOp& op : graph.kernels[0].block.tile_ops) {
      if (op.kind != TileOp::Kind::kStableExp) continue;
      ugraph::BlockGraph swapped = graph.kernels[0].block;
      for (TileOp& t : swapped.tile_ops) {
        if (t.kind == TileOp::Kind::kStableExp) std::swap(t.mask.row, t.mask.col);
      }
      EXPECT_THAT(ugraph::AnalyzeTiles(swapped).status().message(),
                  ::testing::HasSubstr("a causal mask's keys are the axis of the stable exp's max"));
      ugraph::BlockGraph on_a_product = graph.kernels[0].block;
      for (TileOp& t : on_a_product.tile_ops) {
        if (t.kind == TileOp::Kind::kMatmul) t.mask = op.mask;
      }
      EXPECT_THAT(ugraph::AnalyzeTiles(on_a_product).status().message(),
                  ::testing::HasSubstr("only stable exps are masked"));
    }
    if (nvrtc.ok()) { EXPECT_GE(CompiledSpread(**nvrtc, c.region, found, 4).size(), 1u); }
  }
  EXPECT_GT(larger, 0);
}

// Under a causal mask a block's loop ends at its last row's key, so the
// blocks along the mask's rows take their grid points last-first, and
// that axis is the slowest of the launch order (the other launch dims'
// blocks under it): the longest start first over the whole grid, and the
// short ones fill the last wave. Plain attention keeps the usual order.
// The flash step takes its exps in base 2 from the row's shift in log2
// units, and rescales O only where some row's max moved (a warp vote).
TEST(AttentionSearch, CausalBlocksRunLongestFirst) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  const std::regex reversed(
      R"(for \((i64|int) bg([0-2]) = \(4096(LL)? \+ [0-9]+\) / [0-9]+ - 1 - )"
      R"(static_cast<\1>\((blockIdx\.[xyz]|vb\2)\); )"
      R"(bg\2 >= 0; bg\2 -= static_cast<\1>\(gridDim\.[xyz]\)\))");
  int causal = 0, flash = 0, slowest = 0;
  for (const auto& [s, graph, source] : VariantKernels(CausalAttentionCase(2, 4, 4096, 64, 4096))) {
    const std::string& code = source.source;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(code, m, reversed)) << code;
    ++causal;
    // Only the rows' grid axis runs backwards; where other launch dims
    // follow it, it runs slowest.
    const std::string axis = m[2];
    if (std::string(m[4]).rfind("vb", 0) == 0) {
      EXPECT_THAT(code, ::testing::HasSubstr(absl::StrCat("const unsigned vb", axis,
                                                          " = static_cast<unsigned>(vb_rest / vb_others);")));
      ++slowest;
    }
    for (const char* other : {"0", "1", "2"}) {
      if (axis == other) continue;
      EXPECT_EQ(code.find(absl::StrCat("bg", other, " >= 0")), std::string::npos);
    }
    if (code.find("in registers (no barrier)") == std::string::npos) continue;
    ++flash;
    EXPECT_THAT(code, ::testing::HasSubstr("shift_log2[sl][h] = log2_shift(after);"));
    EXPECT_THAT(code, ::testing::HasSubstr("stable_exp_log2(sc[sl][v][h], shift_log2[sl][h >> 1])"));
    EXPECT_EQ(code.find("stable_exp(sc["), std::string::npos);
    EXPECT_THAT(code,
                ::testing::HasSubstr("if (__any_sync(0xffffffffu, factor[sl][0] != 1.0f || factor[sl][1] != 1.0f)) {"));
    if (nvrtc.ok() && flash <= 2) ExpectCompilesForHopper(**nvrtc, source);
  }
  EXPECT_GE(causal, 4);
  EXPECT_GE(flash, 2);
  EXPECT_GE(slowest, 4);
  for (const auto& [s, graph, source] : VariantKernels(AttentionCase(2, 256, 64, 4096))) {
    EXPECT_FALSE(std::regex_search(source.source, reversed)) << s.ToString(AttentionCase(2, 256, 64, 4096).region);
    EXPECT_EQ(source.source.find(" >= 0; bg"), std::string::npos);
    EXPECT_EQ(source.source.find("vb_rest"), std::string::npos);
  }
}

// Decode (one query row) with 16 keys a step per warp: the warps share out
// the step's keys (each its own running max, sums and P@V fragments, one
// barrier a step, all 8 warps on tensor cores), and the kernels compile;
// the generic form takes five barriers a step.
TEST(AttentionSearch, DecodeStepsShareTheirKeysAmongWarps) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  for (const FusedCase& c : {AttentionCase(64, 1, 128, 4096), AttentionCase(3, 1, 64, 300)}) {
    SearchResult r = Search(c.region);
    ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
    int shared = 0;
    for (const Schedule& s : ScheduleVariants(c.region, r.candidate->schedule)) {
      int loop = -1;
      for (size_t k = 0; k < s.map.size(); ++k) loop = s.map[k] == Schedule::Map::kLoop ? static_cast<int>(k) : loop;
      if (loop < 0 || s.tile[loop] != 16 * (s.threads / 32)) continue;
      Candidate candidate = *r.candidate;
      candidate.schedule = s;
      const ugraph::KernelGraph graph = ValueOrFail(Instantiate(c.region, candidate, c.region.class_size));
      absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, 0);
      // (Output tiles narrower than 64 columns keep P@V off tensor cores.)
      if (!source.ok() || source->step_barriers != 1) continue;
      EXPECT_EQ(source->mma_warps, s.threads / 32) << s.ToString(c.region);
      if (shared++ < 3) ExpectCompilesForHopper(**nvrtc, *source);
    }
    EXPECT_GE(shared, 1) << c.name;
  }
}

// Query tiles with fewer slabs of 16 rows than warps (gqa_bs1's 64 rows
// with 8 warps), where no SM gets a second block: the warps come in groups
// of one per slab, and each group takes its share of a step's keys (its
// own running max, row sums and P@V fragments) where the other warps used
// to idle; after the loop the groups are brought to group 0's max through
// the scratch. Every warp is on the step's products, which take only the
// ring's barrier. With as many warps as slabs (4 warps), or more blocks
// than SMs, or where the merge's scratch leaves no ring that fits, no
// groups.
TEST(AttentionSearch, WarpsToSpareShareOutEachStepsKeysInGroups) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  const FusedCase c = AttentionCase(2, 256, 64, 4096);
  int grouped = 0, owned = 0;
  for (const auto& [s, graph, source] : VariantKernels(c)) {
    const std::string& code = source.source;
    if (code.find("in registers (no barrier)") == std::string::npos) continue;
    if (code.find("its group's") == std::string::npos) {
      ++owned;
      EXPECT_EQ(code.find("kg = warp / "), std::string::npos) << s.ToString(c.region);
      continue;
    }
    ++grouped;
    EXPECT_EQ(s.threads, 256) << s.ToString(c.region);
    EXPECT_EQ(source.flash_groups, 2) << s.ToString(c.region);
    EXPECT_LE(ugraph::LaunchedBlocks(graph.kernels[0].block), ugraph::kPlannedSms) << s.ToString(c.region);
    EXPECT_EQ(source.mma_warps, 8) << s.ToString(c.region);
    EXPECT_EQ(source.step_threads, 256) << s.ToString(c.region);
    EXPECT_EQ(source.step_barriers, 1) << s.ToString(c.region);
    EXPECT_THAT(code, ::testing::HasSubstr("const int m0 = warp % 4 * 16, kg = warp / 4;"));
    EXPECT_THAT(code, ::testing::ContainsRegex("each warp 16 rows and its group's ([0-9]+) keys of "));
    EXPECT_THAT(code, ::testing::HasSubstr("brought to group 0's warp of the same slab and lane"));
    EXPECT_THAT(code, ::testing::HasSubstr("theirs[h] = split_factor(other, top);"));
    EXPECT_EQ(code.find("if (warp < 4)"), std::string::npos) << "no warp idles";
    if (nvrtc.ok() && grouped <= 2) ExpectCompilesForHopper(**nvrtc, source);
  }
  EXPECT_GE(grouped, 1);
  EXPECT_GE(owned, 1);
  // QK-norm at head dim 128, 64 query rows, 128 keys a step, 8 warps, no
  // split: the merge's scratch would leave no ring that fits in shared
  // memory beside QK-norm's tiles, so the warps past the slabs idle
  // instead of the schedule failing.
  const FusedCase wide = QkNormAttentionCase(2, 256, 128, 4096);
  int idle = 0;
  for (const auto& [s, graph, source] : VariantKernels(wide)) {
    bool shape = s.threads == 256 && s.loop_split == 1;
    for (size_t k = 0; k < s.map.size(); ++k) {
      if (s.map[k] == Schedule::Map::kLoop) shape = shape && s.tile[k] == 128;
      if (s.map[k] == Schedule::Map::kGrid && s.grid_axis[k] == 1) shape = shape && s.tile[k] == 64;
      if (s.map[k] == Schedule::Map::kGrid && s.grid_axis[k] == 0) shape = false;  // the head dim read whole
      if (s.map[k] == Schedule::Map::kGrid && s.grid_axis[k] == 2) shape = shape && s.tile[k] == 1;
    }
    if (!shape) continue;
    EXPECT_EQ(source.flash_groups, 1) << s.ToString(wide.region);
    EXPECT_THAT(source.source, ::testing::HasSubstr("if (warp < 4)"));
    ++idle;
  }
  EXPECT_EQ(idle, 1);
}

// Query tiles with two slabs of 16 rows for each warp (128 rows, 4 warps:
// FlashAttention-2's layout): each warp keeps 32 rows of S, P and O in
// registers, each of K's and V's fragments feeds both slabs' products, and
// the step takes only the ring's barrier. Q's fragments stay in registers
// at head dim 64 (in shared memory where the products take wgmma); at 128
// (the causal case, each slab's rows masked) they are packed into shared
// memory before the loop. The kernels compile.
TEST(AttentionSearch, TwoSlabsAWarpShareEachBFragment) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  int compiled = 0;
  for (const bool causal : {false, true}) {
    const FusedCase c = causal ? CausalAttentionCase(2, 4, 4096, 128, 4096) : AttentionCase(2, 256, 64, 4096);
    int two = 0, two_blocks = 0;
    for (const auto& [s, graph, source] : VariantKernels(c)) {
      const std::string& code = source.source;
      if (code.find("each warp 32 rows") == std::string::npos) continue;
      ++two;
      EXPECT_EQ(s.threads, 128) << s.ToString(c.region);
      EXPECT_EQ(source.mma_warps, 4) << s.ToString(c.region);
      EXPECT_EQ(source.step_threads, 128) << s.ToString(c.region);
      EXPECT_EQ(source.step_barriers, 1) << s.ToString(c.region);
      EXPECT_EQ(source.flash_groups, 1) << s.ToString(c.region);
      EXPECT_THAT(code, ::testing::HasSubstr("const int m0 = warp * 32;"));
      EXPECT_THAT(code, ::testing::ContainsRegex("float sc\\[2\\]\\[[0-9]+\\]\\[4\\] = \\{\\};"));
      EXPECT_THAT(code, ::testing::ContainsRegex("float o[0-9]+\\[2\\]\\[[0-9]+\\]\\[4\\] = \\{\\};"));
      EXPECT_THAT(code, ::testing::ContainsRegex("mma_(f16|bf16)\\(o[0-9]+\\[sl\\]\\[v\\], fa\\[sl\\], fb\\);"));
      EXPECT_THAT(code, ::testing::HasSubstr("const int r = m0 + 16 * sl + g + 8 * h;"));
      if (!causal && code.find("wgmma_m64") == std::string::npos) {
        EXPECT_THAT(code, ::testing::HasSubstr("unsigned qa[2][4][4];"));
      } else if (!causal) {
        // wgmma's: Q's fragments from shared memory every step (see FlashPlan::wgmma).
        EXPECT_THAT(code, ::testing::HasSubstr("const uint4 q = qa[((warp * 2 + sl) * 4 + c) * 32 + lane];"));
      } else {
        EXPECT_THAT(code, ::testing::HasSubstr("qa[((warp * 2 + sl) * 8 + c) * 32 + lane] = make_uint4("));
        EXPECT_THAT(code, ::testing::HasSubstr("const uint4 q = qa[((warp * 2 + sl) * 8 + c) * 32 + lane];"));
        EXPECT_THAT(code, ::testing::HasSubstr("(m0 + 16 * sl + g + 8 * (h >> 1))"));
        // Two blocks an SM at 32 keys a step: scaled Q over Q, both and O in the ring's space.
        two_blocks += code.find("__launch_bounds__(128, 2)") != std::string::npos;
      }
      if (nvrtc.ok() && compiled++ < 3) ExpectCompilesForHopper(**nvrtc, source);
    }
    EXPECT_GE(two, 1) << c.region.ToString();
    if (causal) { EXPECT_GE(two_blocks, 1); }
  }
}

}  // namespace
}  // namespace kiln::search
