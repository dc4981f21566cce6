// A region worked out by a chain of kernels (factor.h): MLA's decode step as
// t = q W_uk^T, attention over the latent with the heads as its rows, then
// (P C) W_uv, or that last product in the attention's kernel. The
// factoring, its field tests, the search's choice of the composed graph,
// the fused graph's structure and its field tests, the lowering of a
// searched region of several kernels. All on the CPU (the kernels compile
// with NVRTC where it loads).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/lower.h"
#include "optimizer/search/factor.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search/schedules.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/search/verify.h"
#include "optimizer/ugraph_json.h"
#include "optimizer/ugraph_validate.h"
#include "tests/optimizer/search/schedule_spread.h"
#include "tests/test_util.h"

namespace kiln::search {
namespace {

using testing::ValueOrFail;

int64_t Elements(const Shape& shape) {
  int64_t n = 1;
  for (const Dim& d : shape) n *= d.value();
  return n;
}

// The values a composed graph passes between its kernels: `count`, each
// 16 x 256 (q W_uk^T or P C at the bench's shape; K and V never formed).
void ExpectValuesBetween(const ugraph::KernelGraph& g, int count) {
  KILN_EXPECT_OK(ugraph::Validate(g));
  int between = 0;
  for (const ugraph::DTensor& t : g.tensors) {
    if (t.role != ugraph::TensorRole::kIntermediate) continue;
    ++between;
    EXPECT_EQ(Elements(t.shape), 16 * 256) << ugraph::ToText(g);
  }
  EXPECT_EQ(between, count);
}

// Every kernel of a composed graph generated (and compiled where NVRTC
// loads); the attention's (kernel 1) source.
std::string CompiledAttention(const ugraph::KernelGraph& g) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  std::string attention;
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(g, static_cast<int>(k));
    EXPECT_TRUE(source.ok()) << source.status();
    if (!source.ok()) continue;
    if (nvrtc.ok()) ExpectCompilesForHopper(**nvrtc, *source);
    if (k == 1) attention = source->source;
  }
  return attention;
}

bool HasRank3Op(const Region& r) {
  for (const RegionOp& op : r.ops) {
    if (op.classes.size() > 2) return true;
  }
  return false;
}

TEST(FactorProducts, MlaIsThreePartsWithTheHeadsAsTheRowsBetween) {
  for (const FusedCase& c : {MlaCase(16, 256, 64, 4096), MlaCase(3, 48, 17, 127)}) {
    SCOPED_TRACE(c.name);
    const std::optional<FactoredRegion> f = FactorProducts(c.region);
    ASSERT_TRUE(f.has_value());
    ASSERT_EQ(f->parts.size(), 3u);
    // The region's inputs, as it reaches them: q #0, W_uk #1, C #2, W_uv #3.
    EXPECT_EQ(f->parts[0].sources, (std::vector<int>{0, 1})) << f->parts[0].region.ToString();
    EXPECT_EQ(f->parts[1].sources, (std::vector<int>{-1, 2})) << f->parts[1].region.ToString();
    EXPECT_EQ(f->parts[2].sources, (std::vector<int>{-2, 3})) << f->parts[2].region.ToString();
    // The part between has no batch dim: the heads are its products' rows,
    // and it reads C alone (for the scores and the values).
    const Region& between = f->parts[1].region;
    EXPECT_FALSE(HasRank3Op(between)) << between.ToString();
    int products = 0, exps = 0;
    for (const RegionOp& op : between.ops) {
      products += op.kind == RegionOp::Kind::kMatmul;
      exps += op.kind == RegionOp::Kind::kStableExp;
    }
    EXPECT_EQ(products, 2);
    EXPECT_EQ(exps, 1);
    EXPECT_EQ(between.class_size[between.ops[between.output_op()].classes[0]], c.region.class_size[0]);
    EXPECT_TRUE(ValueOrFail(VerifyFactoring(c.region, *f, 3, 7)));
    // The latent is both summed (the scores) and the output's last axis
    // (the values): every mapping reads it whole.
    const int latent = between.ops[between.output_op()].classes[1];
    ASSERT_TRUE(between.class_reduced[latent]);
    const std::vector<Schedule> mappings = Mappings(between);
    ASSERT_FALSE(mappings.empty());
    int64_t ways = 1;
    bool one_step = false;  // a block's share of the keys one step
    for (const Schedule& m : mappings) {
      for (const Schedule& s : ScheduleVariants(between, m)) {
        EXPECT_EQ(s.map[latent], Schedule::Map::kFull);
        ways = std::max(ways, s.loop_split);
        for (size_t k = 0; k < s.map.size(); ++k) {
          if (s.map[k] != Schedule::Map::kLoop || s.loop_split == 1) continue;
          const int64_t steps = (between.class_size[k].value() + s.tile[k] - 1) / s.tile[k];
          one_step |= steps == s.loop_split;
          EXPECT_GE(steps, s.loop_split) << "a block with no step";
        }
      }
    }
    // One block holds all the heads: its keys split up to 64 ways (each
    // block a step or more: 64 keys a block at 64 ways), where a grid of
    // several blocks stops at 16.
    if (c.region.class_size[3] == Dim(256)) {
      EXPECT_EQ(ways, 64);
      EXPECT_TRUE(one_step);
    }
  }
  const Region gqa = AttentionCase(2, 256, 64, 4096).region;
  for (const Schedule& m : Mappings(gqa)) {
    for (const Schedule& s : ScheduleVariants(gqa, m)) EXPECT_LE(s.loop_split, 16);
  }
}

