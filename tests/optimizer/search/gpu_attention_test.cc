// Attention kernels found by the search (an online softmax in one kernel),
// run on the GPU against the CPU reference executor running the unfused
// tensor code: whole and with the keys split across blocks (FlashDecoding's
// combine, which brings each block's sums to the max of their running
// maxes), odd shapes included; outputs poisoned first (GraphRunner).
#include <array>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/graph_runner.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/ugraph_validate.h"
#include "optimizer/codegen/generate.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;

// Runs `graph` (for the case's region) on the GPU; the number of output
// elements off the CPU reference by more than `tolerance` (of its scale).
int RunAgainstReference(CudaExecutor& executor, const FusedCase& c, const ugraph::KernelGraph& graph,
                        double tolerance) {
  std::unique_ptr<GraphRunner> runner = ValueOrFail(GraphRunner::Create(executor, graph));
  for (size_t i = 0; i < c.region.inputs.size(); ++i) {
    for (const Tensor& t : c.inputs) {
      if (t.node().get() == c.region.inputs[i]) {
        EXPECT_TRUE(runner->Upload(static_cast<int>(i), testing::ReadF32(t)).ok());
      }
    }
  }
  EXPECT_TRUE(runner->Run().ok());
  const std::vector<float> got = ValueOrFail(runner->Download(static_cast<int>(c.region.inputs.size())));
  return testing::ExpectWithinScale(got, testing::ReadF32(c.output), tolerance);
}

struct Runs {
  int split = 0, tensor_cores = 0, keys_shared = 0, rows_b = 0, scaled_b = 0, key_groups = 0, cols_split = 0;
  int packed_a = 0;  // step products reading A's fragments packed before the loop
  int wgmma = 0;     // flash products on Hopper's warpgroup tensor cores
  int wgmma_panels = 0;  // the same, B's ring rows of 256 bytes in two panels
  int pipelined = 0;     // whole steps issuing their scores' products before the last step's P@V
  int scores_ahead = 0;  // and, of those, issuing the next step's scores (FlashScoresAhead)
  int ping_pong = 0;     // or running their two warpgroups half a step apart (FlashPingPong)
  int one_point = 0;     // schedules run again with one grid point a block (OnePointForm)
};

// While it lives, the executor compiles for sm_90 where the device is
// sm_90a: kernels run their mma.sync form (#else), the one GPUs without
// wgmma run.
class MmaSyncOnHopper {
 public:
  explicit MmaSyncOnHopper(CudaExecutor& executor) : executor_(executor) {
    if (executor_.context().info().arch() == "sm_90a") executor_.set_compile_arch("sm_90");
  }
  ~MmaSyncOnHopper() { executor_.set_compile_arch(""); }

 private:
  CudaExecutor& executor_;
};

