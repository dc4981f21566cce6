// The code generator's split loops (tiled_split.cc), on the hand-made
// uGraphs of tiled_graphs.h: how the blocks that share a grid point's loop
// hand over their partials and combine them, and that NVRTC compiles it
// (no GPU needed). gpu_tiled_codegen_test.cc runs them.
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/codegen/generate.h"
#include "tests/optimizer/tiled_graphs.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ugraph::KernelGraph;
using ugraph::TensorRole;
using testing::ExpectCompiles;
using testing::GatedMlp;
using testing::Generate;
using testing::Lora;
using testing::Mean;
using testing::RmsNormLinear;
using testing::TiledGraph;

// A split loop's partials go to the workspace 16 bytes a thread, each
// thread reading four elements of the accumulator's tile that other
// threads may have written: a barrier comes between the tile's last
// write and those reads (the partials' Read asks for one where the tile
// was last written element by thread; in these kernels one is there
// already, behind the loop's last copies).
TEST(TiledCodegen, SplitPartialsAreReadAfterTheirTilesBarrier) {
  int vectors = 0;
  for (DType dtype : {DType::kF16, DType::kF32}) {
    for (const KernelGraph& graph :
         {RmsNormLinear(dtype, 17, 4097, 127, {.split = 4}), RmsNormLinear(dtype, 1, 4096, 4096, {.split = 4}),
          GatedMlp(dtype, 3, 127, 127, {.k = 32, .split = 3}), Lora(dtype, 1, 4097, 127, 16, {.split = 8}),
          RmsNormLinear(dtype, 2, 4096, 6144, {.m = 2, .k = 128, .n = 64, .split = 2}),
          RmsNormLinear(dtype, 3, 4096, 256, {.m = 4, .k = 64, .n = 64, .split = 4}, false, 0.5, Mean::kOnStepSum),
          RmsNormLinear(dtype, 3, 4096, 256, {.m = 4, .k = 64, .n = 64, .split = 4}, true, 0.0, Mean::kOnSquares)}) {
      absl::StatusOr<codegen::KernelSource> source = Generate(graph);
      ASSERT_TRUE(source.ok()) << source.status();
      const std::string& code = source->source;
      const std::string read = "*reinterpret_cast<const float4*>(";
      for (size_t at = code.find("*reinterpret_cast<float4*>(mine"); at != std::string::npos;
           at = code.find("*reinterpret_cast<float4*>(mine", at + 1)) {
        ++vectors;
        const size_t from = code.find(read, at) + read.size();
        const std::string tile = code.substr(from, code.find(' ', from) - from);
        const size_t barrier = code.rfind("__syncthreads();", at);
        ASSERT_NE(barrier, std::string::npos) << code;
        EXPECT_THAT(code.substr(barrier, at - barrier),
                    ::testing::Not(::testing::ContainsRegex(tile + "\\[[^]]*\\] \\+?= ")))
            << tile << " written after the last barrier before its partials:\n" << code;
      }
    }
  }
  EXPECT_GT(vectors, 0);
}

TEST(TiledCodegen, ASplitLoopHandsItsAccumulatorsToTheLastBlock) {
  const KernelGraph graph = RmsNormLinear(DType::kF16, 1, 4096, 4096, {.m = 2, .k = 64, .n = 64, .split = 4});
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status();
  // Two accumulators (X @ W: 2 x 64, sum of squares: 2 x 1 rounded to
  // 4 floats) per block, 4 blocks per grid point.
  EXPECT_EQ(source->workspace_bytes_per_point, 4 * 4 * (2 * 64 + 4));
  // One acquire-release count a block, no fences.
  EXPECT_THAT(source->source, ::testing::HasSubstr("split_arrive(counters + 2 * point) == 3u"));
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("__threadfence")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("blockIdx.z * share"));
  EXPECT_EQ(ugraph::SplitGridAxis(graph.kernels[0].block), 2);
}

