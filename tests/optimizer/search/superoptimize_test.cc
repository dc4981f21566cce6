// The three discoveries the superoptimizer must make from plain tensor code,
// and the properties of its search: pruning, verification, canonical order,
// the cache. All on the CPU: verification and the floating-point check need
// no GPU; the GPU suite runs the chosen kernels.
#include "optimizer/search/superoptimize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/search/abstract_check.h"
#include "optimizer/search/enumerate.h"
#include "optimizer/search/schedules.h"
#include "optimizer/search/verify.h"
#include "optimizer/ugraph_json.h"
#include "optimizer/ugraph_validate.h"
#include "optimizer/search/fused_cases.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ScopedTempDir;
using testing::ValueOrFail;
using ugraph::TileOp;

SearchResult Search(const Region& region, SearchOptions options = {}) {
  options.budget_seconds = 20;  // generous: CI machines are slow; the bench reports real times
  return ValueOrFail(Superoptimize(region, options));
}

// A compile that is already done.
std::shared_future<void> Done() {
  std::promise<void> done;
  done.set_value();
  return done.get_future().share();
}

int CountKind(const ugraph::BlockGraph& b, TileOp::Kind kind) {
  int n = 0;
  for (const TileOp& op : b.tile_ops) n += op.kind == kind;
  return n;
}

// One kernel, whose only device tensors are the region's inputs and output.
void ExpectSingleFusedKernel(const Region& region, const SearchResult& r) {
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  EXPECT_EQ(r.graph->kernels.size(), 1u);
  EXPECT_EQ(r.graph->tensors.size(), region.inputs.size() + 1) << "an intermediate reached device memory";
  for (const ugraph::DTensor& t : r.graph->tensors) EXPECT_NE(t.role, ugraph::TensorRole::kIntermediate);
  EXPECT_EQ(r.graph->kernels[0].block.kind, ugraph::BlockKind::kTiled);
  EXPECT_EQ(r.report.duplicates, 0);
  EXPECT_LE(r.report.float_error, 1e-2);
}

// Every matmul reads the input tiles themselves: the normalization happens
// after the product.
TEST(Superoptimize, RmsNormLinearMovesTheDivisionAfterTheMatmul) {
  FusedCase c = RmsNormLinearCase(16, 4096, 6144);
  SearchResult r = Search(c.region);
  ExpectSingleFusedKernel(c.region, r);
  const ugraph::BlockGraph& b = r.graph->kernels[0].block;
  ASSERT_EQ(CountKind(b, TileOp::Kind::kMatmul), 1) << r.report.chosen_text;
  for (const TileOp& op : b.tile_ops) {
    if (op.kind != TileOp::Kind::kMatmul) continue;
    EXPECT_EQ(b.tile_ops[op.args[0]].kind, TileOp::Kind::kInput) << r.report.chosen_text;
    EXPECT_EQ(b.tile_ops[op.args[1]].kind, TileOp::Kind::kInput) << r.report.chosen_text;
  }
  EXPECT_EQ(CountKind(b, TileOp::Kind::kAccumulate), 2) << "the product and the sum of squares";
  EXPECT_GT(b.forloop.tile, 1);
}

// Timed candidates run in interleaved rounds and keep their best round:
// a candidate slow only on its first run (the GPU's clocks still rising)
// still wins, and the report lists every timing in the cost model's order.
TEST(Superoptimize, TimingKeepsEachCandidatesBestRound) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.time_top = 3;
  options.time_rounds = 3;
  std::map<std::string, int> runs;
  std::string first;
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    const std::string key = ugraph::ToJson(g);
    if (first.empty()) first = key;
    const int run = runs[key]++;
    // The cost model's first: 50 us on its first run, then 5 us; the
    // others 10 us always.
    if (key == first) return run == 0 ? 50.0 : 5.0;
    return 10.0;
  };
  SearchResult r = Search(c.region, options);
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.report.timings.size(), 3u) << r.report.ToString();
  EXPECT_EQ(r.report.timings[0].measured_us, 5.0);
  EXPECT_EQ(r.report.timings[1].measured_us, 10.0);
  EXPECT_EQ(ugraph::ToJson(*r.graph), first);
  EXPECT_EQ(r.report.measured_us, 5.0);
  for (const auto& [key, n] : runs) EXPECT_EQ(n, 3) << "every candidate runs once a round";
  EXPECT_LE(r.report.timings[0].estimated_us, r.report.timings[1].estimated_us);
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("measured 5 us"));
}

