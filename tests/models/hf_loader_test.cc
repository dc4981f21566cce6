#include "models/hf_loader.h"

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/llama.h"
#include "models/safetensors.h"
#include "nlohmann/json.hpp"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::kiln::testing::ReadF32;
using ::kiln::testing::WriteFile;
using nlohmann::json;
using ::testing::HasSubstr;
using Named = std::vector<std::pair<std::string, Tensor>>;

// dim 16, 4 heads of 8, 2 KV heads, MLP 32, vocab 40, 2 layers.
struct Tiny {
  int dim = 16, heads = 4, kv_heads = 2, hidden = 32, vocab = 40, layers = 2;
  bool tied = false;
  bool qk_norm = false;
  DType dtype = DType::kF32;

  json Config() const {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"hidden_size", dim},
            {"intermediate_size", hidden},
            {"num_hidden_layers", layers},
            {"num_attention_heads", heads},
            {"num_key_value_heads", kv_heads},
            {"vocab_size", vocab},
            {"max_position_embeddings", 64},
            {"rope_theta", 500000.0},
            {"rms_norm_eps", 1e-5},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", tied},
            {"rope_scaling", nullptr},
            {"torch_dtype", "float32"}};
  }

  Named Weights(uint32_t seed = 7) const {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    Named out;
    const auto add = [&](const std::string& name, std::vector<int64_t> sizes) {
      std::vector<float> values(static_cast<size_t>(NumElements(sizes)));
      for (float& v : values) v = normal(rng);
      Tensor t = Tensor::FromHost<float>(values, sizes);
      out.emplace_back(name, dtype == DType::kF32 ? t : cast(t, dtype));
    };
    const int64_t d = dim, h = hidden, kv = dim / heads * kv_heads, hd = dim / heads;
    add("model.embed_tokens.weight", {vocab, d});
    for (int i = 0; i < layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      add(p + "input_layernorm.weight", {d});
      add(p + "self_attn.q_proj.weight", {d, d});
      add(p + "self_attn.k_proj.weight", {kv, d});
      add(p + "self_attn.v_proj.weight", {kv, d});
      add(p + "self_attn.o_proj.weight", {d, d});
      add(p + "post_attention_layernorm.weight", {d});
      add(p + "mlp.gate_proj.weight", {h, d});
      add(p + "mlp.up_proj.weight", {h, d});
      add(p + "mlp.down_proj.weight", {d, h});
      if (qk_norm) {
        add(p + "self_attn.q_norm.weight", {hd});
        add(p + "self_attn.k_norm.weight", {hd});
      }
    }
    add("model.norm.weight", {d});
    if (!tied) add("lm_head.weight", {vocab, d});
    return out;
  }
};

// A fresh directory under the test temp dir.
std::string TestDir(const std::string& name) {
  return ::kiln::testing::FreshTempDir("kiln_hf_" + name);
}

// config.json and model.safetensors in a fresh directory.
std::string WriteModel(const std::string& name, const json& config, const Named& weights) {
  const std::string dir = TestDir(name);
  WriteFile(dir + "/config.json", config.dump(2));
  const absl::Status s = WriteSafetensors(dir + "/model.safetensors", weights);
  EXPECT_TRUE(s.ok()) << s;
  return dir;
}

const Tensor& Find(const Named& weights, const std::string& name) {
  for (const auto& [n, t] : weights) {
    if (n == name) return t;
  }
  static const Tensor* missing = new Tensor();
  ADD_FAILURE() << "no weight " << name;
  return *missing;
}

Named Without(Named weights, const std::string& name) {
  std::erase_if(weights, [&](const auto& p) { return p.first == name; });
  return weights;
}

Named Replacing(Named weights, const std::string& name, Tensor t) {
  for (auto& [n, w] : weights) {
    if (n == name) w = std::move(t);
  }
  return weights;
}