// Launched with every block resident (p.together), a split loop's blocks
// wait for one another and each combines and stores its own share of the
// grid point's rows, here 16 of the 64 columns; the last block's combine
// stays for a grid too large for that. The two ways on are two branches
// on `together`, which a compile for one way on fixes (SourceFor).
TEST(TiledCodegen, ASplitLoopSharesOutItsCombineWhenEveryBlockIsResident) {
  const KernelGraph graph = RmsNormLinear(DType::kF16, 1, 4096, 4096, {.m = 1, .k = 64, .n = 64, .split = 4});
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE(source->split_together);
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("unsigned together;"));
  EXPECT_THAT(code, ::testing::HasSubstr("const bool together = p.together != 0u;"));
  EXPECT_THAT(code, ::testing::HasSubstr("constexpr bool together = KILN_TOGETHER;"));
  EXPECT_THAT(code, ::testing::HasSubstr("split_last = together ? (split_gather(counters + 2 * point, 4u), "
                                         "counted_out = split_leave(counters + 2 * point), true) : "
                                         "split_arrive(counters + 2 * point) == 3u;"));
  const size_t together = code.find("if (together) {"), alone = code.find("else {", together);
  ASSERT_NE(together, std::string::npos) << code;
  ASSERT_NE(alone, std::string::npos) << code;
  // The count out's round trip runs under the combine: its value is read
  // after the stores, where the last out frees the counters.
  const size_t stores = code.rfind("store_f16(", alone);
  const size_t count_out = code.find("if (threadIdx.x == 0) split_count_out(counters + 2 * point, counted_out, 4u);");
  ASSERT_NE(count_out, std::string::npos) << code;
  EXPECT_LT(stores, count_out);
  EXPECT_LT(count_out, alone);
  EXPECT_THAT(code, ::testing::HasSubstr("const int split_lo = min(64, static_cast<int>(blockIdx.z) * 16);"));
  EXPECT_THAT(code, ::testing::HasSubstr("const int split_hi = min(64, split_lo + 16);"));
  EXPECT_THAT(code.substr(alone), ::testing::HasSubstr("const int split_lo = 0, split_hi = 64;"));
  // The combine and the stores walk the share alone.
  const size_t combine = code.find("const int split_hi");
  ASSERT_NE(combine, std::string::npos) << code;
  EXPECT_THAT(code.substr(combine),
              ::testing::HasSubstr("for (int l = split_lo + threadIdx.x * 4; l < split_hi; l += 1024)"));
  const size_t store = code.find("store_f16", combine);
  ASSERT_NE(store, std::string::npos) << code;
  EXPECT_NE(code.rfind("for (int l = split_lo + threadIdx.x; l < split_hi; l += 256)", store), std::string::npos)
      << code;
  // Where the blocks do not go on together, the last block zeroes the count in.
  EXPECT_THAT(code.substr(alone), ::testing::HasSubstr("if (threadIdx.x == 0) counters[2 * point] = 0u;"));
  EXPECT_EQ(code.substr(together, alone - together).find("counters[2 * point] = 0u;"), std::string::npos) << code;
  ExpectCompiles(graph);
  // The executor compiles it for one way on at a time (SourceFor): each
  // form fixes `together`, and compiles.
  for (const bool way : {true, false}) {
    const std::string form = codegen::SourceFor(*source, way);
    EXPECT_EQ(form, absl::StrCat("#define KILN_TOGETHER ", way ? 1 : 0, "\n", code));
    absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
    if (!nvrtc.ok()) continue;
    jit::CompileOptions options;
    options.arch = "sm_90";
    absl::StatusOr<std::string> cubin = jit::CompileToCubin(**nvrtc, codegen::AssembleSource(form), options);
    EXPECT_TRUE(cubin.ok()) << cubin.status();
  }

  // After LoRA's loop, (X @ A) @ B takes every row of X @ A: the last block
  // combines alone, its source the same for either way.
  absl::StatusOr<codegen::KernelSource> lora = Generate(Lora(DType::kF16, 4, 4096, 4096, 16, {.split = 2}));
  ASSERT_TRUE(lora.ok()) << lora.status();
  EXPECT_EQ(codegen::SourceFor(*lora, true), lora->source);
  const size_t param = lora->source.find("unsigned together;");
  ASSERT_NE(param, std::string::npos);
  EXPECT_EQ(lora->source.find("together", param + 18), std::string::npos) << lora->source;  // Params' field alone
  EXPECT_FALSE(lora->split_together);
  EXPECT_THAT(lora->source, ::testing::Not(::testing::HasSubstr("p.together ?")));
}