// A part that computes something else fails the field tests: the softmax's
// division made a product, or the last part reading W_uk for W_uv.
TEST(FactorProducts, AWrongPartFailsTheFieldTests) {
  const FusedCase c = MlaCase(4, 24, 8, 40);
  const FactoredRegion f = *FactorProducts(c.region);
  ASSERT_TRUE(ValueOrFail(VerifyFactoring(c.region, f, 3, 8)));
  FactoredRegion no_division = f;
  int divisions = 0;
  for (RegionOp& op : no_division.parts[1].region.ops) {
    if (op.kind != RegionOp::Kind::kBinary || op.op != OpKind::kDiv) continue;
    op.op = OpKind::kMul;
    ++divisions;
  }
  ASSERT_EQ(divisions, 1);
  EXPECT_FALSE(ValueOrFail(VerifyFactoring(c.region, no_division, 3, 9)));
  FactoredRegion wrong_weight = f;
  wrong_weight.parts[2].sources[1] = 1;  // W_uk, of W_uv's shape
  EXPECT_FALSE(ValueOrFail(VerifyFactoring(c.region, wrong_weight, 3, 10)));
}

TEST(FactorProducts, RegionsWithoutNestedProductsStayWhole) {
  EXPECT_FALSE(FactorProducts(AttentionCase(2, 64, 32, 256).region).has_value());
  EXPECT_FALSE(FactorProducts(RmsNormLinearCase(2, 256, 384).region).has_value());
  EXPECT_FALSE(FactorProducts(GatedMlpCase(8, 256, 256).region).has_value());
  EXPECT_FALSE(FactorProducts(QkNormAttentionCase(2, 64, 32, 256).region).has_value());
}