// Whether a graph's tiled kernels run one grid point a block.
bool OnePoint(const ugraph::KernelGraph& g) {
  bool any = false;
  for (const ugraph::Kernel& k : g.kernels) any = any || k.block.one_point_blocks;
  return any;
}

// The fastest candidates are timed again in their one-point form
// (one_point_blocks), compiled beside them, in as many rounds; the faster
// form is kept, reported, and cached. Here the second fastest's one-point
// form wins; the fastest's is slower than its stride form; the third's is
// never timed.
TEST(Superoptimize, TheFastestAreTimedAgainWithAGridPointABlock) {
  ScopedTempDir dir("one_point_cache");
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.cache_dir = dir.path();
  options.budget_seconds = 20;
  options.time_top = 3;
  options.time_rounds = 2;
  options.one_point_forms = 2;
  std::vector<std::string> strided;  // first timed first
  std::set<std::string> compiled;
  std::map<std::string, int> runs;
  std::string winner;
  options.start_compile = [&](const ugraph::KernelGraph& g) {
    compiled.insert(ugraph::ToJson(g));
    return Done();
  };
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    const std::string key = ugraph::ToJson(g);
    EXPECT_TRUE(compiled.count(key)) << "timed before it was compiled";
    ++runs[key];
    if (!OnePoint(g)) {
      if (std::find(strided.begin(), strided.end(), key) == strided.end()) strided.push_back(key);
      return 10.0 + 2 * static_cast<double>(std::find(strided.begin(), strided.end(), key) - strided.begin());
    }
    ugraph::KernelGraph stride = g;
    for (ugraph::Kernel& k : stride.kernels) k.block.one_point_blocks = false;
    const std::string of = ugraph::ToJson(stride);
    EXPECT_NE(of, strided.back()) << "the third's one-point form timed";
    if (of == strided[1]) winner = key;
    return of == strided[0] ? 11.0 : 9.0;
  };
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(strided.size(), 3u) << r.report.ToString();
  EXPECT_EQ(ugraph::ToJson(*r.graph), winner);
  EXPECT_TRUE(OnePoint(*r.graph));
  EXPECT_EQ(r.report.measured_us, 9.0);
  for (const auto& [key, n] : runs) EXPECT_EQ(n, 2) << "every form runs once a round";
  EXPECT_EQ(runs.size(), 5u) << "three stride forms, two one-point forms";
  ASSERT_EQ(r.report.timings.size(), 3u);
  int with_one_point = 0;
  for (const TimedCandidate& t : r.report.timings) with_one_point += t.one_point_us.has_value();
  EXPECT_EQ(with_one_point, 2);
  EXPECT_THAT(r.report.schedule, ::testing::EndsWith(" one grid point a block"));
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("one grid point a block 9 us"));
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("one grid point a block 11 us"));
  SearchResult cached = ValueOrFail(Superoptimize(c.region, options));
  EXPECT_TRUE(cached.report.from_cache);
  ASSERT_TRUE(cached.graph.has_value());
  EXPECT_EQ(ugraph::ToJson(*cached.graph), winner) << "the flag survives the search cache";
}