// With many blocks a point (over 16), the count out is the last warp's,
// after the gather's barrier: warp 0 reads the maxes first, and its loads
// would queue behind the atomic's round trip.
TEST(TiledCodegen, ManyBlocksCountOutFromTheLastWarp) {
  const KernelGraph graph = RmsNormLinear(DType::kF16, 1, 4096, 4096, {.m = 1, .k = 64, .n = 64, .split = 32});
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_TRUE(source->split_together);
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("split_last = together ? (split_gather(counters + 2 * point, 32u), true) "
                                         ": split_arrive(counters + 2 * point) == 31u;"));
  const size_t gather = code.find("split_gather(");
  const size_t leave = code.find("if (together && threadIdx.x == 224) counted_out = split_leave(counters + 2 * point);");
  ASSERT_NE(leave, std::string::npos) << code;
  EXPECT_NE(code.substr(gather, leave - gather).find("__syncthreads();"), std::string::npos) << code;
  const size_t count_out = code.find("if (threadIdx.x == 224) split_count_out(counters + 2 * point, counted_out, 32u);");
  ASSERT_NE(count_out, std::string::npos) << code;
  EXPECT_LT(code.rfind("store_f16(", count_out), count_out);
  ExpectCompiles(graph);
}

// Fewer rows than half the blocks (gated MLP: 16 rows, 64 blocks): each
// row's 64 columns in 4 runs of 16, a block each, and 16 threads a vector
// of 4 (a group's threads a run of vectors), each every 16th block's
// partials, loaded before the pass over the maxes; the groups' sums meet in
// the scratch, added in a tree. The last block alone adds the same sums in
// the same order in one thread (the GPU test checks the bits).
TEST(TiledCodegen, FewRowsAreSharedOutInRunsOfARow) {
  const KernelGraph graph = GatedMlp(DType::kF16, 16, 4096, 64, {.m = 16, .k = 64, .n = 64, .split = 64});
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE(source->split_together);
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("const int split_part = static_cast<int>(blockIdx.z) % 4;"));
  EXPECT_THAT(code, ::testing::HasSubstr("const int split_lo = min(16, static_cast<int>(blockIdx.z) / 4 * 1);"));
  EXPECT_THAT(code, ::testing::HasSubstr("split_lo * 64 + split_part * 16"));
  const size_t ahead = code.find("'s partials, loaded under the maxes' pass");
  const size_t combine = code.find("the thread's blocks: g, g + 16", ahead);
  ASSERT_NE(ahead, std::string::npos) << code;
  EXPECT_LT(code.find("const int split_hi"), ahead);
  EXPECT_NE(combine, std::string::npos);
  EXPECT_THAT(code, ::testing::HasSubstr("const int q = threadIdx.x / 16 + k * 16;"));
  // The groups' sums added an element a thread, as the passes after take
  // them; the last block's four a thread.
  EXPECT_THAT(code, ::testing::HasSubstr("s[h] += s[h + w];"));
  EXPECT_THAT(code, ::testing::HasSubstr("sums[g].x += sums[g + w].x;"));
  // The stores walk the block's run of its row, each thread reading the
  // elements it added up and the silu it took of them: no barrier between.
  const size_t last_sum = code.find("x6[l] = s[0];", combine);
  const size_t store = code.find("store_f16", combine);
  ASSERT_NE(last_sum, std::string::npos) << code;
  ASSERT_NE(store, std::string::npos) << code;
  EXPECT_EQ(code.substr(last_sum, store - last_sum).find("__syncthreads"), std::string::npos) << code;
  EXPECT_NE(code.rfind("for (int l = split_lo * 64 + split_part * 16 + threadIdx.x;", store), std::string::npos)
      << code;
  ExpectCompiles(graph);

  // RMSNorm's linear at 32 blocks (a GPU test's variant): rows 4 a block
  // (its sum of squares, 4 floats a share), lanes in groups all the same.
  const KernelGraph norm = RmsNormLinear(DType::kF16, 17, 4097, 256, {.split = 32});
  absl::StatusOr<codegen::KernelSource> grouped = Generate(norm);
  ASSERT_TRUE(grouped.ok()) << grouped.status();
  EXPECT_THAT(grouped->source, ::testing::HasSubstr("// the thread's blocks: g, g + "));
  EXPECT_THAT(grouped->source, ::testing::HasSubstr("sums[g].x += sums[g + w].x;"));
  EXPECT_THAT(grouped->source, ::testing::Not(::testing::HasSubstr("split_part")));
  ExpectCompiles(norm);
}