// Where the composed graph runs fastest, it is chosen: three kernels, the
// values between them no larger than q W_uk^T (K and V never formed), each
// part's kernel chosen by its own timing first. Every kernel compiles.
TEST(FactorProducts, TheComposedGraphIsChosenWhereItRunsFastest) {
  const FusedCase c = MlaCase(16, 256, 64, 4096);
  SearchOptions options;
  options.time_top = 4;
  int alone = 0;
  options.time_graph = [&](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    if (g.kernels.size() == 3) return 5.0;
    if (g.tensors.size() == 3) ++alone;  // a part's graph: its two inputs and output
    return 20.0;
  };
  const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 3u) << r.report.ToString();
  EXPECT_FALSE(r.candidate.has_value());
  EXPECT_EQ(r.parts.size(), 3u);
  EXPECT_GE(alone, 2) << "the first and last parts timed alone";
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("factored into kernels"));
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("part 0 alone"));
  EXPECT_EQ(r.report.measured_us, 5.0);
  ExpectValuesBetween(*r.graph, 2);
  // The attention between: the flash path with O's 256 columns shared out
  // among the warps (each takes S and P whole, in registers), and a split
  // combine of a warp per row (each block combines one head's).
  const std::string code = CompiledAttention(*r.graph);
  EXPECT_NE(code.find("columns of O, in registers (no barrier)"), std::string::npos) << code;
  EXPECT_NE(code.find("m = warp_reduce<true>(m);", code.find("if (split_last)")), std::string::npos) << code;
}

// Where two kernels run fastest, the last product is the attention's
// (FuseRowProduct): q W_uk^T is the only value between the kernels, and
// the attention's kernel multiplies each head's row of P C by the head's
// W_uv after its combine, each block's row of W_uv loaded before the blocks
// meet. Every kernel compiles.
TEST(FactorProducts, TheLastProductFusesIntoTheAttentionsKernel) {
  const FusedCase c = MlaCase(16, 256, 64, 4096);
  SearchOptions options;
  options.time_top = 4;
  options.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    return g.kernels.size() == 2 ? 4.0 : g.kernels.size() == 3 ? 5.0 : 20.0;
  };
  const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  ASSERT_EQ(r.graph->kernels.size(), 2u) << r.report.ToString();
  EXPECT_EQ(r.parts.size(), 3u);
  EXPECT_THAT(r.report.ToString(), ::testing::HasSubstr("(last product fused)"));
  ExpectValuesBetween(*r.graph, 1);  // q W_uk^T
  // The search cache keeps it as JSON: the row product round-trips.
  const ugraph::KernelGraph cached = ValueOrFail(ugraph::FromJson(ugraph::ToJson(*r.graph)));
  EXPECT_EQ(ugraph::ToJson(cached), ugraph::ToJson(*r.graph));
  EXPECT_EQ(cached.kernels[1].block.tile_ops.back().kind, ugraph::TileOp::Kind::kRowMatmul);
  const ugraph::Kernel& attention = r.graph->kernels[1];
  ASSERT_FALSE(attention.block.tile_ops.empty());
  EXPECT_EQ(attention.block.tile_ops.back().kind, ugraph::TileOp::Kind::kRowMatmul);
  EXPECT_EQ(attention.outputs, std::vector<int>{4});  // the region's output
  EXPECT_NE(std::find(attention.inputs.begin(), attention.inputs.end(), 3), attention.inputs.end());  // W_uv
  const std::string code = CompiledAttention(*r.graph);
  const size_t ahead = code.find("its loads under the blocks' meeting"), meet = code.find("split_gather(");
  EXPECT_NE(ahead, std::string::npos) << code;
  EXPECT_LT(ahead, meet) << code;
  EXPECT_NE(code.find("row_matmul f16", meet), std::string::npos) << code;
}

