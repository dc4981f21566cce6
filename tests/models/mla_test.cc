// The MLA block: bad configs and weights get clear errors; decoding one
// position at a time through the latent cache matches prefill and a
// plain-loop reference; and the decode step's attention, as the block
// records it, is what the search fuses into one kernel that never forms
// K or V.
#include "models/mla.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "optimizer/search/region.h"
#include "optimizer/search/superoptimize.h"
#include "optimizer/search/verify.h"
#include "optimizer/search_trace.h"
#include "tests/models/random_mla_weights.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using testing::ReadF32;
using testing::ValueOrFail;

MlaConfig SmallConfig() {
  return {.dim = 24, .n_heads = 3, .head_dim = 8, .latent_dim = 16, .max_seq_len = 12};
}

MlaWeights RandomWeights(const MlaConfig& c, uint64_t seed) { return testing::RandomMlaWeights(c, seed, 0.3); }

TEST(Mla, BadConfigsAndWeightsAreRejected) {
  MlaConfig c = SmallConfig();
  MlaWeights w = RandomWeights(c, 1);
  MlaWeights wrong = w;
  wrong.w_uk = random_normal({c.n_heads, c.head_dim, c.latent_dim}, 9);
  EXPECT_THAT(MlaAttention::Create(c, wrong).status().message(),
              ::testing::AllOf(::testing::HasSubstr("w_uk"), ::testing::HasSubstr("[3,16,8]")));
  MlaWeights missing = w;
  missing.wo = Tensor();
  EXPECT_THAT(MlaAttention::Create(c, missing).status().message(), ::testing::HasSubstr("wo is missing"));
  MlaConfig bad = c;
  bad.latent_dim = 0;
  EXPECT_THAT(MlaAttention::Create(bad, w).status().message(), ::testing::HasSubstr("latent_dim must be positive"));
  absl::StatusOr<MlaAttention> mla = MlaAttention::Create(c, w);
  ASSERT_TRUE(mla.ok()) << mla.status();
  Tensor cache = ValueOrFail(mla->NewCache());
  EXPECT_THAT(mla->Forward(random_normal({2, 5}, 3), 0, cache).status().message(), ::testing::HasSubstr("[T, 24]"));
}

// out[t] for x at positions 0..T-1, from the definition: latents
// rms_norm(x W_dkv) * kv_norm, per head K = C W_uk, V = C W_uv, softmax over
// keys 0..t of q K^T / sqrt(head_dim), then W_o.
std::vector<double> Reference(const MlaConfig& c, const MlaWeights& w, const std::vector<float>& x, int64_t t_count) {
  const std::vector<float> wq = ReadF32(w.wq), wd = ReadF32(w.w_dkv), g = ReadF32(w.kv_norm);
  const std::vector<float> uk = ReadF32(w.w_uk), uv = ReadF32(w.w_uv), wo = ReadF32(w.wo);
  const int64_t d = c.dim, h = c.n_heads, hd = c.head_dim, l = c.latent_dim;
  std::vector<double> lat(t_count * l), out(t_count * d, 0);
  for (int64_t t = 0; t < t_count; ++t) {
    double ss = 0;
    for (int64_t j = 0; j < l; ++j) {
      double s = 0;
      for (int64_t i = 0; i < d; ++i) s += x[t * d + i] * wd[i * l + j];
      lat[t * l + j] = s;
      ss += s * s;
    }
    const double r = 1 / std::sqrt(ss / l + c.norm_eps);
    for (int64_t j = 0; j < l; ++j) lat[t * l + j] *= r * g[j];
  }
  for (int64_t t = 0; t < t_count; ++t) {
    std::vector<double> o(h * hd, 0);
    for (int64_t head = 0; head < h; ++head) {
      std::vector<double> q(hd), score(t + 1);
      for (int64_t e = 0; e < hd; ++e) {
        for (int64_t i = 0; i < d; ++i) q[e] += x[t * d + i] * wq[i * h * hd + head * hd + e];
      }
      double top = -1e300;
      for (int64_t k = 0; k <= t; ++k) {
        double s = 0;
        for (int64_t e = 0; e < hd; ++e) {
          double key = 0;
          for (int64_t j = 0; j < l; ++j) key += lat[k * l + j] * uk[(head * l + j) * hd + e];
          s += q[e] * key;
        }
        score[k] = s / std::sqrt(static_cast<double>(hd));
        top = std::max(top, score[k]);
      }
      double sum = 0;
      for (double& s : score) sum += (s = std::exp(s - top));
      for (int64_t k = 0; k <= t; ++k) {
        for (int64_t e = 0; e < hd; ++e) {
          double value = 0;
          for (int64_t j = 0; j < l; ++j) value += lat[k * l + j] * uv[(head * l + j) * hd + e];
          o[head * hd + e] += score[k] / sum * value;
        }
      }
    }
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < h * hd; ++j) out[t * d + i] += o[j] * wo[j * d + i];
    }
  }
  return out;
}