// The case's search result run with the chosen schedule split 1, 2 and 8
// ways, then `spread` others (query tiles of 1 to 64 rows with tails, key
// tiles, splits), each against the CPU reference.
// `also`, where given, makes one more schedule from the chosen one. The
// chosen schedule whole and split 2 ways run again with one grid point a
// block where that changes their code (the search may choose it).
void RunSchedules(CudaExecutor& executor, const FusedCase& c, DType dtype, int spread, Runs& runs,
                  double budget_seconds = 8, bool one_kernel = false,
                  const std::function<void(Schedule&)>& also = nullptr) {
  SearchOptions options;  // the cost model chooses; other schedules are run below
  options.budget_seconds = budget_seconds;
  if (one_kernel) {
    // A timer that runs only single kernels: the cost model may rank
    // factored forms first (factor.h), which have no single schedule, and
    // more of them than the search times; those that fail to time give
    // way to the next (a timer that ranked them slower let them fill the
    // timed set where they ranked first).
    options.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
      if (g.kernels.size() == 1) return 1.0;
      return absl::UnavailableError("this test times single kernels only");
    };
  }
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.candidate.has_value()) << r.report.ToString();
  const double tolerance = dtype == DType::kF32 ? 1e-4 : 1e-2;
  std::vector<Schedule> schedules;
  for (int64_t split : {1, 2, 8}) {
    schedules.push_back(r.candidate->schedule);
    schedules.back().loop_split = split;
  }
  // 16 keys a step per warp, whole and split 4 ways (with one slab of
  // query rows, the warps share out the keys).
  for (int64_t split : {1, 4}) {
    Schedule s = r.candidate->schedule;
    for (size_t k = 0; k < s.map.size(); ++k) {
      if (s.map[k] == Schedule::Map::kLoop) s.tile[k] = 16 * (s.threads / 32);
    }
    s.loop_split = split;
    schedules.push_back(s);
  }
  const std::vector<Schedule> others = ScheduleSpread(c.region, r.candidate->schedule, spread);
  schedules.insert(schedules.end(), others.begin() + 1, others.end());
  if (also) {
    schedules.push_back(r.candidate->schedule);
    also(schedules.back());
  }
  for (size_t i = 0; i < schedules.size(); ++i) {
    const Schedule& s = schedules[i];
    Candidate candidate = *r.candidate;
    candidate.schedule = s;
    absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(c.region, candidate, c.region.class_size);
    ASSERT_TRUE(graph.ok()) << graph.status();
    if (!ugraph::Validate(*graph).ok()) continue;  // no grid axis left for the split
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*graph, 0);
    if (!source.ok()) continue;  // tiles past shared memory: the search skips these too
    runs.split += s.loop_split > 1;
    runs.tensor_cores += source->matmul_path == codegen::MatmulPath::kTensorCores;
    runs.rows_b += source->source.find("load_b_fragment_rows") != std::string::npos ||
                   source->source.find("load_b_fragments_rows_x2") != std::string::npos;
    runs.scaled_b += source->source.find("scale_f16x2(") != std::string::npos ||
                     source->source.find("sc[sl][v][h] *= bs[h & 1];") != std::string::npos;
    runs.keys_shared += source->mma_warps == s.threads / 32 && source->step_barriers == 1 &&
                        source->source.find("each warp 16 keys") != std::string::npos;
    runs.key_groups += source->source.find("each warp 16 rows and its group's") != std::string::npos;
    runs.cols_split += source->source.find("columns of O, in registers") != std::string::npos;
    runs.packed_a += source->source.find("packed: [m16 slab][k chunk][lane]") != std::string::npos;
    const bool wgmma = source->source.find("wgmma_m64") != std::string::npos;
    runs.wgmma += wgmma;
    runs.wgmma_panels += wgmma && (source->source.find("u + c % 4 * 32u, 1024)") != std::string::npos ||
                                   source->source.find("2048u * c, 1024, ") != std::string::npos);
    runs.pipelined += source->source.find("pstage = stage;") != std::string::npos;
    runs.scores_ahead += source->source.find("float scores0[") != std::string::npos;
    runs.ping_pong += source->source.find("(FlashPingPong)") != std::string::npos;
    EXPECT_EQ(RunAgainstReference(executor, c, *graph, tolerance), 0)
        << s.ToString(c.region) << "\n" << ugraph::ToText(*graph);
    if (const std::optional<ugraph::KernelGraph> one_point = i < 2 ? ugraph::OnePointForm(*graph) : std::nullopt) {
      ++runs.one_point;
      EXPECT_EQ(RunAgainstReference(executor, c, *one_point, tolerance), 0)
          << s.ToString(c.region) << "\n" << ugraph::ToText(*one_point);
    }
  }
}

TEST(GpuAttention, OnlineSoftmaxWholeAndSplitMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // batch, queries, head dim, keys.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {3, 1, 16, 300}, {2, 17, 64, 4097}, {1, 3, 128, 1000}, {5, 127, 32, 513}, {64, 1, 128, 4096}};
  Runs runs;
  for (const auto& [b, q, d, keys] : shapes) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      SCOPED_TRACE(::testing::Message() << b << "x" << q << "x" << d << "x" << keys << " " << DTypeName(dtype));
      RunSchedules(*executor, AttentionCase(b, q, d, keys, dtype), dtype, 6, runs);
    }
  }
  EXPECT_GE(runs.keys_shared, 4) << "decode kernels whose warps share out the keys";
  EXPECT_GE(runs.key_groups, 2) << "kernels whose groups of warps share out the keys";
  EXPECT_GE(runs.split, 8) << "the decode shapes (one query) split their keys";
  EXPECT_GE(runs.tensor_cores, 6) << "f16 products on tensor cores";
  EXPECT_GE(runs.packed_a, 4) << "the generic step's scores reading Q's fragments packed before the loop";
}

