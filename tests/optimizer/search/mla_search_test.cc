// Multi-head latent attention from its naive form: K = C W_uk and V = C W_uv
// up-projected from the latent cache C, then softmax(q K^T) V per head. The
// search reassociates the products (q (C W_uk)^T = (q W_uk^T) C^T, and
// P (C W_uv) = (P C) W_uv): one kernel that takes q W_uk^T once before the
// loop, runs attention over the latent (its keys and values both C) and
// applies W_uv after the loop, so K and V are never formed, let alone
// written to device memory. All on the CPU.
#include <algorithm>
#include <array>
#include <functional>
#include <regex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/search/verify.h"
#include "optimizer/tile_analysis.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;
using ugraph::TileOp;

// With `one_kernel`, a timer under which a single kernel runs fastest:
// the cost model may rank the factored form (three kernels, factor.h)
// first, which factor_test.cc covers.
SearchResult Search(const Region& region, double budget_seconds, bool one_kernel = false) {
  SearchOptions options;
  options.budget_seconds = budget_seconds;
  if (one_kernel) {
    options.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
      return g.kernels.size() == 1 ? 1.0 : 2.0;
    };
  }
  return ValueOrFail(Superoptimize(region, options));
}

// The products that read each weight, by phase.
struct WeightUse {
  int wuk_before = 0, wuk_in = 0, wuv_in = 0, wuv_after = 0;
};

WeightUse WeightProducts(const FusedCase& c, const ugraph::BlockGraph& b) {
  // The graph's tensor ids are the region's inputs; MlaCase's are q, C, W_uk, W_uv.
  auto region_input = [&](const Tensor& t) {
    const auto& in = c.region.inputs;
    return static_cast<int>(std::find(in.begin(), in.end(), t.node().get()) - in.begin());
  };
  const int kWuk = region_input(c.inputs[2]), kWuv = region_input(c.inputs[3]);
  const std::vector<ugraph::TileInfo> tiles = ValueOrFail(ugraph::AnalyzeTiles(b));
  // Whether tile `op` derives from `tensor` through elementwise ops (the
  // search may scale W_uv by 1 / the row sum before its product).
  std::function<bool(int, int)> reads = [&](int op, int tensor) {
    const TileOp& t = b.tile_ops[op];
    if (t.kind == TileOp::Kind::kInput) return b.inputs[t.input].view.tensor == tensor;
    if (t.kind != TileOp::Kind::kUnary && t.kind != TileOp::Kind::kBinary) return false;
    for (int a : t.args) {
      if (reads(a, tensor)) return true;
    }
    return false;
  };
  WeightUse use;
  for (size_t i = 0; i < b.tile_ops.size(); ++i) {
    const TileOp& op = b.tile_ops[i];
    if (op.kind != TileOp::Kind::kMatmul) continue;
    for (int a : op.args) {
      const bool before = !tiles[i].in_loop && !tiles[i].after_loop;
      if (reads(a, kWuk)) (before ? use.wuk_before : use.wuk_in) += 1;
      if (reads(a, kWuv)) (tiles[i].after_loop ? use.wuv_after : use.wuv_in) += 1;
    }
  }
  return use;
}

// The tile op that reads tensor `tensor` as input, or -1.
int InputTileOf(const ugraph::BlockGraph& b, int tensor) {
  for (size_t i = 0; i < b.tile_ops.size(); ++i) {
    const TileOp& op = b.tile_ops[i];
    if (op.kind == TileOp::Kind::kInput && b.inputs[op.input].view.tensor == tensor) return static_cast<int>(i);
  }
  return -1;
}

