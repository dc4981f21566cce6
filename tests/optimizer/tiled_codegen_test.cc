// The code generator for graph-defined blocks (BlockKind::kTiled), on the
// hand-made uGraphs of tiled_graphs.h: what it emits, and that NVRTC
// compiles it (no GPU needed). gpu_tiled_codegen_test.cc runs them; split
// loops' combines are tiled_split_codegen_test.cc's.
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "optimizer/codegen/emitter.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/ugraph_validate.h"
#include "tests/optimizer/tiled_graphs.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ugraph::KernelGraph;
using ugraph::TensorRole;
using testing::CountSubstr;
using testing::ExpectCompiles;
using testing::ExpectWaitsForTheKernelBefore;
using testing::GatedMlp;
using testing::Generate;
using testing::Lora;
using testing::Mean;
using testing::RmsNormLinear;
using testing::SymbolicDimsRefused;
using testing::TiledGraph;
using testing::ValueOrFail;
using testing::Tiles;

TEST(TiledCodegen, RmsNormLinearCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(RmsNormLinear(dtype, 17, 4097, 127));
  }
}

TEST(TiledCodegen, OddTilesAndTransposedWeightsCompile) {
  ExpectCompiles(RmsNormLinear(DType::kF16, 17, 4097, 127, {.m = 5, .k = 30, .n = 24}));
  ExpectCompiles(RmsNormLinear(DType::kBF16, 3, 127, 127, {}, /*transposed=*/true));
}

// Weights stored [N, K] (B's vectors along k): each thread dots the
// vectors it copied with X's rows, in registers for the whole loop; a
// column's lanes add by shuffles after it. W never widens into a tile.
// Stored [K, N], the same product keeps its vectors along N instead.
TEST(TiledCodegen, WeightsStoredByRowsAreDottedInRegisters) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    for (const int64_t split : {1, 4}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " split ", split));
      const KernelGraph graph = RmsNormLinear(dtype, 3, 4097, 127, {.split = split}, /*transposed=*/true);
      absl::StatusOr<codegen::KernelSource> source = Generate(graph);
      ASSERT_TRUE(source.ok()) << source.status();
      const std::string& code = source->source;
      EXPECT_THAT(code, ::testing::HasSubstr("this thread's B vectors (along k) dotted with A's rows"));
      EXPECT_THAT(code, ::testing::HasSubstr("the direct matmul reads this step's vectors from the ring"));
      // A column's 64 elements a step: 8 vectors of f16 (3 shuffles), 16 of f32 (4).
      EXPECT_EQ(CountSubstr(code, "s += __shfl_xor_sync(0xffffffffu, s, "), dtype == DType::kF32 ? 4 : 3);
      ExpectCompiles(graph);
    }
  }
  absl::StatusOr<codegen::KernelSource> by_columns = Generate(RmsNormLinear(DType::kF16, 3, 4097, 127));
  ASSERT_TRUE(by_columns.ok()) << by_columns.status();
  EXPECT_THAT(by_columns->source, ::testing::Not(::testing::HasSubstr("dotted with A's rows")));
}

TEST(TiledCodegen, GatedMlpCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(GatedMlp(dtype, 3, 127, 127));
  }
}

TEST(TiledCodegen, LoraCompiles) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(Lora(dtype, 1, 4097, 127, 16));
  }
}

TEST(TiledCodegen, SplitLoopsCompile) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectCompiles(RmsNormLinear(dtype, 17, 4097, 127, {.split = 4}));
    ExpectCompiles(GatedMlp(dtype, 3, 127, 127, {.k = 32, .split = 3}));
    ExpectCompiles(Lora(dtype, 1, 4097, 127, 16, {.split = 8}));
  }
}

// The op after the loop that only the output reads (RMSNorm's rows times
// their rsqrt) is computed in the store's pass: no tile and no pass of its
// own.
TEST(TiledCodegen, TheLastElementwiseOpIsComputedAsItIsStored) {
  for (const int64_t split : {1, 4}) {
    absl::StatusOr<codegen::KernelSource> source =
        Generate(RmsNormLinear(DType::kF16, 3, 4096, 4096, {.m = 2, .k = 64, .n = 64, .split = split}));
    ASSERT_TRUE(source.ok()) << source.status();
    const std::string& code = source->source;
    const size_t store = code.find("computed as it is stored");
    ASSERT_NE(store, std::string::npos) << code;
    // "// t2 <- x12 = binary mul x3 x11, computed ...": x12 has no tile.
    const size_t name = code.rfind("<- x", store) + 3, end = code.find(' ', name);
    const std::string op = code.substr(name, end - name);
    EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const " + op + " ="))) << op;
    EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr(op + "[l] ="))) << op;
    EXPECT_THAT(code.substr(store), ::testing::ContainsRegex("store_f16\\(p\\.t\\[2\\], [^;]*op_mul\\("));
  }
}