// A one-point form no faster than its stride form is not kept; with
// one_point_forms = 0 none is timed; without start_compile the forms are
// still timed (time_graph compiles them).
TEST(Superoptimize, AOnePointFormNoFasterIsNotKept) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  for (const int forms : {0, 3}) {
    SearchOptions options;
    options.time_top = 3;
    options.time_rounds = 1;
    options.one_point_forms = forms;
    int one_point_runs = 0;
    options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
      if (!OnePoint(g)) return 10.0;
      ++one_point_runs;
      return 10.0;
    };
    SearchResult r = Search(c.region, options);
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    EXPECT_FALSE(OnePoint(*r.graph));
    EXPECT_EQ(one_point_runs, forms) << r.report.ToString();
    EXPECT_THAT(r.report.schedule, ::testing::Not(::testing::HasSubstr("one grid point")));
  }
}

// The default lowering is timed on a thread of its own, and each batch of
// candidates compiles on another while it is checked; but no two timings
// ever share the GPU: the default's has ended before the first candidate's
// begins. The default's time reaches the report, and a faster default
// lowering is kept.
TEST(Superoptimize, TheDefaultIsTimedAsideButNeverBesideACandidate) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.time_top = 2;
  std::atomic<int> timing{0};
  std::atomic<bool> overlapped{false}, default_done{false};
  std::atomic<int> compiled{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> default_on_caller{false};
  options.start_compile = [&](const ugraph::KernelGraph&) {
    ++compiled;
    return Done();
  };
  options.time_graph = [&](const ugraph::KernelGraph&) -> absl::StatusOr<double> {
    overlapped = overlapped || timing++ > 0 || !default_done;
    --timing;
    return 10.0;
  };
  options.time_default = [&]() -> absl::StatusOr<double> {
    default_on_caller = std::this_thread::get_id() == caller;
    overlapped = overlapped || timing++ > 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a compile
    --timing;
    default_done = true;
    return 4.0;
  };
  SearchResult r = Search(c.region, options);
  EXPECT_FALSE(overlapped) << "a candidate timed beside the default lowering";
  EXPECT_FALSE(default_on_caller);
  EXPECT_GE(compiled, 2);
  ASSERT_TRUE(r.report.default_us.has_value());
  EXPECT_EQ(*r.report.default_us, 4.0);
  EXPECT_FALSE(r.graph.has_value()) << "the default lowering (4 us) beats every candidate (10 us)";
}

// Each candidate is timed once its kernels are compiled; once one has been
// timed, a compile still running at the budget's end is not waited for
// (the candidate is left out), and the report says so.
TEST(Superoptimize, ACompileStillRunningAtTheBudgetsEndIsNotWaitedFor) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.budget_seconds = 2;
  options.time_top = 3;
  options.one_point_forms = 0;  // the grid-stride forms alone: their compiles and timings counted
  std::promise<void> after_the_search;  // the cost model's first candidate's compile
  const std::shared_future<void> slow = after_the_search.get_future().share();
  std::vector<std::string> started, timed;
  options.start_compile = [&](const ugraph::KernelGraph& g) {
    started.push_back(ugraph::ToJson(g));
    return started.size() == 1 ? slow : Done();
  };
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    timed.push_back(ugraph::ToJson(g));
    return 10.0;
  };
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  after_the_search.set_value();
  ASSERT_EQ(started.size(), 3u) << r.report.ToString();
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  EXPECT_EQ(r.report.compile_late, 1);
  EXPECT_EQ(r.report.timings.size(), 2u);
  EXPECT_EQ(timed.size(), 6u) << "two candidates, three rounds";
  for (const std::string& t : timed) EXPECT_NE(t, started[0]) << "timed before its compile was done";
  EXPECT_NE(ugraph::ToJson(*r.graph), started[0]);
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("1 still compiling at the budget's end"));
}