// The generated kernel's text from the line that starts with `first` up to
// the next `// x` comment line; empty where no line starts so.
std::string Section(const std::string& source, const std::string& first) {
  const size_t begin = source.find("// " + first);
  if (begin == std::string::npos) return "";
  const size_t end = source.find("// x", begin + 3 + first.size());
  return source.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// In the chosen kernel at the bench's shape, W_uv, which only the product
// after the loop reads, is loaded after the loop (by the last block of a
// split loop), not before it with every block waiting on it. W_uk^T, a
// transposed view read once before the loop, is widened a row of the tile
// at a time, adjacent lanes on adjacent columns (no bank conflicts): its
// store index adds the task's column, the one that varies fastest with l.
void ExpectWeightsLoadedWhereTheyAreRead(const FusedCase& c, const ugraph::KernelGraph& graph) {
  const std::string source = ValueOrFail(codegen::GenerateKernel(graph, 0)).source;
  const ugraph::BlockGraph& b = graph.kernels[0].block;
  auto region_input = [&](const Tensor& t) {
    const auto& in = c.region.inputs;
    return static_cast<int>(std::find(in.begin(), in.end(), t.node().get()) - in.begin());
  };
  const int wuk = InputTileOf(b, region_input(c.inputs[2])), wuv = InputTileOf(b, region_input(c.inputs[3]));
  ASSERT_GE(wuk, 0);
  ASSERT_GE(wuv, 0);
  const size_t loop_end = source.find("the copies of steps past the end");
  const size_t wuv_load = source.find(absl::StrCat("// x", wuv, " = input #"));
  ASSERT_NE(loop_end, std::string::npos) << source;
  ASSERT_NE(wuv_load, std::string::npos) << source;
  EXPECT_GT(wuv_load, loop_end) << source;
  const std::string widen = Section(source, absl::StrCat("x", wuk, ": widen the loaded bits into the tile"));
  ASSERT_FALSE(widen.empty()) << source;
  const std::string columns =
      absl::StrCat(" = static_cast<int>(threadIdx.x % ", c.region.class_size[3].value(), ");");
  const size_t at = widen.find(columns);
  ASSERT_NE(at, std::string::npos) << widen;
  const size_t name = widen.rfind("const int ", at) + 10;
  const std::string column = widen.substr(name, at - name);
  EXPECT_NE(widen.find(absl::StrCat(" + ", column, " + j * ")), std::string::npos) << widen;
}

TEST(MlaSearch, TheUpProjectionsAreAbsorbedIntoOneKernel) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const FusedCase& c : {MlaCase(3, 48, 17, 127), MlaCase(16, 256, 64, 4096)}) {
    SCOPED_TRACE(c.name);
    // The bench's shape at the default budget, where its search takes about
    // 0.4 s on a 2-core machine (8-12 s before the guard paths of
    // guard_paths.h answered most of its questions without Z3, and before
    // matmuls over one element were left to regions that multiply
    // elementwise). The odd shape has four mappings to search, not one.
    const bool bench_shape = c.region.class_size[3] == Dim(256);
    SearchResult r = Search(c.region, bench_shape ? SearchOptions{}.budget_seconds : 20, /*one_kernel=*/true);
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    if (bench_shape) {
      EXPECT_FALSE(r.report.out_of_time) << r.report.ToString();
    }
    ASSERT_EQ(r.graph->kernels.size(), 1u) << r.report.chosen_text;
    for (const ugraph::DTensor& t : r.graph->tensors) {
      EXPECT_NE(t.role, ugraph::TensorRole::kIntermediate) << "nothing but the output is written";
    }
    const WeightUse use = WeightProducts(c, r.graph->kernels[0].block);
    EXPECT_EQ(use.wuk_before, 1) << "q W_uk^T, once before the loop\n" << r.report.chosen_text;
    EXPECT_EQ(use.wuv_after, 1) << "W_uv applied after the loop\n" << r.report.chosen_text;
    EXPECT_EQ(use.wuk_in + use.wuv_in, 0) << "no K or V tile in the loop\n" << r.report.chosen_text;
    EXPECT_TRUE(ValueOrFail(VerifyOverFiniteFields(c.region, *r.candidate, 3, 41)));
    EXPECT_LE(r.report.float_error, 1e-2);
    if (!nvrtc.ok()) continue;
    // The chosen kernel and others of its schedules compile. At the
    // bench's shape the scores read C^T as the rows of C (ldmatrix without
    // .trans), from the ring that C's tiles for the values fill: C is
    // copied in once a step.
    const std::vector<codegen::KernelSource> sources = CompiledSpread(**nvrtc, c.region, *r.candidate, 4);
    EXPECT_GE(sources.size(), 1u);
    if (bench_shape) {  // tiles that fit both forms
      EXPECT_GE(Containing(sources, "load_b_fragment_rows(") + Containing(sources, "load_b_fragments_rows_x2("), 1);
      EXPECT_GE(Containing(sources, "the same elements as x"), 1);
      ExpectWeightsLoadedWhereTheyAreRead(c, *r.graph);
    }
  }
}

