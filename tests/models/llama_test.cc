#include "models/llama.h"

#include "models/llama2c_loader.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "tests/models/llama_reference.h"
#include "tests/models/tiny_llama_config.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::testing::HasSubstr;
using kiln::testing::AllClose;

const std::string kStories = std::string(KILN_SHARED_DIR) + "/models/stories260K.bin";

TEST(Llama2cLoader, ReadsStories260KConfig) {
  absl::StatusOr<LoadedModel> m = LoadLlama2c(kStories);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.dim, 64);
  EXPECT_EQ(m->config.hidden_dim, 172);
  EXPECT_EQ(m->config.n_layers, 5);
  EXPECT_EQ(m->config.n_heads, 8);
  EXPECT_EQ(m->config.n_kv_heads, 4);
  EXPECT_EQ(m->config.vocab_size, 512);
  EXPECT_EQ(m->config.max_seq_len, 512);
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->weights.classifier.node(), m->weights.embedding.node());
  // Weights are used in place, never copied or written.
  EXPECT_FALSE(m->weights.layers[0].wq.node()->data.storage->writable());
}

class LlamaModelMerged : public ::testing::TestWithParam<bool> {};

// With merge_qkv (the GPU's default) and without it.
TEST_P(LlamaModelMerged, PrefillAndDecodeMatchThePlainLoopReference) {
  absl::StatusOr<LoadedModel> loaded = LoadLlama2c(kStories);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  kiln::testing::ReferenceLlama reference(*loaded);
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(loaded->config, loaded->weights, GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<KvCache> cache = model->NewCache();
  ASSERT_TRUE(cache.ok()) << cache.status();

  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::vector<std::vector<float>> expected;
  for (int32_t t : prompt) expected.push_back(reference.Step(t));

  // Prefill the prompt in one step, all positions.
  const Tensor tokens = Tensor::FromHost<int32_t>(prompt, {5});
  const Symbol pos = model->PositionSymbol(5);
  Tensor logits = model->Forward(tokens, Dim(pos), *cache, /*all_positions=*/true);
  std::vector<Tensor> prefill = {logits};
  prefill.insert(prefill.end(), cache->k.begin(), cache->k.end());
  prefill.insert(prefill.end(), cache->v.begin(), cache->v.end());
  KILN_EXPECT_OK(RealizeAll(prefill, {{pos, 0}}));
  absl::StatusOr<std::vector<float>> values = logits.to_host<float>();
  ASSERT_TRUE(values.ok()) << values.status();
  for (int p = 0; p < 5; ++p) {
    std::vector<float> row(values->begin() + p * 512, values->begin() + (p + 1) * 512);
    EXPECT_TRUE(AllClose(row, expected[p], 1e-4, 1e-4)) << "position " << p;
  }
  // Then decode one token at a time through the symbolic position.
  const Symbol step_pos = model->PositionSymbol(1);
  for (int p = 5; p < 12; ++p) {
    const int32_t token = (p * 37) % 512;
    const std::vector<float> want = reference.Step(token);
    Tensor step = model->Forward(Tensor::FromHost<int32_t>({token}, {1}), Dim(step_pos), *cache);
    std::vector<Tensor> outputs = {step};
    for (const Tensor& t : cache->k) outputs.push_back(t);
    for (const Tensor& t : cache->v) outputs.push_back(t);
    KILN_EXPECT_OK(RealizeAll(outputs, {{step_pos, p}}));
    EXPECT_TRUE(AllClose(kiln::testing::ReadF32(step), want, 1e-4, 1e-4)) << "position " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(QkvMerged, LlamaModelMerged, ::testing::Bool());

// Biases, QK-norm and LoRA adapters apply to the merged product's slices as
// to the three products: the same logits, and weights() gives the same wq,
// wk and wv back (as views of the merged matrix).
TEST(LlamaModel, MergedQkvGivesTheSameLogitsWithBiasesNormsAndAdapters) {
  LlamaConfig c = kiln::testing::TinyLlamaConfig(77);
  c.qkv_bias = true;
  c.qk_norm = true;
  c.lora_rank = 4;
  absl::StatusOr<LlamaWeights> weights = RandomLlamaWeights(c, 3, Device::Cpu());
  ASSERT_TRUE(weights.ok()) << weights.status();
  uint64_t seed = 100;
  const auto random = [&](const Shape& shape) {
    Tensor t = mul(random_normal(shape, ++seed), 0.1);
    EXPECT_TRUE(t.realize().ok());
    return t;
  };
  for (LlamaLayerWeights& l : weights->layers) {
    l.bq = random({c.q_dim()});
    l.bk = random({c.kv_dim()});
    l.bv = random({c.kv_dim()});
    const std::vector<std::tuple<LoraAdapter*, int64_t, int64_t>> adapters = {
        {&l.lora_q, c.dim, c.q_dim()},   {&l.lora_k, c.dim, c.kv_dim()},      {&l.lora_v, c.dim, c.kv_dim()},
        {&l.lora_o, c.q_dim(), c.dim},   {&l.lora_gate, c.dim, c.hidden_dim}, {&l.lora_up, c.dim, c.hidden_dim},
        {&l.lora_down, c.hidden_dim, c.dim}};
    for (const auto& [a, in, out] : adapters) {
      a->a = random({c.lora_rank, in});
      a->b = random({out, c.lora_rank});
    }
  }
  std::vector<std::vector<float>> logits;
  for (const bool merge : {false, true}) {
    absl::StatusOr<LlamaModel> model = LlamaModel::Create(c, *weights, merge);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(kiln::testing::ReadF32(model->weights().layers[1].wk), kiln::testing::ReadF32(weights->layers[1].wk));
    absl::StatusOr<KvCache> cache = model->NewCache();
    ASSERT_TRUE(cache.ok()) << cache.status();
    const Tensor out = model->Forward(Tensor::FromHost<int32_t>({5, 9, 70}, {3}), Dim(0), *cache, true);
    logits.push_back(kiln::testing::ReadF32(out));
  }
  EXPECT_TRUE(AllClose(logits[1], logits[0], 1e-6, 1e-6));
}

TEST(LlamaModel, RejectsWeightsThatDisagreeWithTheConfig) {
  absl::StatusOr<LoadedModel> loaded = LoadLlama2c(kStories);
  ASSERT_TRUE(loaded.ok());
  LlamaConfig config = loaded->config;
  config.hidden_dim = 173;
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(config, loaded->weights);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("w_gate"));
  LlamaWeights weights = loaded->weights;
  weights.layers.pop_back();
  EXPECT_EQ(LlamaModel::Create(loaded->config, weights).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::models