// With nothing timed at the budget's end the search waits on, for the
// first compile to be done (a slow machine still gets a searched kernel),
// and times candidates in the order their compiles are done; the report
// keeps the cost model's order.
TEST(Superoptimize, WithNothingTimedTheSearchWaitsForTheFirstCompile) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.budget_seconds = 1;
  options.time_top = 2;
  options.time_rounds = 1;
  options.one_point_forms = 0;  // the grid-stride forms alone: their compiles and timings counted
  std::promise<void> done[2];
  std::vector<std::string> started, timed;
  std::thread finisher;
  const auto search_start = std::chrono::steady_clock::now();
  options.start_compile = [&](const ugraph::KernelGraph& g) {
    started.push_back(ugraph::ToJson(g));
    if (started.size() == 2) {
      // The second candidate's compile is done past the budget, the first's later still.
      finisher = std::thread([&done, search_start] {
        std::this_thread::sleep_until(search_start + std::chrono::milliseconds(1300));
        done[1].set_value();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        done[0].set_value();
      });
    }
    return done[started.size() - 1].get_future().share();
  };
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    timed.push_back(ugraph::ToJson(g));
    return 10.0;
  };
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  if (finisher.joinable()) finisher.join();
  ASSERT_EQ(started.size(), 2u) << r.report.ToString();
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(timed.size(), 1u) << "the first compile done is timed; the other, done later, is not waited for";
  EXPECT_EQ(timed[0], started[1]);
  EXPECT_EQ(ugraph::ToJson(*r.graph), started[1]);
  EXPECT_EQ(r.report.compile_late, 1);
}

// Candidates whose estimates tie are timed fewer blocks first (less of
// each block's own work done again): qknorm_gqa_bs8's schedules split 4 to
// 16 ways all come to one estimate.
TEST(Superoptimize, TiedEstimatesTimeTheScheduleOfFewerBlocksFirst) {
  FusedCase c = QkNormAttentionCase(16, 256, 64, 4096, DType::kF16);
  SearchOptions options;
  options.time_top = 8;
  options.time_rounds = 1;
  options.one_point_forms = 0;  // the grid-stride forms alone: their compiles and timings counted
  std::vector<int64_t> blocks;
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    blocks.push_back(ugraph::LaunchedBlocks(g));
    return 10.0;
  };
  SearchResult r = Search(c.region, options);
  const std::vector<TimedCandidate>& t = r.report.timings;
  ASSERT_EQ(t.size(), blocks.size()) << r.report.ToString();
  int ties = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_LE(t[i - 1].estimated_us, t[i].estimated_us) << r.report.ToString();
    if (t[i - 1].estimated_us != t[i].estimated_us) continue;
    ++ties;
    EXPECT_LE(blocks[i - 1], blocks[i]) << r.report.ToString();
  }
  EXPECT_GE(ties, 3) << r.report.ToString();
}

// A candidate the GPU cannot run gives way to the next: as many are timed.
TEST(Superoptimize, ACandidateThatFailsToRunGivesWayToTheNext) {
  FusedCase c = RmsNormLinearCase(2, 256, 384);
  SearchOptions options;
  options.time_top = 2;
  std::vector<std::string> seen;
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    const std::string key = ugraph::ToJson(g);
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
    if (key == seen[0]) return absl::InternalError("launch failed");
    return 10.0;
  };
  SearchResult r = Search(c.region, options);
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  EXPECT_EQ(r.report.time_failed, 1);
  EXPECT_EQ(r.report.timed, 3);
  EXPECT_EQ(r.report.timings.size(), 2u);
  EXPECT_NE(ugraph::ToJson(*r.graph), seen[0]);
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("1 failed: launch failed"));
}