// Where the tile's last axis is the output's contiguous one and holds whole
// 16-byte vectors, at least one for half the threads, a thread stores 16
// bytes at a time: 8 f16 or bf16, 4 f32; element by element where a vector
// is cut by the tensor's end or unaligned. Tiles of 4 f16 columns, or of
// 2 rows (a vector for a quarter of the threads), are stored element by
// element.
TEST(TiledCodegen, OutputsAreStoredSixteenBytesAtATime) {
  struct Case {
    DType dtype;
    int64_t n, tile_m, tile_n;
    const char* vector_store;  // empty: element by element
  };
  const Case cases[] = {{DType::kF16, 4096, 16, 64, "store16_f16("},
                        {DType::kBF16, 127, 16, 64, "store16_bf16("},
                        {DType::kF32, 127, 16, 64, "store16_f32("},
                        {DType::kF16, 127, 16, 4, ""},
                        {DType::kF16, 4096, 2, 64, ""}};
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(DTypeName(c.dtype), " n ", c.n, " tile ", c.tile_m, " x ", c.tile_n));
    const KernelGraph graph = RmsNormLinear(c.dtype, 17, 256, c.n, {.m = c.tile_m, .k = 64, .n = c.tile_n});
    absl::StatusOr<codegen::KernelSource> source = Generate(graph);
    ASSERT_TRUE(source.ok()) << source.status();
    const std::string& code = source->source;
    const size_t store = code.find("computed as it is stored");
    ASSERT_NE(store, std::string::npos) << code;
    const std::string stores = code.substr(store);
    if (*c.vector_store == '\0') {
      EXPECT_THAT(stores, ::testing::Not(::testing::HasSubstr("store16_"))) << stores;
      EXPECT_THAT(stores, ::testing::HasSubstr("threadIdx.x; l < ")) << stores;
    } else {
      const int64_t width = c.dtype == DType::kF32 ? 4 : 8;
      EXPECT_THAT(stores, ::testing::HasSubstr(absl::StrCat("threadIdx.x * ", width, "; l < "))) << stores;
      EXPECT_THAT(stores, ::testing::HasSubstr(c.vector_store)) << stores;
      // The vector's elements one by one where it is cut or unaligned.
      EXPECT_THAT(stores, ::testing::ContainsRegex("if \\([^;]*aligned16\\(p\\.t\\[2\\], ")) << stores;
      EXPECT_THAT(stores, ::testing::ContainsRegex("for \\(int j = 0; j < [48]; \\+\\+j\\) [^;]*store_")) << stores;
      if (c.n % c.tile_n != 0) {
        EXPECT_THAT(stores, ::testing::ContainsRegex(absl::StrCat(" \\+ ", width, " <= n[0-9]"))) << stores;
      }
    }
    ExpectCompiles(graph);
  }
}

TEST(TiledCodegen, RingStagesCountOnlyTheBlocksTheGridGivesAnSm) {
  // gated_mlp_bs8's schedule: 64 blocks, each streaming two 128 x 64 weight
  // tiles a step. Three stages would let two blocks share an SM (6 steps in
  // flight there), but with 64 blocks on 132 SMs none does: four stages.
  const Tiles tiles{.m = 8, .k = 128, .n = 64};
  absl::StatusOr<codegen::KernelSource> few = Generate(GatedMlp(DType::kF16, 8, 4096, 4096, tiles));
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_THAT(few->source, ::testing::HasSubstr("// 4 stages of 1024 vectors"));
  // With 4 blocks for every SM, two such blocks an SM with 3 stages each
  // keep more steps in flight.
  absl::StatusOr<codegen::KernelSource> many =
      Generate(GatedMlp(DType::kF16, 8 * 16, 4096, 4096 * 33 / 16, tiles));
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_THAT(many->source, ::testing::HasSubstr("// 3 stages of 1024 vectors"));
}