// The last block sums the partials four elements a thread, which is not
// the mapping of the linear loops after it: a barrier comes between (here
// nothing else would force one: the output stores the sum as it is).
TEST(TiledCodegen, ASplitSumIsBehindABarrierBeforeItIsStored) {
  TiledGraph g(4, 4096, 1, {.m = 4, .k = 64, .n = 1, .split = 4});
  const int x = g.Tensor(DType::kF16, {4, 4096}, TensorRole::kInput);
  const int out = g.Tensor(DType::kF32, {4, 1}, TensorRole::kOutput);
  const int total = g.Accumulate(g.ReduceSum(g.Read(x, {-1, 0, -1}, 1), 1));
  g.Save(out, total, {-1, 0, -1});
  absl::StatusOr<codegen::KernelSource> source = Generate(g.graph());
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  const size_t wide = code.find("[l + 3] = sum.w;");
  ASSERT_NE(wide, std::string::npos) << code;
  EXPECT_LT(code.find("__syncthreads();", wide), code.find("store_f32", wide)) << code;
  ExpectCompiles(g.graph());
}

// With one_point_blocks, where the launch has a block for every tile of a
// grid axis (a concrete extent of no more tiles than kMaxLaunchBlocks), a
// block takes one grid point: the loop's step leaves it. A symbolic extent
// keeps the stride, and so does every axis without the flag.
TEST(TiledCodegen, AGridPointABlockWhereTheLaunchCoversTheAxis) {
  absl::StatusOr<codegen::KernelSource> fixed =
      Generate(RmsNormLinear(DType::kF16, 17, 4097, 256, {.split = 32, .one_point = true}));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_THAT(fixed->source, ::testing::ContainsRegex(R"(; bg0 = \(256(LL)? \+ [0-9]+\) / [0-9]+\))"));
  EXPECT_THAT(fixed->source, ::testing::Not(::testing::HasSubstr("+= gridDim")));
  ExpectCompiles(RmsNormLinear(DType::kF16, 17, 4097, 256, {.split = 32, .one_point = true}));
  absl::StatusOr<codegen::KernelSource> strided = Generate(RmsNormLinear(DType::kF16, 17, 4097, 256, {.split = 32}));
  ASSERT_TRUE(strided.ok()) << strided.status();
  EXPECT_THAT(strided->source, ::testing::HasSubstr("bg0 += gridDim.x"));
  const Symbol tokens("tokens", 64), k("k", 8192);
  absl::StatusOr<codegen::KernelSource> symbolic = Generate(GatedMlp(DType::kF16, tokens, k, 256, {.one_point = true}));
  ASSERT_TRUE(symbolic.ok()) << symbolic.status();
  EXPECT_THAT(symbolic->source, ::testing::HasSubstr("+= gridDim"));
  EXPECT_THAT(symbolic->source, ::testing::ContainsRegex(R"(; bg0 = \(256(LL)? \+ [0-9]+\) / [0-9]+\))"))
      << "the concrete axis alone takes one point";
}

}  // namespace
}  // namespace kiln