// A variant of attention at three odd shapes (decode, a 17-query tile
// with a tail of keys, 127 queries), f16 and f32, each with RunSchedules'
// splits and 3 more schedules.
Runs RunVariant(CudaExecutor& executor,
                const std::function<FusedCase(int64_t, int64_t, int64_t, int64_t, DType)>& make) {
  const std::vector<std::array<int64_t, 4>> shapes = {{3, 1, 16, 300}, {2, 17, 64, 4097}, {1, 127, 128, 513}};
  Runs runs;
  for (const auto& [b, q, d, keys] : shapes) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      SCOPED_TRACE(::testing::Message() << b << "x" << q << "x" << d << "x" << keys << " " << DTypeName(dtype));
      RunSchedules(executor, make(b, q, d, keys, dtype), dtype, 3, runs);
    }
  }
  return runs;
}

// QK-norm fused into attention (Q normalized before the loop, K each step:
// read from the ring, its squares summed there and each key's fragments
// times its rsqrt).
TEST(GpuAttention, QkNormMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const Runs runs = RunVariant(*executor, [](int64_t b, int64_t q, int64_t d, int64_t keys, DType dtype) {
    return QkNormAttentionCase(b, q, d, keys, dtype);
  });
  EXPECT_GE(runs.split, 6);
  EXPECT_GE(runs.scaled_b, 6) << "f16 scores reading K from the ring, each key times its rsqrt";
}

// The first, middle and last variant of the case's chosen schedule whose
// kernel `wanted` picks, each run against the CPU reference; how many ran.
int RunPickedVariants(CudaExecutor& executor, const FusedCase& c, double tolerance,
                      const std::function<bool(const codegen::KernelSource&)>& wanted) {
  SearchOptions options;
  options.budget_seconds = 8;
  SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  EXPECT_TRUE(r.candidate.has_value()) << r.report.ToString();
  if (!r.candidate) return 0;
  std::vector<std::pair<Schedule, ugraph::KernelGraph>> found;
  for (const Schedule& s : ScheduleVariants(c.region, r.candidate->schedule)) {
    Candidate candidate = *r.candidate;
    candidate.schedule = s;
    absl::StatusOr<ugraph::KernelGraph> graph = Instantiate(c.region, candidate, c.region.class_size);
    if (!graph.ok() || !ugraph::Validate(*graph).ok()) continue;
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(*graph, 0);
    if (source.ok() && wanted(*source)) found.emplace_back(s, *std::move(graph));
  }
  if (found.empty()) return 0;
  int ran = 0;
  for (const size_t i : std::set<size_t>{0, found.size() / 2, found.size() - 1}) {
    ++ran;
    EXPECT_EQ(RunAgainstReference(executor, c, found[i].second, tolerance), 0)
        << found[i].first.ToString(c.region) << "\n" << ugraph::ToText(found[i].second);
  }
  return ran;
}

// Schedules whose warps come in groups that share out each step's keys
// (query tiles with fewer slabs of 16 rows than warps, no SM given a second
// block): the first, middle and last such variant of the chosen schedule,
// plain attention and QK-norm, at odd shapes, f16 and bf16. At head dim
// 64, also those whose groups are warpgroups taking their keys by wgmma
// (on an sm_90a device).
TEST(GpuAttention, GroupsOfWarpsSharingTheKeysMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const std::vector<std::array<int64_t, 4>> shapes = {{2, 17, 64, 4097}, {5, 127, 32, 513}, {2, 256, 64, 1000}};
  int grouped = 0, grouped_wgmma = 0;
  for (const auto& [b, q, d, keys] : shapes) {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      for (const bool qknorm : {false, true}) {
        SCOPED_TRACE(::testing::Message() << b << "x" << q << "x" << d << "x" << keys << " " << DTypeName(dtype)
                                          << (qknorm ? " qk-norm" : ""));
        const FusedCase c =
            qknorm ? QkNormAttentionCase(b, q, d, keys, dtype) : AttentionCase(b, q, d, keys, dtype);
        const double tolerance = dtype == DType::kBF16 ? 2e-2 : 1e-2;
        grouped += RunPickedVariants(*executor, c, tolerance,
                                     [](const codegen::KernelSource& k) { return k.flash_groups > 1; });
        if (d != 64) continue;
        grouped_wgmma += RunPickedVariants(*executor, c, tolerance, [](const codegen::KernelSource& k) {
          return k.flash_groups > 1 && k.source.find("the group's keys") != std::string::npos;
        });
      }
    }
  }
  EXPECT_GE(grouped, 24);
  EXPECT_GE(grouped_wgmma, 6);
}