TEST(TiledCodegen, AStreamingLoopTakesAFifthStageWhereTwoOfItsBlocksStillFitAnSm) {
  // rmsnorm_linear_bs8's schedule: 96 blocks (one an SM), 32 steps of a
  // 128 x 64 weight tile and 16 rows of X. 5 stages of 20 KiB still leave
  // room for a second block an SM (the next kernel's, launched early).
  const Tiles tiles{.m = 16, .k = 128, .n = 64};
  const KernelGraph bs8 = RmsNormLinear(DType::kF16, 16, 4096, 6144, tiles);
  absl::StatusOr<codegen::KernelSource> source = Generate(bs8);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("// 5 stages of 1024 vectors"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("copy_async_wait<3>();"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("if (step == step_end - 5) launch_dependents();"));
  EXPECT_EQ(source->min_blocks, 2);
  ExpectCompiles(bs8);
  // So does GpuTiledCodegen's odd shape (K's last step one row), which
  // runs it against the CPU.
  source = Generate(RmsNormLinear(DType::kF16, 3, 4097, 127));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("// 5 stages of 512 vectors"));
  // Four where the grid gives an SM more than one block (256 blocks)...
  source = Generate(RmsNormLinear(DType::kF16, 16, 4096, 4 * 4096, tiles));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("// 4 stages of 1024 vectors"));
  // ... where the loop is too short to stream with 5 (16 steps: 20 needed)...
  source = Generate(RmsNormLinear(DType::kF16, 16, 2048, 6144, tiles));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("// 4 stages of 1024 vectors"));
  // ... and where 5 stages would leave room for one block an SM
  // (gated_mlp_bs8's two weight tiles: 5 x 34 KiB).
  source = Generate(GatedMlp(DType::kF16, 8, 4096, 4096, {.m = 8, .k = 128, .n = 64}));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("// 4 stages of 1024 vectors"));
}