// Loading `dir` fails with `code`, naming `file` and `problem`.
void ExpectLoadFails(const std::string& dir, absl::StatusCode code, const std::string& file,
                     const std::string& problem) {
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), code) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr(file));
  EXPECT_THAT(m.status().message(), HasSubstr(problem));
}

TEST(HfLoader, LoadsTinyModel) {
  const Tiny tiny;
  const Named weights = tiny.Weights();
  const std::string dir = WriteModel("tiny", tiny.Config(), weights);
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  const LlamaConfig& c = m->config;
  EXPECT_EQ(c.dim, 16);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.hidden_dim, 32);
  EXPECT_EQ(c.vocab_size, 40);
  EXPECT_EQ(c.max_seq_len, 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_EQ(c.rope_style, RopeStyle::kRotateHalf);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.dtype, DType::kF32);

  const LlamaWeights& w = m->weights;
  ASSERT_EQ(w.layers.size(), 2u);
  const std::vector<std::pair<const Tensor*, std::string>> checks = {
      {&w.embedding, "model.embed_tokens.weight"},
      {&w.layers[0].attention_norm, "model.layers.0.input_layernorm.weight"},
      {&w.layers[1].wk, "model.layers.1.self_attn.k_proj.weight"},
      {&w.layers[1].wo, "model.layers.1.self_attn.o_proj.weight"},
      {&w.layers[0].w_gate, "model.layers.0.mlp.gate_proj.weight"},
      {&w.layers[0].w_up, "model.layers.0.mlp.up_proj.weight"},
      {&w.layers[1].w_down, "model.layers.1.mlp.down_proj.weight"},
      {&w.layers[1].ffn_norm, "model.layers.1.post_attention_layernorm.weight"},
      {&w.final_norm, "model.norm.weight"},
      {&w.classifier, "lm_head.weight"},
  };
  for (const auto& [loaded, name] : checks) {
    EXPECT_EQ(loaded->shape(), Find(weights, name).shape()) << name;
    EXPECT_EQ(ReadF32(*loaded), ReadF32(Find(weights, name))) << name;
  }
  // Used in place from the mapped file.
  EXPECT_FALSE(w.layers[0].wq.node()->data.storage->writable());
  EXPECT_TRUE(LlamaModel::Create(c, w).ok());
}

TEST(HfLoader, LoadedModelRunsForward) {
  const Tiny tiny;
  const std::string dir = WriteModel("forward", tiny.Config(), tiny.Weights());
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(m->config, m->weights);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<KvCache> cache = model->NewCache();
  ASSERT_TRUE(cache.ok()) << cache.status();
  Tensor logits = model->Forward(Tensor::FromHost<int32_t>({1, 5, 9}, {3}), Dim(0), *cache);
  const std::vector<float> values = ReadF32(logits);
  ASSERT_EQ(values.size(), 40u);
  for (float v : values) EXPECT_TRUE(std::isfinite(v));
}

TEST(HfLoader, TiedEmbeddingsUseTheEmbedding) {
  Tiny tiny;
  tiny.tied = true;
  const std::string dir = WriteModel("tied", tiny.Config(), tiny.Weights());
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->weights.classifier.node(), m->weights.embedding.node());
}

TEST(HfLoader, ConfigDefaults) {
  const Tiny tiny;
  json config = tiny.Config();
  for (const char* key : {"num_key_value_heads", "rope_theta", "rms_norm_eps",
                          "tie_word_embeddings", "max_position_embeddings", "torch_dtype"}) {
    config.erase(key);
  }
  Tiny mha = tiny;
  mha.kv_heads = mha.heads;  // num_key_value_heads defaults to the head count
  const std::string dir = WriteModel("defaults", config, mha.Weights());
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.n_kv_heads, 4);
  EXPECT_DOUBLE_EQ(m->config.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(m->config.norm_eps, 1e-6);
  EXPECT_EQ(m->config.max_seq_len, 2048);
  EXPECT_FALSE(m->config.tied_embeddings);
}