// Query tiles of two slabs of 16 rows for each warp (FlashAttention-2's
// 32 rows a warp: 128-row tiles, 4 warps), with tails of rows and keys:
// plain, QK-norm and causal attention, head dims 64 (Q's fragments in
// registers) and 128, f16 and bf16.
TEST(GpuAttention, TwoSlabsAWarpMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const auto two_slabs = [](const codegen::KernelSource& k) {
    return k.source.find("each warp 32 rows") != std::string::npos;
  };
  int ran = 0;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const double tolerance = dtype == DType::kBF16 ? 2e-2 : 1e-2;
    for (const FusedCase& c :
         {AttentionCase(2, 127, 64, 513, dtype), AttentionCase(1, 200, 128, 300, dtype),
          QkNormAttentionCase(2, 127, 64, 1000, dtype), CausalAttentionCase(2, 4, 200, 64, 256, dtype),
          CausalAttentionCase(1, 4, 127, 128, 513, dtype)}) {
      SCOPED_TRACE(::testing::Message() << c.region.ToString() << " " << DTypeName(dtype));
      const int n = RunPickedVariants(*executor, c, tolerance, two_slabs);
      EXPECT_GE(n, 1);
      ran += n;
    }
  }
  EXPECT_GE(ran, 10);
}

// K stored by rows (K^T a transposed view): its tiles load as vectors along
// the head dim, and the scores read them as the rows of B.
TEST(GpuAttention, KeysStoredByRowsMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const Runs runs = RunVariant(*executor, [](int64_t b, int64_t q, int64_t d, int64_t keys, DType dtype) {
    return RowKeysAttentionCase(b, q, d, keys, dtype);
  });
  EXPECT_GE(runs.split, 6);
  EXPECT_GE(runs.rows_b, 3) << "f16 scores reading K's rows on tensor cores";
}

// Grouped KV heads (a group of 4 query heads per K and V head, read through
// an expand), with the attention op's scale.
TEST(GpuAttention, GroupedKvHeadsMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const Runs runs = RunVariant(*executor, [](int64_t b, int64_t q, int64_t d, int64_t keys, DType dtype) {
    return GroupedAttentionCase(b, 4, q, d, keys, dtype);
  });
  EXPECT_GE(runs.split, 6);
}

// Causal attention (grouped KV heads, masked as kiln's attention masks
// it): square (prefill from scratch) and with keys cached before the
// queries, odd shapes; the splits put whole rows of some blocks under the
// mask. (A single query is not masked; the cost model keeps the default
// lowering for a handful of keys.)
TEST(GpuAttention, CausalMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // KV heads, queries, head dim, keys.
  const std::vector<std::array<int64_t, 4>> shapes = {{3, 3, 16, 127},   {2, 17, 64, 4097}, {1, 127, 128, 513},
                                                      {2, 128, 64, 128},  {1, 17, 16, 17},   {2, 200, 64, 256},
                                                      {1, 200, 128, 1000}};
  Runs runs;
  for (const auto& [h, q, d, keys] : shapes) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      SCOPED_TRACE(::testing::Message() << h << "x" << q << "x" << d << "x" << keys << " " << DTypeName(dtype));
      RunSchedules(*executor, CausalAttentionCase(h, 4, q, d, keys, dtype), dtype, 3, runs);
    }
  }
  EXPECT_GE(runs.split, 6);
  EXPECT_GE(runs.tensor_cores, 6) << "f16 products on tensor cores";
  // Head dims 64 and 128 over more than one step: wgmma's products (on an
  // sm_90a device), whose Q fragments must survive from step to step; at
  // 128, K's and V's rings in panels.
  EXPECT_GE(runs.wgmma, 2);
  EXPECT_GE(runs.wgmma_panels, 1);
  EXPECT_GE(runs.one_point, 6) << "causal blocks, last-first, one grid point each";
}