// The fused graph computes the region: over finite fields, every kernel
// interpreted as the generated code runs it (the split's combine, then each
// row times its matrix), and its kernels compile; reading W_uk for W_uv
// (the same shape) does not compute it.
TEST(FactorProducts, AFusedGraphComputesTheRegionOverFiniteFields) {
  // The last: more columns of W_uv (2312) than vectors a block's threads
  // take at once, so each thread takes its vectors down all of k.
  for (const FusedCase& c : {MlaCase(4, 24, 8, 40), MlaCase(3, 48, 17, 127), MlaCase(2, 16, 2312, 40)}) {
    SCOPED_TRACE(c.name);
    SearchOptions options;
    options.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
      return g.kernels.size() == 2 ? 1.0 : 2.0;
    };
    const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
    ASSERT_TRUE(r.graph.has_value() && r.graph->kernels.size() == 2u) << r.report.ToString();
    std::vector<int64_t> sizes;
    for (const Dim& d : c.region.class_size) sizes.push_back(d.value());
    const int output = static_cast<int>(c.region.inputs.size());
    const auto computes = [&](const ugraph::KernelGraph& graph, uint64_t seed) {
      std::mt19937_64 rng(seed);
      for (int t = 0; t < 3; ++t) {
        const absl::StatusOr<bool> same = FieldTest(
            c.region, sizes, rng,
            [&](const std::vector<FieldArray>& inputs, const FieldAlgebra& alg) -> absl::StatusOr<FieldArray> {
              std::vector<FieldArray> tensors(graph.tensors.size());
              for (size_t i = 0; i < inputs.size(); ++i) tensors[i] = inputs[i];
              if (absl::Status s = RunTiledGraph(graph, tensors, alg); !s.ok()) return s;
              return tensors[output];
            });
        if (!same.ok()) ADD_FAILURE() << same.status();
        if (!same.ok() || !*same) return false;
      }
      return true;
    };
    EXPECT_TRUE(computes(*r.graph, 11)) << ugraph::ToText(*r.graph);
    const std::string code = CompiledAttention(*r.graph);  // and its kernels compile
    EXPECT_NE(code.find("row_matmul"), std::string::npos) << code;

    ugraph::KernelGraph wrong = *r.graph;
    ugraph::Kernel& attention = wrong.kernels[1];
    ugraph::InputIterator& w = attention.block.inputs.back();
    ASSERT_EQ(w.view.tensor, 3);
    w.view.tensor = 1;  // W_uk
    std::replace(attention.inputs.begin(), attention.inputs.end(), 3, 1);
    EXPECT_FALSE(computes(wrong, 12));
  }
}

// A searched region of several kernels lowers into the trace's graph: its
// kernels in order, the values between them buffers of their own.
TEST(FactorProducts, ASearchedRegionOfSeveralKernelsLowers) {
  const FusedCase c = MlaCase(4, 24, 8, 40);
  SearchOptions options;
  options.time_graph = [](const ugraph::KernelGraph& g) -> absl::StatusOr<double> {
    return g.kernels.size() == 3 ? 1.0 : 2.0;
  };
  const SearchResult r = ValueOrFail(Superoptimize(c.region, options));
  ASSERT_TRUE(r.graph.has_value() && r.graph->kernels.size() == 3u) << r.report.ToString();
  const Trace trace = ValueOrFail(Trace::Collect({c.output}));
  lowering::LowerOptions lower;
  lower.fused.push_back({c.region.output, c.region.inputs, c.region.nodes, *r.graph});
  const lowering::LoweredTrace lowered = ValueOrFail(lowering::LowerTrace(trace, lower));
  KILN_EXPECT_OK(ugraph::Validate(lowered.graph));
  // The inputs' random fills first (the case's inputs are lazy), then the region's three.
  std::vector<const ugraph::Kernel*> searched;
  for (const ugraph::Kernel& k : lowered.graph.kernels) {
    if (k.block.kind == ugraph::BlockKind::kTiled) searched.push_back(&k);
  }
  ASSERT_EQ(searched.size(), 3u) << ugraph::ToText(lowered.graph);
  EXPECT_EQ(searched.back(), &lowered.graph.kernels.back());
  int between = 0;
  for (size_t t = 0; t < lowered.graph.tensors.size(); ++t) {
    if (lowered.tensor_nodes[t] != nullptr) continue;
    ++between;
    EXPECT_EQ(lowered.graph.tensors[t].role, ugraph::TensorRole::kIntermediate);
  }
  EXPECT_EQ(between, 2);
  // Each kernel reads what the one before it wrote.
  for (int k : {0, 1}) {
    ASSERT_EQ(searched[k]->outputs.size(), 1u);
    const std::vector<int>& next = searched[k + 1]->inputs;
    EXPECT_NE(std::find(next.begin(), next.end(), searched[k]->outputs[0]), next.end());
  }
}

}  // namespace
}  // namespace kiln::search