TEST(TiledCodegen, NarrowWeightTilesRunOnTensorCoresThroughASwizzledRing) {
  // LoRA with all 16 rows a block and 32 columns: W's ring rows are 4
  // vectors, A's (rank 16) 2. Both products run on tensor cores, their
  // rings swizzled so that ldmatrix's 8 rows fall in 8 bank groups.
  absl::StatusOr<codegen::KernelSource> source =
      Generate(Lora(DType::kF16, 16, 256, 4096, 16, {.m = 16, .k = 128, .n = 32}));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("x2 = matmul f16 x0 x1, summed into x3 after the loop: on tensor cores"));
  EXPECT_THAT(code, ::testing::HasSubstr("x5 = matmul f16 x0 x4, summed into x6 after the loop: on tensor cores"));
  EXPECT_THAT(code, ::testing::HasSubstr("load_b_fragment_trans(fb, &ring1[stage * 512 + ((k * 4 + v) ^ ((k * 4 + v) / 8 & 3))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("copy_async16(&ring1[issue_stage * 512 + ((l) ^ ((l) / 8 & 3))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("load_b_fragment_trans(fb, &ring4[stage * 256 + ((k * 2 + v) ^ ((k * 2 + v) / 8 & 1))]"));
  ExpectCompiles(Lora(DType::kF16, 16, 256, 4096, 16, {.m = 16, .k = 128, .n = 32}));
}

TEST(TiledCodegen, ProductsOfOneARunInOneLoopOnItsFragments) {
  // silu(X@W1) * (X@W2): both products read X's ring on the same tiles, so
  // one loop over k chunks loads each A fragment once and issues both.
  absl::StatusOr<codegen::KernelSource> source =
      Generate(GatedMlp(DType::kF16, 8, 4096, 4096, {.m = 8, .k = 128, .n = 64}));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("x2 = matmul f16 x0 x1 and x5 = matmul f16 x0 x4, summed into x3 and x6"));
  EXPECT_THAT(code, ::testing::HasSubstr("x5 = matmul f16 x0 x4: in x2's loop"));
  EXPECT_EQ(code.find("load_a_fragment"), code.rfind("load_a_fragment"));
  EXPECT_THAT(code, ::testing::HasSubstr("mma_f16((odd ? d2b : d2)[j], fa, fb);"));
  EXPECT_THAT(code, ::testing::HasSubstr("mma_f16((odd ? d5b : d5)[j], fa, fb);"));
}

TEST(TiledCodegen, WholeStepsIssueTheirRingCopiesWithoutChecks) {
  // A step whose loop coordinates are all in range issues each copy
  // straight from its offset where ring_whole (worked out once, before the
  // loop) says the thread's copies are whole aligned vectors in range; the
  // checked copies stay for the rest (a tail step, a partial block, an
  // unaligned view). Both the ring's prologue and its steps take them. A
  // streaming kernel keeps one loop (AttentionSearch.
  // LongFlashLoopsRunTheirWholeStepsInALoopOfTheirOwn has the other form).
  for (const int64_t k : {4096, 4000}) {
    SCOPED_TRACE(k);
    const KernelGraph graph = GatedMlp(DType::kF16, 8, k, 4096, {.m = 8, .k = 128, .n = 64});
    absl::StatusOr<codegen::KernelSource> source = Generate(graph);
    ASSERT_TRUE(source.ok()) << source.status();
    const std::string& code = source->source;
    const size_t declared = code.find("bool ring_whole = true;");
    const size_t prologue = code.find("if (ring_whole && knr == 128) {");
    const size_t step = code.find("for (; step < step_end; ++step) {");
    for (const size_t at : {declared, prologue, step}) ASSERT_NE(at, std::string::npos) << code;
    EXPECT_LT(declared, prologue);
    EXPECT_LT(prologue, step);
    EXPECT_EQ(code.find("lean_end"), std::string::npos);
    EXPECT_EQ(code.find("__syncthreads_and"), std::string::npos);
    const size_t whole = code.find("if (ring_whole && knr == 128) {", step);
    const size_t checked = code.find("else if (knr > 0) {", whole);
    ASSERT_NE(whole, std::string::npos) << code;
    ASSERT_NE(checked, std::string::npos) << code;
    const std::string fast = code.substr(whole, checked - whole);
    EXPECT_EQ(fast.find("aligned16"), std::string::npos) << fast;
    EXPECT_EQ(fast.find("set_vector_bits"), std::string::npos) << fast;
    EXPECT_EQ(CountSubstr(fast, "copy_async16("), 3) << fast;  // X, W1 and W2
    EXPECT_NE(code.find("aligned16", checked), std::string::npos);
    ExpectCompiles(graph);
  }
}

// A thread's tasks l = threadIdx.x + it * threads have their coordinates
// written from the thread and `it` apart, where the threads allow it (each
// coordinate's stride divides them): tasks then differ by constants, which
// the compiler folds into one address and immediate offsets. Copies issued
// from the block's last threads count down from threads - 1 alike.
TEST(TiledCodegen, ThreadTasksWriteTheirCoordinatesFromTheThreadAndTheStep) {
  const KernelGraph mlp = GatedMlp(DType::kF16, 8, 4096, 4096, {.m = 8, .k = 128, .n = 64});
  absl::StatusOr<codegen::KernelSource> source = Generate(mlp);
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  const std::string threads = absl::StrCat(source->threads);
  const std::string task = "const int l = threadIdx.x + it * " + threads + ";";
  int loops = 0, apart = 0;
  for (size_t at = code.find(task); at != std::string::npos; at = code.find(task, at + 1)) {
    const size_t next = code.find('\n', at) + 1;
    const size_t line = code.find_first_not_of(' ', next);
    if (code.compare(line, 12, "copy_async16") == 0 || code.compare(line, 11, "prefetch_l2") == 0) {
      // Whole copies (or their L2 prefetches): the first one's offset
      // before the loop, the others a constant distance on.
      const std::string copy = code.substr(next, code.find('\n', next) - next);
      EXPECT_THAT(copy, ::testing::ContainsRegex(R"(, rb[0-9]+ \+ it \* rd[0-9]+, 2\);)")) << copy;
      const size_t rd = code.rfind("const i64 rd", at) != std::string::npos ? code.rfind("const i64 rd", at)
                                                                             : code.rfind("const int rd", at);
      ASSERT_NE(rd, std::string::npos) << code;
      const std::string distance = code.substr(rd, code.find('\n', rd) - rd);
      EXPECT_EQ(distance.find("threadIdx"), std::string::npos) << distance;
      ++apart;
      continue;
    }
    ++loops;
    // The coordinates follow l, one a line.
    const size_t end = code.find("const int i", code.find("const int i", code.find("const int i", at) + 1) + 1);
    const std::string coords = code.substr(at, code.find('\n', end) - at);
    EXPECT_EQ(coords.find(" = l / "), std::string::npos) << coords;
    EXPECT_EQ(coords.find(" = l % "), std::string::npos) << coords;
    EXPECT_NE(coords.find("static_cast<int>(threadIdx.x / "), std::string::npos) << coords;
  }
  EXPECT_GE(loops, 3) << code;
  EXPECT_GE(apart, 3) << code;  // X, W1 and W2 at a whole step
  ExpectCompiles(mlp);

  const KernelGraph rms = RmsNormLinear(DType::kF16, 1, 4096, 6144, {.m = 1, .k = 128, .n = 32});
  source = Generate(rms);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_NE(source->source.find(absl::StrCat("(", source->threads - 1, "u - threadIdx.x)")), std::string::npos)
      << source->source;
  ExpectCompiles(rms);
}

TEST(TiledCodegen, GatedMlpStoresItsOutputFromTheFragments) {
  // silu(X@W1) * (X@W2): both products' sums sit in one lane each (one k
  // group), so each lane stores the output at its fragments' elements. No
  // accumulator tile is zeroed or flushed, and nothing after the loop
  // passes over a tile. Also with rows that leave a fragment's lower half
  // out (3), and in bf16.
  for (const int64_t m : {8, 3}) {
    for (const DType dtype : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(absl::StrCat(m, " rows, ", DTypeName(dtype)));
      const KernelGraph graph = GatedMlp(dtype, m, 4096, 4096, {.m = 8, .k = 128, .n = 64});
      absl::StatusOr<codegen::KernelSource> source = Generate(graph);
      ASSERT_TRUE(source.ok()) << source.status();
      const std::string& code = source->source;
      EXPECT_THAT(code, ::testing::HasSubstr("from x2, x5's fragments: each lane its elements"));
      EXPECT_THAT(code, ::testing::HasSubstr("op_silu((0.0f + (d2[j][h] + d2b[j][h])))"));
      EXPECT_THAT(code, ::testing::HasSubstr("(0.0f + (d5[j][h] + d5b[j][h]))"));
      EXPECT_THAT(code, ::testing::HasSubstr("if (r >= 8) continue;"));
      EXPECT_EQ(code.find("// x3 = 0"), std::string::npos) << code;
      EXPECT_EQ(code.find("tensor-core sums"), std::string::npos) << code;
      const size_t after = code.find("copy_async_wait<0>();");
      ASSERT_NE(after, std::string::npos) << code;
      // One barrier after the loop: the grid point's end.
      EXPECT_EQ(code.find("__syncthreads();", after), code.rfind("__syncthreads();")) << code;
      ExpectCompiles(graph);
    }
  }
  // RMSNorm's rows times their rsqrt read a sum of another shape: the
  // accumulator's tile stays.
  absl::StatusOr<codegen::KernelSource> rms = Generate(RmsNormLinear(DType::kF16, 2, 4096, 6144, {.m = 2, .k = 128, .n = 64}));
  ASSERT_TRUE(rms.ok()) << rms.status();
  EXPECT_EQ(rms->source.find("'s fragments: each lane its elements"), std::string::npos);
}

TEST(TiledCodegen, FreshNamesAreNeverTheTileLibrarysTypes) {
  // "i" + a counter once gave "i64", which the tile library takes for its
  // 64-bit integer type: the kernel then failed to compile.
  const KernelGraph graph = GatedMlp(DType::kF16, 8, 256, 256);
  codegen::Emitter e(graph, graph.kernels[0]);
  std::set<std::string> names;
  for (int k = 0; k < 200; ++k) {
    const std::string name = e.Fresh("i");
    EXPECT_NE(name, "i64");
    EXPECT_TRUE(names.insert(name).second) << name;
  }
}

TEST(TiledCodegen, IndexArithmeticIs32BitWhereEveryOffsetFits) {
  // Offsets up to 8 of the largest tile (128 here) past each dim's end:
  // the weight [k, 32768] spans (k + 1024) * 32768 + 32768 + 1024.
  const Tiles tiles{.m = 2, .k = 128, .n = 64};
  const KernelGraph fits = RmsNormLinear(DType::kF16, 2, 64510, 32768, tiles);
  const KernelGraph over = RmsNormLinear(DType::kF16, 2, 64511, 32768, tiles);
  EXPECT_TRUE(codegen::Emitter(fits, fits.kernels[0]).FitsIndex32());
  EXPECT_FALSE(codegen::Emitter(over, over.kernels[0]).FitsIndex32());
  const codegen::KernelSource narrow = ValueOrFail(Generate(fits));
  EXPECT_THAT(narrow.source, ::testing::HasSubstr("const int st1_0 = st1_1 * 32768;"));
  EXPECT_THAT(narrow.source, ::testing::HasSubstr("int step = step_begin;"));
  EXPECT_THAT(narrow.source, ::testing::Not(::testing::ContainsRegex("i64|[0-9]LL")));
  const codegen::KernelSource wide = ValueOrFail(Generate(over));
  EXPECT_THAT(wide.source, ::testing::HasSubstr("const i64 st1_0 = st1_1 * 32768LL;"));
  EXPECT_THAT(wide.source, ::testing::HasSubstr("i64 step = step_begin;"));
  ExpectCompiles(fits);
  ExpectCompiles(over);
  // A split loop's partial sums stay 64-bit offsets into the workspace.
  const codegen::KernelSource split =
      ValueOrFail(Generate(RmsNormLinear(DType::kF16, 1, 4096, 4096, {.m = 2, .k = 64, .n = 64, .split = 4})));
  EXPECT_THAT(split.source, ::testing::HasSubstr("int step = step_begin;"));
  EXPECT_THAT(split.source, ::testing::HasSubstr("float* const mine = partials + (i64)"));
  // A symbolic size may be anything at run time: 64-bit.
  const KernelGraph symbolic = GatedMlp(DType::kF16, Symbol("tokens", 64), 256, 256);
  EXPECT_FALSE(codegen::Emitter(symbolic, symbolic.kernels[0]).FitsIndex32());
  absl::StatusOr<codegen::KernelSource> source = Generate(symbolic);
  if (SymbolicDimsRefused(source.status())) GTEST_SKIP() << source.status();
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::HasSubstr("i64 step = step_begin;"));
}