// The loop of whole steps pipelined (FlashPipelined: each step's scores'
// products issued before the last step's P@V, which the softmax then
// runs under; the last P@V after the loop; the ring a step less ahead),
// with 4 stages or more the scores a step ahead (FlashScoresAhead: the
// next step's scores issued under the softmax, two steps a pass, copies
// past the block's last step clamped to it): query and key tails, causal
// masks, head dims 64 and 128 (panels). On an sm_90a device the products
// take wgmma; elsewhere mma.sync in the same order.
TEST(GpuAttention, PipelinedWholeStepsMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  Runs runs;
  RunSchedules(*executor, AttentionCase(2, 200, 64, 4001, DType::kF16), DType::kF16, 2, runs);
  RunSchedules(*executor, CausalAttentionCase(1, 4, 300, 128, 1500, DType::kBF16), DType::kBF16, 2, runs);
  RunSchedules(*executor, CausalAttentionCase(1, 2, 1000, 64, 1000, DType::kF16), DType::kF16, 2, runs);
  EXPECT_GE(runs.pipelined, 4);
  EXPECT_GE(runs.scores_ahead, 2);
}

// The two warpgroups of a pipelined loop half a step apart (FlashPingPong:
// warpgroup 1's products in flight across the barrier, the ring one step
// ahead): head dim 128, a causal mask and none, tails of queries and of
// keys, f16 and bf16; by wgmma on an sm_90a device, then the same kernels'
// mma.sync form (compiled for sm_90).
TEST(GpuAttention, PingPongWarpgroupsMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  for (const bool mma_sync : {false, true}) {
    SCOPED_TRACE(mma_sync ? "mma.sync" : "as compiled for the device");
    std::optional<MmaSyncOnHopper> form;
    if (mma_sync) form.emplace(*executor);
    // causal_prefill's schedule: 128 query rows (grid axis 0), 64 keys a
    // step, 8 warps, no split.
    const auto prefill = [](Schedule& s) {
      for (size_t k = 0; k < s.map.size(); ++k) {
        if (s.map[k] == Schedule::Map::kGrid && s.grid_axis[k] == 0) s.tile[k] = 128;
        if (s.map[k] == Schedule::Map::kLoop) s.tile[k] = 64;
      }
      s.threads = 256;
      s.loop_split = 1;
    };
    Runs runs;
    RunSchedules(*executor, CausalAttentionCase(1, 4, 300, 128, 1500, DType::kBF16), DType::kBF16, 1, runs, 8,
                 false, prefill);
    RunSchedules(*executor, AttentionCase(2, 127, 128, 4104, DType::kF16), DType::kF16, 1, runs, 8, false, prefill);
    EXPECT_GE(runs.ping_pong, 2);
  }
}

// Head dim 128 kernels whose K and V rings lie in panels for wgmma (rows
// of 256 bytes), compiled for sm_90 where the device is sm_90a: their
// mma.sync form (#else), the one GPUs without wgmma run, reads the same
// panels by ldmatrix. Causal, a tail of queries and of keys.
TEST(GpuAttention, PanelsReadByMmaSyncMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const MmaSyncOnHopper mma_sync(*executor);
  Runs runs;
  RunSchedules(*executor, CausalAttentionCase(1, 4, 200, 128, 1000, DType::kF16), DType::kF16, 3, runs);
  EXPECT_GE(runs.wgmma_panels, 1);
}