// Decode shapes leave few blocks: the schedule variants share the loop's
// steps among blocks on the free grid axis, the uGraph keeps the split
// through JSON (the search cache), and the split candidate verifies.
// Attention's variants come with 8 warps and with 4; others with 8.
TEST(Superoptimize, SplitLoopVariantsKeepTheirSplit) {
  FusedCase c = RmsNormLinearCase(2, 4096, 6144);
  SearchResult r = Search(c.region);
  ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
  std::set<int64_t> splits;
  std::set<std::pair<int64_t, int>> split_threads;
  for (const Schedule& s : ScheduleVariants(c.region, r.candidate->schedule)) {
    splits.insert(s.loop_split);
    split_threads.insert({s.loop_split, s.threads});
    Candidate v = *r.candidate;
    v.schedule = s;
    ugraph::KernelGraph g = ValueOrFail(Instantiate(c.region, v, c.region.class_size));
    EXPECT_EQ(g.kernels[0].block.loop_split, s.loop_split);
    if (s.loop_split == 1) continue;
    EXPECT_EQ(ugraph::SplitGridAxis(g.kernels[0].block), 2);
    KILN_EXPECT_OK(ugraph::Validate(g));
    EXPECT_EQ(ValueOrFail(ugraph::FromJson(ugraph::ToJson(g))).kernels[0].block.loop_split, s.loop_split);
  }
  EXPECT_EQ(splits, (std::set<int64_t>{1, 2, 4, 8, 16}));
  // A streaming kernel's with 8 warps only; attention's also with 4.
  EXPECT_EQ(split_threads.size(), splits.size());
  for (int64_t ways : splits) EXPECT_EQ(split_threads.count({ways, 256}), 1u) << ways;
  const FusedCase attention = AttentionCase(2, 256, 64, 4096);
  const SearchResult a = Search(attention.region);
  ASSERT_TRUE(a.candidate.has_value()) << a.report.ToString();
  std::set<std::pair<int64_t, int>> attention_threads;
  for (const Schedule& s : ScheduleVariants(attention.region, a.candidate->schedule)) {
    attention_threads.insert({s.loop_split, s.threads});
  }
  for (int64_t ways : {1, 2, 4, 8, 16}) {
    EXPECT_TRUE(attention_threads.count({ways, 256}) && attention_threads.count({ways, 128})) << ways;
  }
  Candidate split = *r.candidate;
  split.schedule.loop_split = 4;
  EXPECT_TRUE(ValueOrFail(VerifyOverFiniteFields(c.region, split, 3, 11)));
}

TEST(Superoptimize, GatedMlpIsOneKernel) {
  FusedCase c = GatedMlpCase(8, 4096, 4096);
  SearchResult r = Search(c.region);
  ExpectSingleFusedKernel(c.region, r);
  EXPECT_EQ(CountKind(r.graph->kernels[0].block, TileOp::Kind::kMatmul), 2) << r.report.chosen_text;
}

// X@W + (X@A)@B: X@A accumulates beside X@W in the one K loop, and its
// product with B joins the same output: (W|B) x (X|(X@A)) without copies.
TEST(Superoptimize, LoraIsOneKernel) {
  FusedCase c = LoraCase(16, 256, 4096, 16);
  SearchResult r = Search(c.region);
  ExpectSingleFusedKernel(c.region, r);
  const ugraph::BlockGraph& b = r.graph->kernels[0].block;
  EXPECT_EQ(CountKind(b, TileOp::Kind::kMatmul), 3) << r.report.chosen_text;
  // The cost model (no GPU here) puts all 16 rows in a block, so that W is
  // read once: both products in the K loop run on tensor cores from narrow
  // swizzled rings, and only (X@A)@B after it does not; each product's
  // flops count at its own path's rate. (4.1-4.4 us on an H100, where 4
  // rows a block took 6.0.)
  EXPECT_EQ(b.grid[1].tile, 16) << r.report.chosen_text;
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*r.graph, 0);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(std::count(source->op_paths.begin(), source->op_paths.end(), codegen::MatmulPath::kTensorCores), 2);
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kSharedMemory);
}

TEST(Superoptimize, OddShapesAreFoundAndChecked) {
  for (int64_t m : {1, 3, 17}) {
    FusedCase c = RmsNormLinearCase(m, 127, 129);
    SearchResult r = Search(c.region);
    ExpectSingleFusedKernel(c.region, r);
  }
}