// Where the ring's prologue lies against the wait for the kernel before.
bool PrologueBeforeWait(const std::string& source) {
  const size_t prologue = source.find("steps' vector tiles, copied asynchronously into the ring");
  const size_t wait = source.find("wait_for_prior_grid();");
  EXPECT_NE(prologue, std::string::npos) << source;
  EXPECT_NE(wait, std::string::npos) << source;
  return prologue < wait;
}

// Q's f32 tile (x0, read only before the loop) lies in the last stage of
// the ring that `ring_name` matches, which the prologue leaves free.
void ExpectQInTheRingsLastStage(const std::string& source, const std::string& ring_name) {
  std::smatch ring, q;
  const std::regex ring_line(ring_name + R"( = reinterpret_cast<uint4\*>\(smem \+ (\d+)\);  // (\d+) stages of (\d+))");
  ASSERT_TRUE(std::regex_search(source, ring, ring_line)) << source;
  ASSERT_TRUE(std::regex_search(source, q, std::regex(R"(float\* const x0 = smem \+ (\d+);)"))) << source;
  const int64_t stages = std::stoll(ring[2]), stage_floats = 4 * std::stoll(ring[3]);
  EXPECT_EQ(std::stoll(q[1]), std::stoll(ring[1]) + (stages - 1) * stage_floats);
}

// The factored form at the bench's shape (two kernels: W_uv applied in the
// attention's, FuseRowProduct): its attention copies C, a graph input, into
// its ring before its wait for q W_uk^T's kernel, and takes q W_uk^T from
// its loaded bits to the scores' packed fragments (no f32 tile). The first
// kernel waits first (the kernel before it is not its graph's), and so does
// the attention where an output of the graph is written over C (a KV
// cache's slice update).
TEST(MlaSearch, TheAttentionCopiesTheCacheBeforeItsWait) {
  const FusedCase c = MlaCase(16, 256, 64, 4096);
  const SearchResult r = Search(c.region, SearchOptions{}.budget_seconds);
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 2u) << r.report.chosen_text;
  const codegen::KernelSource first = ValueOrFail(codegen::GenerateKernel(*r.graph, 0));
  EXPECT_FALSE(first.inputs_before_wait);
  EXPECT_FALSE(PrologueBeforeWait(first.source));
  // q W_uk^T reads W_uk transposed (its vectors along the product's k): it
  // dots them with q in registers, no f32 tile of W_uk (PlanDot).
  EXPECT_NE(first.source.find("this thread's B vectors (along k) dotted with A's rows"), std::string::npos)
      << first.source;
  const codegen::KernelSource attention = ValueOrFail(codegen::GenerateKernel(*r.graph, 1));
  EXPECT_TRUE(attention.inputs_before_wait);
  EXPECT_TRUE(PrologueBeforeWait(attention.source));
  // q W_uk^T's loaded bits go straight to the scores' packed A fragments
  // (FlashQFromBits): no f32 tile of it, nothing packed from one.
  EXPECT_NE(attention.source.find("x0 straight to x3's A fragments' words (FlashQFromBits)"), std::string::npos)
      << attention.source;
  EXPECT_EQ(attention.source.find("float* const x0 ="), std::string::npos) << attention.source;
  ugraph::KernelGraph aliased = *r.graph;
  int cache = -1;
  for (const int t : aliased.kernels[1].inputs) {  // C, then W_uv
    if (cache < 0 && aliased.tensors[t].role == ugraph::TensorRole::kInput) cache = t;
  }
  ASSERT_GE(cache, 0);
  for (ugraph::DTensor& t : aliased.tensors) t.aliases = t.role == ugraph::TensorRole::kOutput ? cache : t.aliases;
  const codegen::KernelSource over = ValueOrFail(codegen::GenerateKernel(aliased, 1));
  EXPECT_FALSE(over.inputs_before_wait);
  EXPECT_FALSE(PrologueBeforeWait(over.source));
}