// The scores a step ahead in their mma.sync form (#else), the one GPUs
// without wgmma run, compiled for sm_90 where the device is sm_90a: the
// next step's scores from the next stage into sa, the last step's P@V
// from pp, two steps a pass. Tails of queries and keys, a causal mask.
TEST(GpuAttention, ScoresAheadByMmaSyncMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const MmaSyncOnHopper mma_sync(*executor);
  Runs runs;
  RunSchedules(*executor, AttentionCase(2, 200, 64, 4001, DType::kF16), DType::kF16, 2, runs);
  RunSchedules(*executor, CausalAttentionCase(1, 2, 1000, 64, 1000, DType::kF16), DType::kF16, 2, runs);
  EXPECT_GE(runs.scores_ahead, 2);
}

// QK-norm's fold a step ahead (FoldAhead: each whole step folds the next
// step's K into the other half of the scales' tile, the prologue the
// first step's): the first, middle and last such variant of the chosen
// schedule, at odd shapes (a tail of queries and of keys, f16 and bf16),
// by wgmma on an sm_90a device and, compiled for sm_90, by mma.sync.
TEST(GpuAttention, QkNormFoldAheadMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  const auto fold_ahead = [](const codegen::KernelSource& k) {
    return k.source.find("(FoldAhead)") != std::string::npos;
  };
  for (const bool mma_sync : {false, true}) {
    std::optional<MmaSyncOnHopper> hopper;
    if (mma_sync) hopper.emplace(*executor);
    for (const FusedCase& c : {QkNormAttentionCase(2, 200, 64, 4001, DType::kF16),
                               QkNormAttentionCase(3, 127, 64, 1000, DType::kBF16)}) {
      SCOPED_TRACE(c.name + (mma_sync ? " mma.sync" : ""));
      // (bf16's 8-bit mantissa: the tolerance of the other bf16 tests.)
      const double tolerance = c.output.dtype() == DType::kBF16 ? 2e-2 : 1e-2;
      EXPECT_GE(RunPickedVariants(*executor, c, tolerance, fold_ahead), 2);
    }
  }
}

// One slab of query rows, all in the block, against a wide V (MLA's
// attention over its latent once factored: 16 heads, 256 columns): the
// flash path with O's columns shared out among the warps, each taking S
// and P whole. Odd shapes: 13 rows, a tail of keys, two batches.
TEST(GpuAttention, WideOneSlabAttentionMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // batch, queries, head dim, keys.
  const std::vector<std::array<int64_t, 4>> shapes = {{1, 16, 256, 4097}, {1, 13, 128, 1000}, {2, 16, 256, 300}};
  Runs runs;
  for (const auto& [b, q, d, keys] : shapes) {
    SCOPED_TRACE(::testing::Message() << b << "x" << q << "x" << d << "x" << keys);
    RunSchedules(*executor, RowKeysAttentionCase(b, q, d, keys, DType::kF16), DType::kF16, 4, runs);
  }
  EXPECT_GE(runs.cols_split, 3) << "kernels whose warps share out O's columns";
  EXPECT_GE(runs.split, 3);
}

// MLA from its naive form (K and V up-projected from the latent cache):
// the absorbed kernel (q W_uk^T before the loop, attention over the
// latent, W_uv after it) against the unfused CPU reference.
TEST(GpuAttention, MlaMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // heads, latent, head dim, keys.
  const std::vector<std::array<int64_t, 5>> shapes = {
      {3, 48, 17, 127, static_cast<int64_t>(DType::kF32)},
      {1, 32, 16, 4097, static_cast<int64_t>(DType::kF16)},
      {16, 256, 64, 4096, static_cast<int64_t>(DType::kF16)}};
  Runs runs;
  for (const auto& [h, latent, d, keys, dtype_index] : shapes) {
    const DType dtype = static_cast<DType>(dtype_index);
    SCOPED_TRACE(::testing::Message() << h << "x" << latent << "x" << d << "x" << keys << " " << DTypeName(dtype));
    RunSchedules(*executor, MlaCase(h, latent, d, keys, dtype), dtype, 3, runs, /*budget_seconds=*/20,
                 /*one_kernel=*/true);
  }
  EXPECT_GE(runs.split, 4);
  EXPECT_GE(runs.packed_a, 3) << "the scores reading t = q W_uk^T's fragments packed before the loop";
}