TEST(HfLoader, Bf16WeightsSetTheDtype) {
  Tiny tiny;
  tiny.dtype = DType::kBF16;
  const Named weights = tiny.Weights();
  const std::string dir = WriteModel("bf16", tiny.Config(), weights);
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.dtype, DType::kBF16);
  EXPECT_EQ(m->weights.layers[1].wv.dtype(), DType::kBF16);
  EXPECT_EQ(ReadF32(m->weights.layers[1].wv),
            ReadF32(Find(weights, "model.layers.1.self_attn.v_proj.weight")));
}

TEST(HfLoader, QkNormWeightsSetQkNorm) {
  Tiny tiny;
  tiny.qk_norm = true;
  const Named weights = tiny.Weights();
  const std::string dir = WriteModel("qk_norm", tiny.Config(), weights);
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->config.qk_norm);
  EXPECT_EQ(ReadF32(m->weights.layers[1].k_norm),
            ReadF32(Find(weights, "model.layers.1.self_attn.k_norm.weight")));
}

TEST(HfLoader, QkNormMissingInALaterLayer) {
  Tiny tiny;
  tiny.qk_norm = true;
  const std::string dir =
      WriteModel("qk_norm_partial", tiny.Config(),
                 Without(tiny.Weights(), "model.layers.1.self_attn.q_norm.weight"));
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir + "/model.safetensors",
                  "'model.layers.1.self_attn.q_norm.weight'");
}

// Splits the tiny model's weights over two shards with an index.
std::string WriteSharded(const std::string& name, const Named& weights,
                         const std::string& second_shard_in_index) {
  const std::string dir = TestDir(name);
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  const size_t half = weights.size() / 2;
  const Named first(weights.begin(), weights.begin() + half);
  const Named second(weights.begin() + half, weights.end());
  EXPECT_TRUE(WriteSafetensors(dir + "/model-00001-of-00002.safetensors", first).ok());
  EXPECT_TRUE(WriteSafetensors(dir + "/model-00002-of-00002.safetensors", second).ok());
  json map = json::object();
  for (const auto& [n, t] : first) map[n] = "model-00001-of-00002.safetensors";
  for (const auto& [n, t] : second) map[n] = second_shard_in_index;
  WriteFile(dir + "/model.safetensors.index.json",
            json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump());
  return dir;
}

TEST(HfLoader, LoadsShardsThroughTheIndex) {
  const Named weights = Tiny().Weights();
  const std::string dir = WriteSharded("sharded", weights, "model-00002-of-00002.safetensors");
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(ReadF32(m->weights.classifier), ReadF32(Find(weights, "lm_head.weight")));
  EXPECT_EQ(ReadF32(m->weights.embedding), ReadF32(Find(weights, "model.embed_tokens.weight")));
}

TEST(HfLoader, ShardedIndexNamesMissingFile) {
  const std::string dir =
      WriteSharded("sharded_missing", Tiny().Weights(), "model-00003-of-00002.safetensors");
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, "model.safetensors.index.json",
                  "model-00003-of-00002.safetensors");
}

TEST(HfLoader, ShardedIndexPointsOutsideTheDirectory) {
  const std::string dir =
      WriteSharded("sharded_escape", Tiny().Weights(), "../elsewhere.safetensors");
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, "model.safetensors.index.json",
                  "not a file name");
}

TEST(HfLoader, ShardedIndexPutsTensorInTheWrongShard) {
  // Every tensor is claimed by the first shard, which holds only half.
  const std::string dir =
      WriteSharded("sharded_wrong", Tiny().Weights(), "model-00001-of-00002.safetensors");
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, "model-00001-of-00002.safetensors",
                  "no tensor");
}

TEST(HfLoader, ShardedIndexMalformed) {
  const std::string dir = TestDir("sharded_malformed");
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  WriteFile(dir + "/model.safetensors.index.json", R"({"weight_map": [1, 2]})");
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, "model.safetensors.index.json",
                  "\"weight_map\"");
}