TEST(TiledCodegen, BadLoopSplitsAreInvalid) {
  KernelGraph graph = GatedMlp(DType::kF16, 4, 128, 64, {.split = 0});
  EXPECT_THAT(ugraph::Validate(graph).message(), ::testing::HasSubstr("loop_split=0"));
  graph.kernels[0].block.loop_split = ugraph::kMaxLoopSplit + 1;
  EXPECT_FALSE(ugraph::Validate(graph).ok());
  // No grid axis left for the split.
  graph.kernels[0].block.loop_split = 2;
  graph.kernels[0].block.grid[2] = {Shape{1}, 1};
  EXPECT_THAT(ugraph::Validate(graph).message(), ::testing::HasSubstr("no extent"));
}

TEST(TiledCodegen, SymbolicSizesBecomeKernelArguments) {
  const Symbol tokens("tokens", 64), k("k", 8192);
  const KernelGraph graph = GatedMlp(DType::kF16, tokens, k, 256);
  absl::StatusOr<codegen::KernelSource> source = Generate(graph);
  if (SymbolicDimsRefused(source.status())) GTEST_SKIP() << source.status();
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectCompiles(graph);
  EXPECT_EQ(source->symbols.size(), 2u);
}

TEST(TiledCodegen, RmsNormLinearStreamsWeightsAndSumsProductsInPlace) {
  absl::StatusOr<codegen::KernelSource> source = Generate(RmsNormLinear(DType::kF16, 1, 4096, 4096));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  // X and the weight tile arrive by 16-byte asynchronous copies into a
  // swizzled ring (read by ldmatrix), 4 steps ahead; steps past the
  // block's last copy nothing.
  EXPECT_THAT(code, ::testing::HasSubstr("copy_async16(&ring1[issue_stage * 512 + ((l) ^ ((l) / 8 & 7))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("copy_async16(&ring0[issue_stage * 128 + ((l) ^ ((l) / 8 & 7))]"));
  EXPECT_THAT(code, ::testing::HasSubstr("if (knr > 0)"));
  // X's 128 copies a step go to the last threads; the sum of squares over
  // them stays with the first, so no warp does both.
  const size_t x_issue = code.find("// x0 = input #0: issue");
  ASSERT_NE(x_issue, std::string::npos);
  EXPECT_EQ(code.find("const int l = ", x_issue), code.find("const int l = 255 - threadIdx.x + it * 256;", x_issue));
  const size_t squares = code.find("reduce_sum axis 1 x4");
  ASSERT_NE(squares, std::string::npos);
  EXPECT_EQ(code.find("const int l = ", squares), code.find("const int l = threadIdx.x + it * 256;", squares));
  // The product runs on tensor cores, both operands straight from the ring
  // (X has no f32 tile), and goes into its accumulator after the loop.
  EXPECT_THAT(code, ::testing::HasSubstr("summed into x3 after the loop: on tensor cores"));
  EXPECT_THAT(code, ::testing::HasSubstr("load_a_fragment_x4(fa, &ring0[stage * 128 + "));
  EXPECT_THAT(code, ::testing::HasSubstr("load_b_fragment_trans(fb, &ring1[stage * 512 + ((k * 8 + v) ^"));
  // Even and odd k chunks into two sets of fragments (two chains of
  // dependent mma.sync), added into the accumulator tile by the lanes that
  // hold them: no scratch.
  EXPECT_THAT(code, ::testing::HasSubstr("mma_f16((odd ? d2b : d2)[j], fa, fb);"));
  EXPECT_THAT(code, ::testing::HasSubstr("x3[r * 64 + v * 8 + t2 + h % 2] += d2[j][h] + d2b[j][h];"));
  EXPECT_THAT(code, ::testing::HasSubstr("read from the ring by its users (no tile)"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x0 =")));
  // The sum of squares is kept per thread in registers over its own ring
  // vectors, then added into its accumulator after the loop.
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x4, added to x7 after the loop: this thread's ring vectors"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs6[it] += op_mul(e, e)"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x4 =")));
  // One loop over K, one barrier a step: after the wait, before the copies
  // that reuse the stage the last step read.
  EXPECT_EQ(code.find("for (; step"), code.rfind("for (; step"));
  const size_t loop = code.find("for (; step < step_end; ++step)"), after = code.find("copy_async_wait<0>()");
  ASSERT_NE(loop, std::string::npos);
  ASSERT_NE(after, std::string::npos);
  const std::string body = code.substr(loop, after - loop);
  EXPECT_THAT(body, ::testing::HasSubstr("copy_async_wait<3>();\n        __syncthreads();"));
  EXPECT_EQ(body.find("__syncthreads()"), body.rfind("__syncthreads()"));
  EXPECT_EQ(source->threads, 256);
  // A streaming loop with one block an SM from its grid (64 blocks): 5
  // stages of 10 KiB, which leave room for 4 blocks an SM. The steps in
  // flight count toward the cost model's bytes in flight.
  EXPECT_THAT(code, ::testing::HasSubstr("5 stages of 512 vectors"));
  EXPECT_EQ(source->min_blocks, 4);
  EXPECT_EQ(source->inflight_bytes, 4 * (128 + 512) * 16);
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kTensorCores);
}

// A loop of many steps (not the flash path) fetches its first steps into
// L2 before it waits for the kernel before (3, of a ring of 5 stages), and
// lets the kernel after it launch a ring's length before its end; a short
// loop lets it launch at once and prefetches nothing.
TEST(TiledCodegen, AStreamingLoopPrefetchesBeforeItWaitsAndTriggersNearItsEnd) {
  absl::StatusOr<codegen::KernelSource> source = Generate(RmsNormLinear(DType::kF16, 1, 4096, 4096));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  ExpectWaitsForTheKernelBefore(code);
  const size_t wait = code.find("wait_for_prior_grid();"), loop = code.find("for (; step < step_end; ++step)");
  ASSERT_NE(loop, std::string::npos);
  const std::string before = code.substr(0, wait);
  EXPECT_THAT(before, ::testing::HasSubstr("for (int j = 0; j < 3; ++j)"));
  EXPECT_THAT(before, ::testing::HasSubstr("prefetch_l2(p.t[0], "));
  EXPECT_THAT(before, ::testing::HasSubstr("prefetch_l2(p.t[1], "));
  EXPECT_THAT(code, ::testing::HasSubstr("5 stages of 512 vectors"));
  EXPECT_THAT(code.substr(loop), ::testing::HasSubstr("if (step == step_end - 5) launch_dependents();"));
  EXPECT_EQ(code.find("launch_dependents();"), code.rfind("launch_dependents();"));
  // The accumulators are zeroed before the wait too (shared memory only);
  // after it, the ring's first copies go out at once.
  EXPECT_THAT(before, ::testing::HasSubstr("[l] = 0.0f;"));
  const size_t prologue = code.find("// the first 4 steps' vector tiles, copied asynchronously into the ring");
  ASSERT_NE(prologue, std::string::npos);
  EXPECT_EQ(code.substr(wait, prologue - wait).find("__syncthreads();"), std::string::npos)
      << code.substr(wait, prologue - wait);

  source = Generate(Lora(DType::kF16, 16, 256, 4096, 16));
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectWaitsForTheKernelBefore(source->source);
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("prefetch_l2(")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("wait_for_prior_grid();  // launched early: the kernel before it "
                                                   "finishes first\n        launch_dependents();"));
}

// A barrier right after another (nothing but comments between them)
// would only cost time: the generator leaves it out.
TEST(TiledCodegen, NoBarrierFollowsAnother) {
  for (const KernelGraph& graph : {RmsNormLinear(DType::kF16, 16, 4096, 4096), GatedMlp(DType::kF16, 8, 4096, 4096),
                                   Lora(DType::kF16, 16, 256, 4096, 16), RmsNormLinear(DType::kF32, 17, 4097, 127)}) {
    absl::StatusOr<codegen::KernelSource> source = Generate(graph);
    ASSERT_TRUE(source.ok()) << source.status();
    bool after_barrier = false;
    for (absl::string_view line : absl::StrSplit(source->source, '\n')) {
      line = absl::StripLeadingAsciiWhitespace(line);
      if (line.empty() || absl::StartsWith(line, "//")) continue;
      const bool barrier = line == "__syncthreads();";
      EXPECT_FALSE(barrier && after_barrier) << source->source;
      after_barrier = barrier;
    }
  }
}

TEST(TiledCodegen, AShiftedSumOfSquaresStaysInRegistersAndSkipsTheTail) {
  absl::StatusOr<codegen::KernelSource> source =
      Generate(RmsNormLinear(DType::kF16, 2, 4097, 6144, {.m = 2, .k = 256, .n = 8}, false, 1.0));
  ASSERT_TRUE(source.ok()) << source.status();
  // The register form of the product (8 columns: one vector a row, which
  // ldmatrix's swizzle cannot spread) reads X's column from its ring; the
  // chain (x + 1)^2 is evaluated only for in-range k.
  EXPECT_THAT(source->source, ::testing::HasSubstr("(from its ring), in registers"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("if (c + j < kn) rs"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("op_mul(op_add(e, 0x1p+0f), op_add(e, 0x1p+0f))"));
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kRegisters);
  // 4 stages of 5 KiB and 4 blocks an SM: the flush's scratch holds a
  // warp's sums (its lanes add theirs by shuffles), not every thread's.
  EXPECT_THAT(source->source, ::testing::HasSubstr("4 stages of 256 vectors"));
  EXPECT_THAT(source->source, ::testing::HasSubstr("__shfl_xor_sync(0xffffffffu, d2[m][j], 4)"));
  EXPECT_EQ(source->min_blocks, 4);
}

TEST(TiledCodegen, ASumScaledBeforeItsAccumulatorStaysInRegisters) {
  // acc += (1/K) * sum(x^2) per step, as the search writes the mean: the
  // sum still runs in registers, the scale applied where it is added, and
  // neither the scaled sum nor X gets a tile.
  absl::StatusOr<codegen::KernelSource> source = Generate(
      RmsNormLinear(DType::kF16, 16, 4096, 6144, {.m = 16, .k = 128, .n = 64}, false, 0, Mean::kOnStepSum));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x4, added to x8 after the loop: this thread's ring"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs6[it] += op_mul(e, e);"));
  // A row's 16 partial sums lie in 16 lanes of a warp (one a thread): they
  // are added by shuffles, not through the scratch.
  EXPECT_THAT(code,
              ::testing::HasSubstr("for (int o = 8; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);"));
  EXPECT_THAT(code, ::testing::HasSubstr("if (threadIdx.x < 256 && threadIdx.x % 16 == 0) x8[threadIdx.x / 16] += "
                                         "0x1p-12f * sum;"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x7 =")));  // the scaled sum
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("float* const x0 =")));
  EXPECT_EQ(source->matmul_path, codegen::MatmulPath::kTensorCores);
}

TEST(TiledCodegen, ConstantFactorsOfARegisterSumLeaveTheLoop) {
  // sum(c * x^2) runs as c * sum(x^2): the factor is applied once, where
  // the sum is added, not to every element in the loop.
  absl::StatusOr<codegen::KernelSource> source = Generate(
      RmsNormLinear(DType::kF16, 2, 4096, 6144, {.m = 2, .k = 256, .n = 32}, false, 0, Mean::kOnSquares));
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string& code = source->source;
  EXPECT_THAT(code, ::testing::HasSubstr("reduce_sum axis 1 x6, added to x8 after the loop: this thread's ring"));
  EXPECT_THAT(code, ::testing::HasSubstr("rs7[it] += op_mul(e, e);"));
  EXPECT_THAT(code, ::testing::HasSubstr("] += 0x1p-12f * sum;"));
  EXPECT_THAT(code, ::testing::Not(::testing::HasSubstr("0x1p-12f, op_mul(e, e)")));
}

TEST(TiledCodegen, F32ProductsStayOffTensorCores) {
  absl::StatusOr<codegen::KernelSource> source = Generate(RmsNormLinear(DType::kF32, 2, 4096, 6144, {.m = 2}));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("mma_")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("in registers"));  // the register form of a direct matmul
}

TEST(TiledCodegen, LoopTilesTooLargeForTheRingArePrefetchedThroughRegisters) {
  // 256 x 128 f16 weight tiles: 64 KiB a step, no room for two stages in
  // the usual ring, nor for three in the large one.
  absl::StatusOr<codegen::KernelSource> source =
      Generate(RmsNormLinear(DType::kF16, 2, 4096, 6144, {.m = 2, .k = 256, .n = 128}));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(source->source, ::testing::Not(::testing::HasSubstr("copy_async")));
  EXPECT_THAT(source->source, ::testing::HasSubstr("load16_bits"));
}

TEST(TiledCodegen, IntegerInputsAreUnimplemented) {
  KernelGraph graph = GatedMlp(DType::kF32, 4, 64, 64);
  graph.tensors[1].dtype = DType::kI32;
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("t1 is i32"));
}

TEST(TiledCodegen, ALoopTileReadingAnAccumulatorIsRefused) {
  TiledGraph g(4, 128, 64);
  const int x = g.Tensor(DType::kF32, {4, 128}, TensorRole::kInput);
  const int out = g.Tensor(DType::kF32, {4, 1}, TensorRole::kOutput);
  const int x0 = g.Read(x, {-1, 0, -1}, 1);
  const int total = g.Accumulate(g.ReduceSum(x0, 1));
  g.Binary(OpKind::kSub, x0, total);  // would read the running sum at every step
  g.Save(out, total, {-1, 0, -1});
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(g.graph(), 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), ::testing::HasSubstr("x3"));
}

TEST(TiledCodegen, TilesThatDoNotFitAreInvalid) {
  KernelGraph graph = GatedMlp(DType::kF32, 4, 128, 64);
  // The loop now walks N in the second weight: the matmul's k axes differ.
  graph.kernels[0].block.inputs[2].fmap = 1;
  graph.kernels[0].block.inputs[2].imap = {-1, -1, -1};
  absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(graph, 0);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln
