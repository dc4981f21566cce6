// The superoptimizer's regions in a model's trace, on the CPU (no GPU
// needed): a decode or prefill step of the Llama block, whose KV length is
// a symbol and whose keys and values are slices of the cache, has an
// attention region per layer (causal in prefill) that the search fuses
// into one kernel; the lowering
// reads the cache through the slice, and every kernel of the step compiles
// for Hopper.
#include "optimizer/search_trace.h"

#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "models/llama.h"
#include "models/llama2c_loader.h"
#include "ops/ops.h"
#include "ops/quant.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/partition.h"
#include "optimizer/ugraph_validate.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::ValueOrFail;

bool HasSoftmax(const search::Region& region) {
  for (const search::RegionOp& op : region.ops) {
    if (op.kind == search::RegionOp::Kind::kStableExp) return true;
  }
  return false;
}

// The step of `tokens` tokens at a symbolic position (as `kiln generate`
// records it): each layer's attention is one searched kernel over the
// cache, causally masked where there are several queries.
void ExpectAttentionSearchedOverTheCache(int64_t tokens) {
  models::LoadedModel loaded = ValueOrFail(models::LoadLlama2c(std::string(KILN_SHARED_DIR) + "/models/stories260K.bin"));
  absl::StatusOr<models::LlamaModel> model = models::LlamaModel::Create(loaded.config, loaded.weights);
  ASSERT_TRUE(model.ok()) << model.status();
  models::KvCache cache = ValueOrFail(model->NewCache());
  const Symbol pos = model->PositionSymbol(tokens);
  std::vector<int32_t> ids(tokens);
  for (int64_t t = 0; t < tokens; ++t) ids[t] = static_cast<int32_t>(7 + 3 * t);
  std::vector<Tensor> outputs = {model->Forward(Tensor::FromHost<int32_t>(ids, {tokens}), Dim(pos), cache)};
  outputs.insert(outputs.end(), cache.k.begin(), cache.k.end());
  outputs.insert(outputs.end(), cache.v.begin(), cache.v.end());
  const Trace trace = ValueOrFail(Trace::Collect(outputs));

  testing::ScopedTempDir cache_dir("fuse_trace_regions");
  int searched = 0;
  const std::vector<lowering::FusedRegion> fused =
      FuseTraceRegions(trace, [&](const search::Region& region) -> std::optional<ugraph::KernelGraph> {
        if (!HasSoftmax(region)) return std::nullopt;  // the test's subject: attention alone
        ++searched;
        search::SearchOptions options;
        options.cache_dir = cache_dir.path();  // the layers' regions are one structure
        options.budget_seconds = 20;
        search::SearchResult result = ValueOrFail(search::Superoptimize(region, options));
        if (!result.graph) return std::nullopt;
        return *std::move(result.graph);
      });
  ASSERT_EQ(fused.size(), loaded.config.n_layers) << searched << " regions searched";
  for (const lowering::FusedRegion& f : fused) {
    ASSERT_EQ(f.graph.kernels.size(), 1u);
    EXPECT_EQ(f.graph.kernels[0].block.kind, ugraph::BlockKind::kTiled);
    int masked = 0;
    for (const ugraph::TileOp& op : f.graph.kernels[0].block.tile_ops) masked += op.mask.on();
    EXPECT_EQ(masked, tokens > 1 ? 1 : 0) << ugraph::ToText(f.graph);
    // The keys and values are read where the cache holds them: views (a
    // slice of KV length pos + 1) of the cache's updated buffer.
    int cache_views = 0;
    for (const Node* in : f.inputs) {
      cache_views += IsView(in->op) && !in->shape.is_concrete() && !in->is_realized();
    }
    EXPECT_EQ(cache_views, 2);
  }

  lowering::LowerOptions options;
  options.fused = fused;
  const lowering::LoweredTrace lowered = ValueOrFail(lowering::LowerTrace(trace, options));
  KILN_EXPECT_OK(ugraph::Validate(lowered.graph));
  int searched_kernels = 0;
  for (const ugraph::Kernel& k : lowered.graph.kernels) {
    if (k.block.kind != ugraph::BlockKind::kTiled) continue;
    ++searched_kernels;
    // The cache's buffer, sliced to the symbolic length by the view.
    int sliced = 0;
    for (const ugraph::InputIterator& it : k.block.inputs) {
      sliced += !it.view.steps.empty() && it.view.steps[0].kind == ugraph::ViewStep::Kind::kSlice &&
                !it.view.steps[0].shape.is_concrete() && it.view.source_shape.is_concrete();
    }
    EXPECT_GE(sliced, 2);
  }
  EXPECT_EQ(searched_kernels, loaded.config.n_layers);

  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  jit::CompileOptions compile;
  compile.arch = "sm_90";
  for (size_t k = 0; k < lowered.graph.kernels.size(); ++k) {
    const codegen::KernelSource source = ValueOrFail(codegen::GenerateKernel(lowered.graph, static_cast<int>(k)));
    absl::StatusOr<std::string> cubin = jit::CompileToCubin(**nvrtc, codegen::AssembleSource(source.source), compile);
    EXPECT_TRUE(cubin.ok()) << cubin.status() << "\n" << source.source;
  }
}

TEST(FuseTraceRegions, LlamaDecodeAttentionIsOneSearchedKernelOverTheCache) { ExpectAttentionSearchedOverTheCache(1); }

TEST(FuseTraceRegions, LlamaPrefillAttentionIsOneCausalSearchedKernelOverTheCache) {
  ExpectAttentionSearchedOverTheCache(5);
}

// A value the partition recomputes where it is read (here keys made from an
// iota) has no buffer for a searched kernel to read: a region whose input
// is a view of one is not searched, and the trace still lowers.
TEST(FuseTraceRegions, ValuesRecomputedWhereReadAreNoRegionInputs) {
  const Tensor q = random_normal({2, 4, 16}, 1);
  const Tensor v = random_normal({2, 8, 16}, 2);
  KILN_ASSERT_OK(RealizeAll({q, v}));
  const Tensor k = reshape(iota(256, 0, 1, DType::kF32, Device::Cpu()) * 0.01, {2, 16, 8});
  const Tensor out = matmul(softmax(matmul(q, k), -1), v);
  const Trace trace = ValueOrFail(Trace::Collect({out}));
  int searched = 0;
  const std::vector<lowering::FusedRegion> fused =
      FuseTraceRegions(trace, [&](const search::Region& region) -> std::optional<ugraph::KernelGraph> {
        for (const Node* in : region.inputs) EXPECT_NE(in, k.node().get());
        ++searched;
        return std::nullopt;
      });
  EXPECT_TRUE(fused.empty());
  lowering::LowerOptions options;
  options.fused = fused;
  KILN_EXPECT_OK(lowering::LowerTrace(trace, options).status());
}

// A packed weight is no region input: the search has no dequantize
// algebra, so a region reading one would store it unpacked; the default
// lowering decodes it inside the product instead.
TEST(FuseTraceRegions, PackedWeightsAreNoRegionInputs) {
  const Tensor x = random_normal({1, 64}, 1), g = random_normal({64}, 2);
  KILN_ASSERT_OK(RealizeAll({x, g}));
  std::vector<float> values(96 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37 * static_cast<double>(i));
  const Tensor blocks = ValueOrFail(QuantizeOnHost(values, {96, 64}, QuantFormat::kQ8_0));
  const Tensor w = dequantize(blocks, QuantFormat::kQ8_0);
  const Tensor out = matmul(rms_norm(x, g, 1e-5), transpose(w, 0, 1));
  const Trace trace = ValueOrFail(Trace::Collect({out}));
  const std::vector<lowering::FusedRegion> fused =
      FuseTraceRegions(trace, [&](const search::Region& region) -> std::optional<ugraph::KernelGraph> {
        for (const Node* in : region.inputs) EXPECT_NE(lowering::ThroughViews(in), w.node().get());
        return std::nullopt;
      });
  EXPECT_TRUE(fused.empty());
}

}  // namespace
}  // namespace kiln