// MLA's factored form as the cost model chooses it (q W_uk^T, then the
// attention over the latent with W_uv applied in its combine: two kernels,
// FuseRowProduct) at odd shapes and the bench's, f16: the attention takes
// q W_uk^T from its loaded bits straight to the scores' packed fragments
// (FlashQFromBits, one slab of rows shared by the warps), against the
// unfused CPU reference.
TEST(GpuAttention, MlaFactoredMatchesTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // heads, latent, head dim, keys.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {3, 48, 16, 127}, {16, 256, 64, 4097}, {1, 64, 32, 17}, {16, 256, 64, 4096}, {3, 48, 17, 127}};
  int from_bits = 0, fused = 0, one_point_runs = 0;
  for (const auto& [h, latent, d, keys] : shapes) {
    SCOPED_TRACE(::testing::Message() << h << "x" << latent << "x" << d << "x" << keys);
    const FusedCase c = MlaCase(h, latent, d, keys, DType::kF16);
    SearchOptions options;  // the cost model chooses
    options.budget_seconds = 20;
    const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    fused += r.graph->kernels.size() == 2 &&
             r.graph->kernels[1].block.tile_ops.back().kind == ugraph::TileOp::Kind::kRowMatmul;
    for (size_t k = 0; k < r.graph->kernels.size(); ++k) {
      const codegen::KernelSource source = ValueOrFail(codegen::GenerateKernel(*r.graph, static_cast<int>(k)));
      from_bits += source.source.find("A fragments' words (FlashQFromBits)") != std::string::npos &&
                   source.source.find("[k chunk][lane], stored as loaded") != std::string::npos;
    }
    EXPECT_EQ(RunAgainstReference(*executor, c, *r.graph, 1e-2), 0) << ugraph::ToText(*r.graph);
    if (const std::optional<ugraph::KernelGraph> one_point = ugraph::OnePointForm(*r.graph)) {
      ++one_point_runs;
      EXPECT_EQ(RunAgainstReference(*executor, c, *one_point, 1e-2), 0) << ugraph::ToText(*one_point);
    }
  }
  EXPECT_EQ(one_point_runs, static_cast<int>(shapes.size())) << "each also with one grid point a block";
  EXPECT_GE(from_bits, 2) << "attentions over the latent taking q W_uk^T from its bits";
  EXPECT_GE(fused, 2) << "W_uv applied in the attention's kernel (at least at the bench's shapes)";
}

// MLA's factored form with its attention's scores shared out by each
// group's warps (a tile of 8 keys a warp or more, traded through shared
// memory after the group's barrier: FlashPlan::scores_shared), chosen by a
// timer that prefers it, against the unfused CPU reference, in its
// one-point form too: the bench's shape (64 blocks of one step of 64
// keys), a tail of keys, odd heads and head dims.
TEST(GpuAttention, MlaSharedScoresMatchTheCpu) {
  std::shared_ptr<CudaExecutor> executor = InitCuda().ok() ? GetCudaExecutor() : nullptr;
  if (!executor) GTEST_SKIP() << InitCuda().message();
  // heads, latent, head dim, keys.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {16, 256, 64, 4096}, {16, 256, 64, 4097}, {13, 128, 17, 1000}, {5, 64, 8, 300}};
  int shared = 0;
  for (const auto& [h, latent, d, keys] : shapes) {
    SCOPED_TRACE(::testing::Message() << h << "x" << latent << "x" << d << "x" << keys);
    const FusedCase c = MlaCase(h, latent, d, keys, DType::kF16);
    SearchOptions options;
    options.budget_seconds = 20;
    options.time_top = 64;
    options.time_graph = SharedScoresFastest;
    const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
    ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
    shared += ValueOrFail(SharedScoresFastest(*r.graph)) == 1.0;
    EXPECT_EQ(RunAgainstReference(*executor, c, *r.graph, 1e-2), 0) << ugraph::ToText(*r.graph);
    const std::optional<ugraph::KernelGraph> one_point = ugraph::OnePointForm(*r.graph);
    ASSERT_TRUE(one_point.has_value());
    EXPECT_EQ(RunAgainstReference(*executor, c, *one_point, 1e-2), 0) << ugraph::ToText(*one_point);
  }
  EXPECT_EQ(shared, static_cast<int>(shapes.size())) << "kernels whose groups share out their scores";
}

}  // namespace
}  // namespace kiln::search