TEST(HfLoader, FallsBackToEverySafetensorsFile) {
  const Named weights = Tiny().Weights();
  const std::string dir = TestDir("glob");
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  const Named first(weights.begin(), weights.begin() + 5);
  const Named second(weights.begin() + 5, weights.end());
  KILN_EXPECT_OK(WriteSafetensors(dir + "/a.safetensors", first));
  KILN_EXPECT_OK(WriteSafetensors(dir + "/b.safetensors", second));
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(ReadF32(m->weights.final_norm), ReadF32(Find(weights, "model.norm.weight")));
}

TEST(HfLoader, SameTensorInTwoFiles) {
  const Named weights = Tiny().Weights();
  const std::string dir = TestDir("glob_duplicate");
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  KILN_EXPECT_OK(WriteSafetensors(dir + "/a.safetensors", weights));
  KILN_EXPECT_OK(WriteSafetensors(dir + "/b.safetensors", {weights[0]}));
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/b.safetensors", "is in both");
}

TEST(HfLoader, NoWeightFiles) {
  const std::string dir = TestDir("no_weights");
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir, "no model.safetensors");
}

TEST(HfLoader, CorruptWeightFile) {
  const std::string dir = TestDir("corrupt");
  WriteFile(dir + "/config.json", Tiny().Config().dump());
  WriteFile(dir + "/model.safetensors", "junk");
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "8-byte header length");
}

TEST(HfLoader, ConfigMissing) {
  const std::string dir = TestDir("config_missing");
  KILN_EXPECT_OK(WriteSafetensors(dir + "/model.safetensors", Tiny().Weights()));
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir + "/config.json", "cannot open");
}

TEST(HfLoader, ConfigMalformed) {
  const std::string dir = WriteModel("config_malformed", Tiny().Config(), Tiny().Weights());
  WriteFile(dir + "/config.json", R"({"hidden_size": 16,)");
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "not well-formed JSON");
}

TEST(HfLoader, ConfigNotAnObject) {
  const std::string dir = WriteModel("config_array", json::array({1, 2}), Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "expected a JSON object");
}

TEST(HfLoader, ConfigFieldMissing) {
  json config = Tiny().Config();
  config.erase("vocab_size");
  const std::string dir = WriteModel("config_no_vocab", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "\"vocab_size\" is missing");
}

TEST(HfLoader, ConfigFieldWrongType) {
  json config = Tiny().Config();
  config["hidden_size"] = "16";
  const std::string dir = WriteModel("config_type", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "\"hidden_size\" is \"16\", not an integer");
}

TEST(HfLoader, ConfigFieldNegative) {
  json config = Tiny().Config();
  config["num_hidden_layers"] = -2;
  const std::string dir = WriteModel("config_negative", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "\"num_hidden_layers\" is -2, not a positive int");
}

TEST(HfLoader, ConfigInvalidHeads) {
  json config = Tiny().Config();
  config["num_key_value_heads"] = 3;
  const std::string dir = WriteModel("config_heads", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "n_heads must be a multiple of n_kv_heads");
}

TEST(HfLoader, HiddenSizeDisagreesWithTheEmbedding) {
  json config = Tiny().Config();
  config["hidden_size"] = 32;
  const std::string dir = WriteModel("config_hidden", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "'model.embed_tokens.weight' is f32[40,16], but " + dir + "/config.json");
}

TEST(HfLoader, KvHeadsDisagreeWithKProj) {
  json config = Tiny().Config();
  config["num_key_value_heads"] = 4;
  const std::string dir = WriteModel("config_kv", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "'model.layers.0.self_attn.k_proj.weight' is f32[8,16]");
}

TEST(HfLoader, MoreLayersThanTheConfigSays) {
  json config = Tiny().Config();
  config["num_hidden_layers"] = 1;
  const std::string dir = WriteModel("config_layers", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "beyond the 1 layers");
}

