#include "models/llama.h"

#include "models/llama2c_loader.h"
#include "ops/ops.h"
#include "tests/models/llama_reference.h"
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

TEST(LlamaModel, PrefillAndDecodeMatchThePlainLoopReference) {
  absl::StatusOr<LoadedModel> loaded = LoadLlama2c(kStories);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  kiln::testing::ReferenceLlama reference(*loaded);
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(loaded->config, loaded->weights);
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
