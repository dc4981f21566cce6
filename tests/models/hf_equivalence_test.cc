// stories260K written as a Hugging Face checkpoint (q/k rows permuted the way
// HF's conversion script does, rotate-half RoPE) must give the logits of the
// llama2.c checkpoint (interleaved RoPE) at every position.
#include <filesystem>
#include <fstream>

#include "models/hf_loader.h"
#include "models/llama.h"
#include "models/llama2c_loader.h"
#include "models/safetensors.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

// HF's permute(): within each head, rows (2i, 2i+1) move to (i, i + d/2).
Tensor PermuteForRotateHalf(const Tensor& w, int heads) {
  const int64_t out = w.shape()[0].value(), in = w.shape()[1].value();
  const Tensor split = reshape(w, {heads, out / heads / 2, 2, in});
  return reshape(contiguous(transpose(split, 1, 2)), {out, in});
}

std::vector<float> AllLogits(const LoadedModel& loaded, const std::vector<int32_t>& tokens) {
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(loaded.config, loaded.weights);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<KvCache> cache = model->NewCache();
  EXPECT_TRUE(cache.ok()) << cache.status();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const Tensor logits =
      model->Forward(Tensor::FromHost<int32_t>(tokens, {n}), 0, *cache, /*all_positions=*/true);
  return kiln::testing::ReadF32(logits);
}

TEST(HfEquivalence, Stories260KLogitsMatchTheLlama2cCheckpoint) {
  absl::StatusOr<LoadedModel> original =
      LoadLlama2c(std::string(KILN_SHARED_DIR) + "/models/stories260K.bin");
  ASSERT_TRUE(original.ok()) << original.status();
  const LlamaConfig& c = original->config;
  const LlamaWeights& w = original->weights;

  const std::string dir = ::testing::TempDir() + "/kiln_hf_stories260K";
  std::filesystem::create_directories(dir);
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"model.embed_tokens.weight", w.embedding}, {"model.norm.weight", w.final_norm}};
  for (int i = 0; i < c.n_layers; ++i) {
    const LlamaLayerWeights& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    tensors.push_back({p + "input_layernorm.weight", l.attention_norm});
    tensors.push_back({p + "self_attn.q_proj.weight", PermuteForRotateHalf(l.wq, c.n_heads)});
    tensors.push_back({p + "self_attn.k_proj.weight", PermuteForRotateHalf(l.wk, c.n_kv_heads)});
    tensors.push_back({p + "self_attn.v_proj.weight", l.wv});
    tensors.push_back({p + "self_attn.o_proj.weight", l.wo});
    tensors.push_back({p + "post_attention_layernorm.weight", l.ffn_norm});
    tensors.push_back({p + "mlp.gate_proj.weight", l.w_gate});
    tensors.push_back({p + "mlp.up_proj.weight", l.w_up});
    tensors.push_back({p + "mlp.down_proj.weight", l.w_down});
  }
  KILN_EXPECT_OK(WriteSafetensors(dir + "/model.safetensors", tensors));
  std::ofstream(dir + "/config.json")
      << "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": " << c.dim
      << ", \"intermediate_size\": " << c.hidden_dim
      << ", \"num_hidden_layers\": " << c.n_layers
      << ", \"num_attention_heads\": " << c.n_heads
      << ", \"num_key_value_heads\": " << c.n_kv_heads << ", \"vocab_size\": " << c.vocab_size
      << ", \"max_position_embeddings\": " << c.max_seq_len
      << ", \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"tie_word_embeddings\": true, "
         "\"hidden_act\": \"silu\", \"torch_dtype\": \"float32\"}";

  absl::StatusOr<LoadedModel> hf = LoadHuggingFace(dir);
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->config.rope_style, RopeStyle::kRotateHalf);

  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 11, 290, 394, 261, 432, 375, 29};
  const std::vector<float> expected = AllLogits(*original, tokens);
  const std::vector<float> actual = AllLogits(*hf, tokens);
  ASSERT_EQ(actual.size(), tokens.size() * 512);
  EXPECT_TRUE(kiln::testing::AllClose(actual, expected, 1e-5, 1e-5));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::models