TEST(HfLoader, MissingTensor) {
  const std::string dir =
      WriteModel("missing_tensor", Tiny().Config(),
                 Without(Tiny().Weights(), "model.layers.1.mlp.up_proj.weight"));
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir + "/model.safetensors",
                  "no tensor 'model.layers.1.mlp.up_proj.weight'");
}

TEST(HfLoader, MissingLmHeadWhenNotTied) {
  const std::string dir =
      WriteModel("missing_lm_head", Tiny().Config(), Without(Tiny().Weights(), "lm_head.weight"));
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir + "/model.safetensors",
                  "no tensor 'lm_head.weight'");
}

TEST(HfLoader, MixedDtypes) {
  const Named weights = Tiny().Weights();
  const std::string name = "model.layers.1.self_attn.o_proj.weight";
  const std::string dir =
      WriteModel("mixed_dtypes", Tiny().Config(),
                 Replacing(weights, name, cast(Find(weights, name), DType::kF16)));
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "'" + name + "' is f16[16,16], but 'model.embed_tokens.weight' is f32");
}

TEST(HfLoader, IntegerWeights) {
  const Named weights = Tiny().Weights();
  const std::string name = "model.embed_tokens.weight";
  const std::string dir =
      WriteModel("int_weights", Tiny().Config(),
                 Replacing(weights, name, cast(Find(weights, name), DType::kI32)));
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "weights must be f32, f16 or bf16");
}

TEST(HfLoader, UnexpectedBiasIsUnimplemented) {
  Named weights = Tiny().Weights();
  weights.emplace_back("model.layers.0.self_attn.q_proj.bias",
                       Tensor::FromHost<float>(std::vector<float>(16, 0.0f), {16}));
  const std::string dir = WriteModel("bias", Tiny().Config(), weights);
  ExpectLoadFails(dir, absl::StatusCode::kUnimplemented, dir + "/model.safetensors",
                  "'model.layers.0.self_attn.q_proj.bias' is a bias that LlamaForCausalLM");
}

// Adds q/k/v/o biases of `value` to every layer of `weights`.
Named WithAttentionBiases(Named weights, const Tiny& t, float value) {
  const int64_t kv = t.dim / t.heads * t.kv_heads;
  for (int i = 0; i < t.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    for (const auto& [name, n] : std::vector<std::pair<std::string, int64_t>>{
             {"q_proj", t.dim}, {"k_proj", kv}, {"v_proj", kv}, {"o_proj", t.dim}}) {
      weights.emplace_back(p + name + ".bias",
                           Tensor::FromHost<float>(std::vector<float>(n, value), {n}));
    }
  }
  return weights;
}

TEST(HfLoader, AttentionBiasLoadsTheBiases) {
  const Tiny t;
  json config = t.Config();
  config["attention_bias"] = true;
  const std::string dir = WriteModel("attention_bias", config, WithAttentionBiases(t.Weights(), t, 0.5f));
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->config.qkv_bias);
  EXPECT_TRUE(m->config.o_bias);
  EXPECT_THAT(ReadF32(m->weights.layers[1].bo), ::testing::Each(0.5f));
}

TEST(HfLoader, AttentionBiasMissingInTheWeights) {
  json config = Tiny().Config();
  config["attention_bias"] = true;
  const std::string dir = WriteModel("attention_bias_missing", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kNotFound, dir + "/model.safetensors",
                  "no tensor 'model.layers.0.self_attn.q_proj.bias'");
}

TEST(HfLoader, Qwen2HasQkvBiasesButNoOutputBias) {
  const Tiny t;
  json config = t.Config();
  config["architectures"] = {"Qwen2ForCausalLM"};
  Named weights = WithAttentionBiases(t.Weights(), t, 0.25f);
  std::erase_if(weights, [](const auto& p) { return p.first.find("o_proj.bias") != std::string::npos; });
  const std::string dir = WriteModel("qwen2_biases", config, weights);
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(m->config.qkv_bias);
  EXPECT_FALSE(m->config.o_bias);
}