TEST(Superoptimize, F32RegionsUseF32Products) {
  FusedCase c = GatedMlpCase(3, 127, 65, DType::kF32);
  SearchResult r = Search(c.region);
  ExpectSingleFusedKernel(c.region, r);
  for (const TileOp& op : r.graph->kernels[0].block.tile_ops) {
    if (op.kind == TileOp::Kind::kMatmul) {
      EXPECT_EQ(op.dtype, DType::kF32);
    }
  }
}

TEST(Superoptimize, PruningKeepsGoodPrefixesAndDropsBadOnes) {
  FusedCase c = RmsNormLinearCase(16, 4096, 6144);
  ExprPool pool;
  AbstractChecker checker(pool);
  const ExprId target = RegionExpressions(c.region, pool).back();
  const ExprId x = pool.Input(0), w = pool.Input(1);
  // The loop body of the fused kernel, and its accumulators.
  EXPECT_TRUE(checker.IsSubexpression(pool.Sum(MakeRational(64, 1), pool.Mul(x, w)), target));
  EXPECT_TRUE(checker.IsSubexpression(pool.Sum(MakeRational(4096, 1), pool.Mul(x, x)), target));
  // Nothing in rms_norm(X) @ W exponentiates, or multiplies W by itself.
  EXPECT_FALSE(checker.IsSubexpression(pool.Exp(x), target));
  EXPECT_FALSE(checker.IsSubexpression(pool.Sum(MakeRational(4096, 1), pool.Mul(w, w)), target));
}

// Subtly wrong versions of the found kernel fail the finite-field tests.
TEST(Superoptimize, VerificationRejectsSubtlyWrongCandidates) {
  FusedCase c = RmsNormLinearCase(4, 300, 200);
  SearchResult r = Search(c.region);
  ASSERT_TRUE(r.candidate.has_value());
  const Candidate good = *r.candidate;
  EXPECT_TRUE(ValueOrFail(VerifyOverFiniteFields(c.region, good, 3, 11)));
  int mutations = 0;
  for (size_t i = 0; i < good.ops.size(); ++i) {
    const TileOp& op = good.ops[i].op;
    if (op.kind == TileOp::Kind::kConstant && !good.ops[i].inverse_of_classes.empty()) {
      Candidate bad = good;  // a missing rescale: sum instead of mean
      bad.ops[i].inverse_of_classes.clear();
      bad.ops[i].op.value = 1;
      EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, bad, 3, 12)));
      ++mutations;
    }
    if (op.kind == TileOp::Kind::kUnary && op.op == OpKind::kRsqrt) {
      Candidate bad = good;  // sqrt for rsqrt
      bad.ops[i].op.op = OpKind::kSqrt;
      EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, bad, 3, 13)));
      ++mutations;
    }
    if (op.kind == TileOp::Kind::kBinary && op.op == OpKind::kAdd) {
      Candidate bad = good;  // eps subtracted
      bad.ops[i].op.op = OpKind::kSub;
      EXPECT_FALSE(ValueOrFail(VerifyOverFiniteFields(c.region, bad, 3, 14)));
      ++mutations;
    }
  }
  EXPECT_EQ(mutations, 3) << r.report.chosen_text;
}

TEST(Superoptimize, VerificationRejectsAWrongReductionAxis) {
  FusedCase c = RmsNormLinearCase(4, 300, 200);
  SearchResult r = Search(c.region);
  ASSERT_TRUE(r.candidate.has_value());
  // Sum the squares over the rows (axis 0 of the tile) instead of the hidden dim.
  Candidate bad = *r.candidate;
  bool changed = false;
  for (CandidateOp& op : bad.ops) {
    if (op.op.kind == TileOp::Kind::kReduceSum && op.op.axis == 1) {
      op.op.axis = 0;
      changed = true;
    }
  }
  ASSERT_TRUE(changed) << r.report.chosen_text;
  absl::StatusOr<bool> verdict = VerifyOverFiniteFields(c.region, bad, 3, 5);
  EXPECT_TRUE(!verdict.ok() || !*verdict);
}