// At the bench's shape, one step of 64 keys a block (64 blocks: see
// FactorProducts.MlaIsThreePartsWithTheHeadsAsTheRowsBetween). Each of the two groups of 4 warps
// takes 32 of them, its warps one tile of 8 keys each over all of the
// latent (two chains, even and odd k chunks), and the group trades its
// tiles through shared memory after a barrier of its 128 threads: a
// warp's scores take 16 products, not 64. Steps of 32 keys (2 tiles a
// group, 4 warps) keep every warp's scores whole. Both compile.
TEST(MlaSearch, AGroupOfWarpsSharesOutTheScoresAtAStepABlock) {
  const FusedCase c = MlaCase(16, 256, 64, 4096);
  const Region& region = c.region;
  SearchOptions options;
  options.time_top = 64;
  options.time_graph = SharedScoresFastest;
  const SearchResult r = ValueOrFail(Superoptimize(region, options));
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 2u) << r.report.chosen_text;
  const ugraph::BlockGraph& attention = r.graph->kernels[1].block;
  EXPECT_EQ(attention.loop_split, 64) << r.report.chosen_text;
  const codegen::KernelSource shared = ValueOrFail(codegen::GenerateKernel(*r.graph, 1));
  EXPECT_NE(shared.source.find("float own[2][1][4] = {};"), std::string::npos) << shared.source;
  EXPECT_NE(shared.source.find("sync_warps(1 + kg, 128);  // the group's warps"), std::string::npos) << shared.source;
  EXPECT_NE(shared.source.find("for (int t = 0; t < 4; ++t)"), std::string::npos) << shared.source;
  EXPECT_NE(shared.source.find("const i64 share = (steps + 63) / 64;"), std::string::npos) << shared.source;
  EXPECT_NE(shared.source.find("const i64 steps = (4096LL + 63) / 64;"), std::string::npos) << shared.source;
  // Against steps of 32 keys: every warp's scores whole.
  SearchOptions whole;
  whole.time_top = 64;
  whole.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    if (g.kernels.size() != 2 || g.kernels[1].block.loop_split != 64) return 3.0;
    absl::StatusOr<double> shared = SharedScoresFastest(g);
    if (!shared.ok()) return shared.status();
    return *shared == 1.0 ? 2.0 : 1.0;
  };
  const SearchResult w = ValueOrFail(Superoptimize(region, whole));
  ASSERT_TRUE(w.graph.has_value()) << w.report.ToString();
  ASSERT_EQ(w.graph->kernels.size(), 2u) << w.report.chosen_text;
  const codegen::KernelSource kept = ValueOrFail(codegen::GenerateKernel(*w.graph, 1));
  EXPECT_EQ(kept.source.find("sync_warps("), std::string::npos) << kept.source;
  EXPECT_NE(kept.source.find("load_b_fragments_rows_x2("), std::string::npos) << kept.source;
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status();
  ExpectCompilesForHopper(**nvrtc, shared);
  ExpectCompilesForHopper(**nvrtc, kept);
}

// At the bench's shape, 16 heads over 64 blocks: each head's 4 blocks make
// a thread block cluster along the split axis (KernelSource::split_cluster).
// Each combines a quarter of its head's row, multiplies it by its quarter
// of W_uv's rows (loaded before the meeting) and reads the cluster's
// others' sums from their shared memory for its quarter of the output
// columns; no block leaves before its cluster is done reading. The last
// block alone (no cooperative launch) adds the same quarters in the same
// order. Other shapes: W_uv's 6 columns in halves (clusters of 2); 17
// columns split no way (a whole row a block, no cluster). All compile.
TEST(MlaSearch, ARowsBlocksMakeAClusterThatSharesOutItsRowProduct) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  for (const auto& [shape, blocks] : std::vector<std::pair<std::array<int64_t, 4>, int64_t>>{
           {{16, 256, 64, 4096}, 4}, {{16, 256, 6, 4096}, 2}, {{16, 256, 17, 4096}, 1}}) {
    const auto [h, latent, d, keys] = shape;
    SCOPED_TRACE(absl::StrCat(h, "x", latent, "x", d, "x", keys));
    const FusedCase c = MlaCase(h, latent, d, keys);
    SearchOptions options;
    options.time_top = 64;
    options.time_graph = ClusterFastest;
    const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    ASSERT_EQ(r.graph->kernels.size(), 2u) << r.report.chosen_text;
    const codegen::KernelSource k = ValueOrFail(codegen::GenerateKernel(*r.graph, 1));
    EXPECT_EQ(ClusterBlocks(k), blocks) << k.source;
    const std::string& code = k.source;
    if (blocks == 1) {
      EXPECT_EQ(code.find("cluster_"), std::string::npos) << code;
    } else {
      const int split = ugraph::SplitGridAxis(r.graph->kernels[1].block);
      ASSERT_GE(split, 0);
      EXPECT_EQ(k.split_cluster[split], static_cast<unsigned>(blocks));
      const std::string b = std::string("blockIdx.") + "xyz"[split];
      EXPECT_NE(code.find(absl::StrCat("const int rp = static_cast<int>(", b, ") % ", blocks, ";")), std::string::npos)
          << code;
      EXPECT_NE(code.find(absl::StrCat("const int split_part = static_cast<int>(", b, ") % ", blocks, ";")),
                std::string::npos)
          << code;
      const size_t meet = code.find("split_gather("), arrive = code.find("cluster_arrive();", meet);
      ASSERT_NE(arrive, std::string::npos) << code;
      EXPECT_LT(code.find("its loads under the blocks' meeting"), meet) << code;
      const size_t sums =
          code.find(absl::StrCat("for (int q = 0; q < ", blocks, "; ++q) s += cluster_load(x"), arrive);
      ASSERT_NE(sums, std::string::npos) << code;
      // Each thread stores the sums it added (no barrier between), and the
      // block counts out, before it waits for its cluster to be done.
      const size_t done = code.find("cluster_arrive();  // done with the others' sums", sums);
      const size_t store = code.find("store_f16(", sums), wait = code.find("cluster_wait();", done);
      ASSERT_NE(wait, std::string::npos) << code;
      EXPECT_LT(store, wait) << code;
      EXPECT_EQ(code.substr(sums, store - sums).find("__syncthreads"), std::string::npos) << code;
      EXPECT_LT(code.find("split_count_out(", sums), wait) << code;
      // The last block: the runs in turn, each added to those before.
      EXPECT_NE(code.find(absl::StrCat("for (int rp = 0; rp < ", blocks, "; ++rp)")), std::string::npos) << code;
      EXPECT_NE(code.find("(rp == 0 ? 0.0f : x"), std::string::npos) << code;
    }
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, k);
  }
  if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status();
}