TEST(Mla, DecodeMatchesPrefillAndTheDefinition) {
  const MlaConfig c = SmallConfig();
  const MlaWeights w = RandomWeights(c, 2);
  absl::StatusOr<MlaAttention> mla = MlaAttention::Create(c, w);
  ASSERT_TRUE(mla.ok()) << mla.status();
  const int64_t steps = 7;
  Tensor x = random_normal({steps, c.dim}, 5);
  ASSERT_TRUE(x.realize().ok());
  const std::vector<double> want = Reference(c, w, ReadF32(x), steps);
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.1) << "a reference worth comparing against";
  Tensor prefill_cache = ValueOrFail(mla->NewCache());
  const std::vector<float> prefill = ReadF32(mla->Forward(x, 0, prefill_cache));
  Tensor cache = ValueOrFail(mla->NewCache());
  for (int64_t t = 0; t < steps; ++t) {
    Tensor out = mla->Forward(slice(x, 0, t, t + 1), t, cache);
    ASSERT_TRUE(out.realize().ok()) << out.status();
    ASSERT_TRUE(cache.realize().ok());
    const std::vector<float> got = ReadF32(out);
    for (int64_t i = 0; i < c.dim; ++i) {
      EXPECT_NEAR(got[i], want[t * c.dim + i], 1e-4 * (1 + std::abs(want[t * c.dim + i]))) << "step " << t;
      EXPECT_NEAR(prefill[t * c.dim + i], want[t * c.dim + i], 1e-4 * (1 + std::abs(want[t * c.dim + i])));
    }
  }
}

// The decode step's attention as the block records it (the query and the
// cache's latents as inputs, the weights realized): the search finds one
// kernel with nothing but the output written, and it verifies.
TEST(Mla, TheDecodeAttentionIsFusedBySearch) {
  const MlaConfig c = SmallConfig();
  absl::StatusOr<MlaAttention> mla = MlaAttention::Create(c, RandomWeights(c, 3));
  ASSERT_TRUE(mla.ok()) << mla.status();
  const Tensor q = random_normal({c.n_heads, 1, c.head_dim}, 7);
  const Tensor latents = random_normal({9, c.latent_dim}, 8);
  const Tensor out = mla->DecodeAttention(q, latents);
  search::Region region = ValueOrFail(search::ExtractRegion(
      out.node().get(), [&](const Node* n) { return n == q.node().get() || n == latents.node().get(); }));
  EXPECT_EQ(region.inputs.size(), 4u) << region.ToString();
  search::SearchOptions options;
  options.budget_seconds = 20;
  search::SearchResult r = ValueOrFail(search::Superoptimize(region, options));
  ASSERT_TRUE(r.graph.has_value()) << r.report.ToString();
  EXPECT_EQ(r.graph->kernels.size(), 1u) << r.report.chosen_text;
  for (const ugraph::DTensor& t : r.graph->tensors) EXPECT_NE(t.role, ugraph::TensorRole::kIntermediate);
  EXPECT_TRUE(ValueOrFail(search::VerifyOverFiniteFields(region, *r.candidate, 3, 51)));
  EXPECT_LE(r.report.float_error, 1e-3);
}

// The block's own decode step, as the runtime sees it (the KV length a
// symbol, the latents a slice of the cache's updated buffer): its attention
// is one searched kernel that reads the latents through the slice and never
// forms K or V, and the step lowers with it.
TEST(Mla, TheDecodeStepRunsTheSearchedKernelOverTheCache) {
  const MlaConfig c = SmallConfig();
  absl::StatusOr<MlaAttention> mla = MlaAttention::Create(c, RandomWeights(c, 3));
  ASSERT_TRUE(mla.ok()) << mla.status();
  Tensor cache = ValueOrFail(mla->NewCache());
  const Symbol pos("pos", c.max_seq_len - 1);
  const Tensor y = mla->Forward(random_normal({1, c.dim}, 5), Dim(pos), cache);
  const Trace trace = ValueOrFail(Trace::Collect({y, cache}));
  const std::vector<lowering::FusedRegion> fused =
      FuseTraceRegions(trace, [&](const search::Region& region) -> std::optional<ugraph::KernelGraph> {
        bool softmax = false;  // the test's subject: the attention region alone
        for (const search::RegionOp& op : region.ops) softmax |= op.kind == search::RegionOp::Kind::kStableExp;
        if (!softmax) return std::nullopt;
        search::SearchOptions options;
        options.budget_seconds = 20;
        search::SearchResult r = ValueOrFail(search::Superoptimize(region, options));
        if (!r.graph) return std::nullopt;
        return *std::move(r.graph);
      });
  const lowering::FusedRegion* attention = nullptr;
  for (const lowering::FusedRegion& f : fused) {
    for (const Node* n : f.interior) attention = n->op == OpKind::kExp ? &f : attention;
  }
  ASSERT_NE(attention, nullptr);
  ASSERT_EQ(attention->graph.kernels.size(), 1u);
  // Its inputs: the query, the latents (a slice of length pos + 1), W_uk and W_uv.
  int latents = 0;
  for (const Node* in : attention->inputs) latents += in->op == OpKind::kSlice && !in->shape[0].is_concrete();
  EXPECT_EQ(latents, 1);
  EXPECT_EQ(attention->inputs.size(), 4u);

  lowering::LowerOptions options;
  options.fused = fused;
  const lowering::LoweredTrace lowered = ValueOrFail(lowering::LowerTrace(trace, options));
  int tiled = 0;
  for (const ugraph::Kernel& k : lowered.graph.kernels) tiled += k.block.kind == ugraph::BlockKind::kTiled;
  EXPECT_EQ(tiled, static_cast<int>(fused.size()));
}

}  // namespace
}  // namespace kiln::models