TEST(Superoptimize, EnumerationHasNoDuplicates) {
  FusedCase c = GatedMlpCase(8, 512, 512);
  ExprPool pool;
  AbstractChecker checker(pool);
  for (const Schedule& mapping : Mappings(c.region)) {
    std::set<std::string> seen;
    int count = 0;
    EnumeratePrograms(c.region, mapping, pool, checker, {}, [&](const Candidate& cand) {
      ++count;
      auto g = Instantiate(c.region, cand, c.region.class_size);
      EXPECT_TRUE(g.ok());
      if (g.ok()) {
        EXPECT_TRUE(seen.insert(ugraph::ToJson(*g)).second) << "enumerated twice:\n" << ugraph::ToText(*g);
      }
      return true;
    });
    EXPECT_GT(count, 0);
  }
}

TEST(Superoptimize, SecondRunComesFromTheCacheAndACorruptEntryIsReplaced) {
  ScopedTempDir dir("search_cache");
  FusedCase c = LoraCase(16, 256, 4096, 16);
  SearchOptions options;
  options.cache_dir = dir.path();
  options.budget_seconds = 20;  // as Search() sets it: the budget is part of the key
  SearchResult first = Search(c.region, options);
  ASSERT_TRUE(first.graph.has_value());
  EXPECT_FALSE(first.report.from_cache);
  SearchResult second = Search(c.region, options);
  EXPECT_TRUE(second.report.from_cache);
  EXPECT_EQ(second.report.prefixes, 0);
  ASSERT_TRUE(second.graph.has_value());
  EXPECT_EQ(ugraph::ToJson(*second.graph), ugraph::ToJson(*first.graph));
  testing::WriteFile(CachePath(c.region, options), "{\"format\": \"kiln-search-4\", \"graph\": \"{broken");
  SearchResult third = Search(c.region, options);
  EXPECT_FALSE(third.report.from_cache);
  ASSERT_TRUE(third.graph.has_value());
  EXPECT_TRUE(Search(c.region, options).report.from_cache);
}

// A product over one element (an outer product) is searched for where the
// region has one: rank-one updates keep their kernel. (Regions without one,
// and without elementwise products, never get one: see unit_products_.)
TEST(Superoptimize, FindsOuterProductsWhereTheRegionHasThem) {
  Tensor x = random_normal({16, 32}, 1, 0, 1, DType::kF16);
  Tensor w = random_normal({32, 1}, 2, 0, 0.2, DType::kF16);
  Tensor v = random_normal({1, 24}, 3, 0, 1, DType::kF16);
  for (Tensor* t : {&x, &w, &v}) ASSERT_TRUE(t->realize().ok());
  Tensor out = matmul(matmul(x, w), v);
  std::vector<const Node*> leaves = {x.node().get(), w.node().get(), v.node().get()};
  Region region = ValueOrFail(ExtractRegion(out.node().get(), [&](const Node* n) {
    return std::find(leaves.begin(), leaves.end(), n) != leaves.end();
  }));
  SearchResult r = Search(region);
  ExpectSingleFusedKernel(region, r);
  EXPECT_EQ(CountKind(r.graph->kernels[0].block, TileOp::Kind::kMatmul), 2) << r.report.chosen_text;
}

TEST(Superoptimize, RegionsWithoutWorkKeepTheDefault) {
  Tensor x = random_normal({4, 8}, 1);
  ASSERT_TRUE(x.realize().ok());
  EXPECT_EQ(ExtractRegion((exp(x) + 1.0).node().get(), [](const Node*) { return false; }).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::search