TEST(HfLoader, UnknownArchitectureIsUnimplemented) {
  json config = Tiny().Config();
  config["architectures"] = {"GemmaForCausalLM"};
  const std::string dir = WriteModel("gemma", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kUnimplemented, dir + "/config.json",
                  "architecture \"GemmaForCausalLM\" (kiln runs LlamaForCausalLM, MistralForCausalLM, "
                  "Qwen2ForCausalLM, Qwen3ForCausalLM)");
}

TEST(HfLoader, DynamicRopeScalingIsUnimplemented) {
  json config = Tiny().Config();
  config["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 8.0}};
  const std::string dir = WriteModel("rope_dynamic", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kUnimplemented, dir + "/config.json",
                  "RoPE scaling of type \"dynamic\"");
}

TEST(HfLoader, Llama3RopeScalingNeedsTheOriginalContext) {
  json config = Tiny().Config();
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  const std::string dir = WriteModel("rope_llama3_bad", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/config.json",
                  "\"original_max_position_embeddings\" is missing");
}

TEST(HfLoader, Llama3RopeScalingIsRead) {
  json config = Tiny().Config();
  config.erase("rope_scaling");
  config["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 250000.0}, {"factor", 8.0},
                               {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                               {"original_max_position_embeddings", 32}};
  const std::string dir = WriteModel("rope_llama3", config, Tiny().Weights());
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.rope_theta, 250000.0);
  EXPECT_EQ(m->config.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(m->config.rope_scaling.original_max_position_embeddings, 32);
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(m->config, m->weights);
  ASSERT_TRUE(model.ok()) << model.status();
}

TEST(HfLoader, ExplicitHeadDimSetsTheProjectionShapes) {
  Tiny t;
  json config = t.Config();
  config["head_dim"] = 6;  // 4 heads of 6 (q_dim 24) over a hidden size of 16
  Named weights = t.Weights();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  const auto random = [&](std::vector<int64_t> sizes) {
    std::vector<float> values(static_cast<size_t>(NumElements(sizes)));
    for (float& v : values) v = normal(rng);
    return Tensor::FromHost<float>(values, sizes);
  };
  for (int i = 0; i < t.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    weights = Replacing(weights, p + "q_proj.weight", random({24, 16}));
    weights = Replacing(weights, p + "k_proj.weight", random({12, 16}));
    weights = Replacing(weights, p + "v_proj.weight", random({12, 16}));
    weights = Replacing(weights, p + "o_proj.weight", random({16, 24}));
  }
  const std::string dir = WriteModel("head_dim", config, weights);
  absl::StatusOr<LoadedModel> m = LoadHuggingFace(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.head_dim(), 6);
  EXPECT_EQ(m->config.q_dim(), 24);
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(m->config, m->weights);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<KvCache> cache = model->NewCache();
  ASSERT_TRUE(cache.ok());
  const Tensor logits = model->Forward(Tensor::FromHost<int32_t>({1, 2, 3}, {3}), Dim(0), *cache);
  std::vector<float> values = ReadF32(logits);
  ASSERT_EQ(values.size(), 40u);
  for (float v : values) EXPECT_TRUE(std::isfinite(v));
}

TEST(HfLoader, ExplicitHeadDimDisagreesWithTheWeights) {
  json config = Tiny().Config();
  config["head_dim"] = 8 * 2;
  const std::string dir = WriteModel("head_dim_bad", config, Tiny().Weights());
  ExpectLoadFails(dir, absl::StatusCode::kInvalidArgument, dir + "/model.safetensors",
                  "tensor 'model.layers.0.self_attn.q_proj.weight' is f32[16,16]");
}

}  // namespace
}  // namespace kiln::models