// seed_attention's shape over 256 keys (4 steps a block, kRingFirstSteps):
// Q's f32 tile (read only before the loop) lies in the ring's last stage,
// which the prologue leaves free, so the ring's first copies go out before
// Q is loaded, after the wait (the graph's first kernel). Over 4096 keys
// (64 steps a block), Q goes first.
TEST(RingFirst, QsTileLiesInTheRingsLastStage) {
  const FusedCase c = AttentionCase(64, 1, 128, 256);
  const SearchResult r = Search(c.region, SearchOptions{}.budget_seconds);
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 1u) << r.report.chosen_text;
  const codegen::KernelSource k = ValueOrFail(codegen::GenerateKernel(*r.graph, 0));
  EXPECT_FALSE(k.inputs_before_wait);
  EXPECT_FALSE(PrologueBeforeWait(k.source));
  ExpectQInTheRingsLastStage(k.source, "ring1");
  const size_t prologue = k.source.find("steps' vector tiles, copied asynchronously into the ring");
  EXPECT_LT(prologue, k.source.find("// x0 = input #0: issue")) << k.source;
  const FusedCase many = ValueOrFail(MakeFusedCase("seed_attention"));
  const SearchResult m = Search(many.region, SearchOptions{}.budget_seconds);
  ASSERT_TRUE(m.graph.has_value()) << m.report.ToString();
  const std::string source = ValueOrFail(codegen::GenerateKernel(*m.graph, 0)).source;
  const size_t late = source.find("steps' vector tiles, copied asynchronously into the ring");
  ASSERT_NE(late, std::string::npos) << source;
  EXPECT_GT(late, source.find("// x0 = input #0: issue")) << source;
}

// The absorbed kernel passes the field tests only as found: with its
// accumulators no longer following the running max, it fails.
TEST(MlaSearch, VerificationRejectsADroppedRescale) {
  FusedCase c = MlaCase(2, 24, 8, 300);
  SearchResult r = Search(c.region, 20);
  ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
  EXPECT_TRUE(ValueOrFail(VerifyOverFiniteFields(c.region, *r.candidate, 3, 42)));
  Candidate none = *r.candidate;
  int accumulators = 0;
  for (CandidateOp& op : none.ops) {
    if (op.op.kind != TileOp::Kind::kAccumulate) continue;
    op.op.rescale = -1;
    ++accumulators;
  }
  ASSERT_EQ(accumulators, 2);
  EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, none, 3, 43)));
}

}  // namespace
}  // namespace kiln::search
