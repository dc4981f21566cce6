#include "models/gguf/gguf_model.h"

#include "ops/quant.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/hf_loader.h"
#include "models/llama.h"
#include "models/safetensors.h"
#include "nlohmann/json.hpp"
#include "ops/quant.h"
#include "tests/models/gguf/gguf_builder.h"
#include "tests/test_util.h"

// The tiny GGUF models tests/models/references/make_references.py writes
// with llama.cpp's gguf-py.
#ifndef KILN_GGUF_REFERENCE_DIR
#define KILN_GGUF_REFERENCE_DIR KILN_SOURCE_DIR "/tests/models/references/gguf"
#endif

namespace kiln::models {
namespace {

using ::kiln::models::testing::BF16Bytes;
using ::kiln::models::testing::F16Bytes;
using ::kiln::models::testing::F32Bytes;
using ::kiln::models::testing::GgufBuilder;
using ::kiln::models::testing::Le;
using ::kiln::testing::ReadF32;
using ::testing::HasSubstr;

// One weight in Hugging Face's naming and layout.
struct Weight {
  std::string hf_name;
  std::string gguf_name;
  std::vector<int64_t> shape;  // [out, in]
  std::vector<float> values;
};

// dim 32, 4 heads of 8, 2 KV heads, MLP 64, vocab 48, 2 layers (rows of 32
// and 64 so that Q8_0 / Q4_0 blocks fit).
struct Tiny {
  std::string arch = "llama";  // or qwen2 (biases, tied), qwen3 (qk norm, head dim 16)
  int dim = 32, heads = 4, kv_heads = 2, hidden = 64, vocab = 48, layers = 2;
  bool tied = false;
  bool llama_bias = false;  // Llama's attention_bias: q, k, v and o biases

  bool qwen2() const { return arch == "qwen2"; }
  bool qwen3() const { return arch == "qwen3"; }
  int head_dim() const { return qwen3() ? 16 : dim / heads; }

  std::vector<Weight> Weights(uint32_t seed = 11) const {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.4f);
    std::vector<Weight> out;
    const auto add = [&](const std::string& hf, const std::string& gguf,
                         std::vector<int64_t> shape) {
      std::vector<float> v(static_cast<size_t>(NumElements(shape)));
      for (float& x : v) x = normal(rng);
      out.push_back({hf, gguf, std::move(shape), std::move(v)});
    };
    const int64_t d = dim, h = hidden, qd = head_dim() * heads, kv = head_dim() * kv_heads;
    add("model.embed_tokens.weight", "token_embd.weight", {vocab, d});
    for (int i = 0; i < layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      const std::string g = "blk." + std::to_string(i) + ".";
      add(p + "input_layernorm.weight", g + "attn_norm.weight", {d});
      add(p + "self_attn.q_proj.weight", g + "attn_q.weight", {qd, d});
      add(p + "self_attn.k_proj.weight", g + "attn_k.weight", {kv, d});
      add(p + "self_attn.v_proj.weight", g + "attn_v.weight", {kv, d});
      add(p + "self_attn.o_proj.weight", g + "attn_output.weight", {d, qd});
      if (qwen2() || llama_bias) {
        add(p + "self_attn.q_proj.bias", g + "attn_q.bias", {qd});
        add(p + "self_attn.k_proj.bias", g + "attn_k.bias", {kv});
        add(p + "self_attn.v_proj.bias", g + "attn_v.bias", {kv});
      }
      if (llama_bias) add(p + "self_attn.o_proj.bias", g + "attn_output.bias", {d});
      if (qwen3()) {
        add(p + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {head_dim()});
        add(p + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {head_dim()});
      }
      add(p + "post_attention_layernorm.weight", g + "ffn_norm.weight", {d});
      add(p + "mlp.gate_proj.weight", g + "ffn_gate.weight", {h, d});
      add(p + "mlp.up_proj.weight", g + "ffn_up.weight", {h, d});
      add(p + "mlp.down_proj.weight", g + "ffn_down.weight", {d, h});
    }
    add("model.norm.weight", "output_norm.weight", {d});
    if (!tied) add("lm_head.weight", "output.weight", {vocab, d});
    return out;
  }

  // The metadata llama.cpp's converter writes (exactly representable
  // numbers, so that the f32 fields equal the JSON ones).
  GgufBuilder Metadata() const {
    GgufBuilder b;
    b.String("general.architecture", arch);
    b.String("general.name", "kiln tiny");
    const std::string a = arch + ".";
    b.U32(a + "context_length", 64);
    b.U32(a + "embedding_length", dim);
    b.U32(a + "block_count", layers);
    b.U32(a + "feed_forward_length", hidden);
    b.U32(a + "attention.head_count", heads);
    b.U32(a + "attention.head_count_kv", kv_heads);
    b.F32(a + "attention.layer_norm_rms_epsilon", 1.0f / 1024);
    b.F32(a + "rope.freq_base", 500000.0f);
    b.U32(a + "rope.dimension_count", head_dim());
    if (qwen3()) {
      b.U32(a + "attention.key_length", head_dim());
      b.U32(a + "attention.value_length", head_dim());
    }
    return b;
  }

  nlohmann::json HfConfig() const {
    const char* name = qwen2()   ? "Qwen2ForCausalLM"
                       : qwen3() ? "Qwen3ForCausalLM"
                                 : "LlamaForCausalLM";
    nlohmann::json c = {{"architectures", {name}},      {"hidden_size", dim},
                        {"intermediate_size", hidden},  {"num_hidden_layers", layers},
                        {"num_attention_heads", heads}, {"num_key_value_heads", kv_heads},
                        {"vocab_size", vocab},          {"max_position_embeddings", 64},
                        {"rope_theta", 500000.0},       {"rms_norm_eps", 1.0 / 1024},
                        {"tie_word_embeddings", tied}};
    if (qwen3()) c["head_dim"] = head_dim();
    if (llama_bias) c["attention_bias"] = true;
    return c;
  }
};

// llama.cpp's converter's row order for attn_q / attn_k: within each head,
// row (half, i) moves to (i, half).
std::vector<float> PermuteLikeLlamaCpp(const std::vector<float>& w, int64_t rows, int heads) {
  const int64_t cols = static_cast<int64_t>(w.size()) / rows, head_dim = rows / heads;
  std::vector<float> out(w.size());
  for (int h = 0; h < heads; ++h) {
    for (int half = 0; half < 2; ++half) {
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        const int64_t from = h * head_dim + half * (head_dim / 2) + i;
        const int64_t to = h * head_dim + 2 * i + half;
        std::copy_n(w.begin() + from * cols, cols, out.begin() + to * cols);
      }
    }
  }
  return out;
}

bool IsPermuted(const Tiny& t, const std::string& gguf_name) {
  return t.arch == "llama" && (gguf_name.find("attn_q.") != std::string::npos ||
                               gguf_name.find("attn_k.") != std::string::npos);
}

// The tensor's GGUF bytes as `type` (F32, F16 or BF16), rows permuted as the
// converter would.
std::string Encode(const Tiny& t, const Weight& w, GgmlType type) {
  std::vector<float> v = w.values;
  if (IsPermuted(t, w.gguf_name)) {
    const int heads = w.gguf_name.find("attn_q.") != std::string::npos ? t.heads : t.kv_heads;
    v = PermuteLikeLlamaCpp(v, w.shape[0], heads);
  }
  return type == GgmlType::kF16    ? F16Bytes(v)
         : type == GgmlType::kBF16 ? BF16Bytes(v)
                                   : F32Bytes(v);
}

std::vector<uint64_t> Ne(const std::vector<int64_t>& shape) {
  return std::vector<uint64_t>(shape.rbegin(), shape.rend());
}

// Metadata plus every weight; matrices as `matrix_type`, vectors as F32.
GgufBuilder ModelBuilder(const Tiny& t, const std::vector<Weight>& weights,
                         GgmlType matrix_type = GgmlType::kF32) {
  GgufBuilder b = t.Metadata();
  for (const Weight& w : weights) {
    const GgmlType type = w.shape.size() == 2 ? matrix_type : GgmlType::kF32;
    b.Tensor(w.gguf_name, Ne(w.shape), type, Encode(t, w, type));
  }
  return b;
}

absl::StatusOr<GgufFile> FileOf(const GgufBuilder& b) {
  return GgufFile::FromBytes(b.Build(), "tiny.gguf");
}

absl::StatusOr<LoadedModel> LoadBytes(const GgufBuilder& b, GgufLoadOptions options = {}) {
  absl::StatusOr<GgufFile> f = FileOf(b);
  if (!f.ok()) return f.status();
  return LoadGgufModel(*f, options);
}

void ExpectLoadFails(const GgufBuilder& b, absl::StatusCode code,
                     const std::vector<std::string>& parts, GgufLoadOptions options = {}) {
  absl::StatusOr<LoadedModel> m = LoadBytes(b, options);
  ASSERT_FALSE(m.ok()) << "loaded";
  EXPECT_EQ(m.status().code(), code) << m.status();
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("tiny.gguf"));
  for (const std::string& p : parts) EXPECT_THAT(std::string(m.status().message()), HasSubstr(p));
}

const Tensor* LoadedWeight(const LoadedModel& m, const std::string& hf_name) {
  const LlamaWeights& w = m.weights;
  if (hf_name == "model.embed_tokens.weight") return &w.embedding;
  if (hf_name == "model.norm.weight") return &w.final_norm;
  if (hf_name == "lm_head.weight") return &w.classifier;
  const size_t dot = hf_name.find('.', 13);
  const LlamaLayerWeights& l = w.layers[std::stoi(hf_name.substr(13, dot - 13))];
  const std::string rest = hf_name.substr(dot + 1);
  const std::vector<std::pair<std::string, const Tensor*>> names = {
      {"input_layernorm.weight", &l.attention_norm},
      {"self_attn.q_proj.weight", &l.wq},
      {"self_attn.k_proj.weight", &l.wk},
      {"self_attn.v_proj.weight", &l.wv},
      {"self_attn.o_proj.weight", &l.wo},
      {"self_attn.q_proj.bias", &l.bq},
      {"self_attn.k_proj.bias", &l.bk},
      {"self_attn.v_proj.bias", &l.bv},
      {"self_attn.o_proj.bias", &l.bo},
      {"self_attn.q_norm.weight", &l.q_norm},
      {"self_attn.k_norm.weight", &l.k_norm},
      {"post_attention_layernorm.weight", &l.ffn_norm},
      {"mlp.gate_proj.weight", &l.w_gate},
      {"mlp.up_proj.weight", &l.w_up},
      {"mlp.down_proj.weight", &l.w_down}};
  for (const auto& [n, t] : names) {
    if (n == rest) return t;
  }
  ADD_FAILURE() << "no loaded weight for " << hf_name;
  return &w.embedding;
}

// ------------------------------------------------------------- loading

TEST(GgufModel, LoadsLlamaInHuggingFaceLayout) {
  const Tiny tiny;
  const std::vector<Weight> weights = tiny.Weights();
  absl::StatusOr<LoadedModel> m = LoadBytes(ModelBuilder(tiny, weights));
  ASSERT_TRUE(m.ok()) << m.status();
  const LlamaConfig& c = m->config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, 32);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.hidden_dim, 64);
  EXPECT_EQ(c.vocab_size, 48);
  EXPECT_EQ(c.max_seq_len, 64);
  EXPECT_EQ(c.explicit_head_dim, 0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1.0 / 1024);
  EXPECT_EQ(c.rope_style, RopeStyle::kRotateHalf);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kDefault);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.dtype, DType::kF32);
  for (const Weight& w : weights) {
    const Tensor* t = LoadedWeight(*m, w.hf_name);
    EXPECT_EQ(t->shape(), Shape::FromExtents(w.shape)) << w.hf_name;
    EXPECT_EQ(ReadF32(*t), w.values) << w.hf_name;  // q and k unpermuted
  }
  EXPECT_TRUE(LlamaModel::Create(c, m->weights).ok());
}

TEST(GgufModel, UsesStoredTensorsInPlace) {
  const Tiny tiny;
  absl::StatusOr<GgufFile> f = FileOf(ModelBuilder(tiny, tiny.Weights(), GgmlType::kF16));
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<LoadedModel> m = LoadGgufModel(*f, {.dtype = DType::kF16});
  ASSERT_TRUE(m.ok()) << m.status();
  const auto data_of = [](const Tensor& t) { return t.node()->data.ptr<uint8_t>(); };
  const Tensor& wv = m->weights.layers[0].wv;
  EXPECT_EQ(data_of(wv), f->TensorData(*f->FindTensor("blk.0.attn_v.weight")).data());
  EXPECT_FALSE(wv.node()->data.storage->writable());
  // Permuted rows and converted vectors are new tensors.
  const Tensor& wq = m->weights.layers[0].wq;
  EXPECT_NE(data_of(wq), f->TensorData(*f->FindTensor("blk.0.attn_q.weight")).data());
  EXPECT_TRUE(wq.node()->data.storage->writable());
  EXPECT_EQ(m->weights.final_norm.dtype(), DType::kF16);
}

TEST(GgufModel, ConvertsToTheRequestedDType) {
  const Tiny tiny;
  const std::vector<Weight> weights = tiny.Weights();
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    absl::StatusOr<LoadedModel> m = LoadBytes(ModelBuilder(tiny, weights), {.dtype = dtype});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->config.dtype, dtype);
    for (const Weight& w : weights) {
      const Tensor* t = LoadedWeight(*m, w.hf_name);
      ASSERT_EQ(t->dtype(), dtype) << w.hf_name;
      std::vector<float> rounded = w.values;
      for (float& x : rounded) x = ::kiln::testing::RoundTo(dtype, x);
      EXPECT_EQ(ReadF32(*t), rounded) << w.hf_name;
    }
  }
  // bf16 stored, f32 wanted: exact.
  absl::StatusOr<LoadedModel> m =
      LoadBytes(ModelBuilder(tiny, weights, GgmlType::kBF16), {.dtype = DType::kF32});
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<float> want = weights[2].values;  // blk.0.attn_q.weight
  for (float& x : want) x = ::kiln::testing::RoundTo(DType::kBF16, x);
  EXPECT_EQ(ReadF32(m->weights.layers[0].wq), want);
}

TEST(GgufModel, DequantizesQuantizedTensorsAndUnpermutesTheirRows) {
  const Tiny tiny;
  const std::vector<Weight> weights = tiny.Weights();
  GgufBuilder b = ModelBuilder(tiny, weights);
  std::mt19937 rng(5);
  // Random Q8_0 / Q4_0 blocks with small f16 scales for blk.1's q and gate.
  std::vector<float> expected_q, expected_gate;
  for (auto& t : b.tensors()) {
    const bool q = t.name == "blk.1.attn_q.weight", gate = t.name == "blk.1.ffn_gate.weight";
    if (!q && !gate) continue;
    const GgmlType type = q ? GgmlType::kQ4_0 : GgmlType::kQ8_0;
    const GgmlTypeInfo& info = GgmlTypeInfoOf(type);
    const int64_t elements = static_cast<int64_t>(t.dims[0] * t.dims[1]);
    std::string bytes(static_cast<size_t>(elements / 32 * info.block_bytes), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    for (size_t at = 0; at < bytes.size(); at += info.block_bytes) {
      const uint16_t scale = Half::FromFloat(0.01f + 0.001f * (at % 7)).bits;
      std::memcpy(bytes.data() + at, &scale, 2);
    }
    std::vector<float> values(static_cast<size_t>(elements));
    ASSERT_TRUE(
        Dequantize(
            type, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
            absl::MakeSpan(values))
            .ok());
    t.type = static_cast<uint32_t>(type);
    t.data = bytes;
    if (q) {
      // The file holds llama.cpp's order; kiln's is the inverse permutation.
      const int64_t rows = static_cast<int64_t>(t.dims[1]), cols = static_cast<int64_t>(t.dims[0]);
      expected_q.resize(values.size());
      const int64_t hd = rows / tiny.heads;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = r / hd, within = r % hd;
        const int64_t source = h * hd + 2 * (within % (hd / 2)) + within / (hd / 2);
        std::copy_n(values.begin() + source * cols, cols, expected_q.begin() + r * cols);
      }
      EXPECT_EQ(PermuteLikeLlamaCpp(expected_q, rows, tiny.heads), values);
    } else {
      expected_gate = values;
    }
  }
  absl::StatusOr<LoadedModel> m = LoadBytes(b);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(ReadF32(m->weights.layers[1].wq), expected_q);
  EXPECT_EQ(ReadF32(m->weights.layers[1].w_gate), expected_gate);
  absl::StatusOr<LoadedModel> half = LoadBytes(b, {.dtype = DType::kF16});
  ASSERT_TRUE(half.ok()) << half.status();
  std::vector<float> rounded = expected_gate;
  for (float& x : rounded) x = ::kiln::testing::RoundTo(DType::kF16, x);
  EXPECT_EQ(ReadF32(half->weights.layers[1].w_gate), rounded);

  // Kept packed: the same values, decoded from the file's blocks (q's rows
  // moved back whole), the other matrices as before.
  absl::StatusOr<LoadedModel> packed = LoadBytes(b, {.dtype = DType::kF32, .keep_packed = true});
  ASSERT_TRUE(packed.ok()) << packed.status();
  const std::optional<PackedWeight> q = AsPackedWeight(packed->weights.layers[1].wq);
  const std::optional<PackedWeight> gate = AsPackedWeight(packed->weights.layers[1].w_gate);
  ASSERT_TRUE(q.has_value() && gate.has_value());
  EXPECT_EQ(q->format, QuantFormat::kQ4_0);
  EXPECT_EQ(gate->format, QuantFormat::kQ8_0);
  EXPECT_EQ(q->blocks.dtype(), DType::kU8);
  EXPECT_EQ(ReadF32(packed->weights.layers[1].wq), expected_q);
  EXPECT_EQ(ReadF32(packed->weights.layers[1].w_gate), expected_gate);
  EXPECT_FALSE(AsPackedWeight(packed->weights.layers[0].wq).has_value());
}

// The same weights through the Hugging Face loader and the GGUF loader give
// the same logits: the permutation, biases, qk norms and head dims agree.
void ExpectSameLogitsAsHuggingFace(const Tiny& tiny) {
  const std::vector<Weight> weights = tiny.Weights();
  // One folder per test: ctest runs tests of the same architecture at once.
  const std::string dir = ::kiln::testing::FreshTempDir(
      std::string("kiln_gguf_hf_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  ::kiln::testing::WriteFile(dir + "/config.json", tiny.HfConfig().dump());
  std::vector<std::pair<std::string, Tensor>> named;
  for (const Weight& w : weights)
    named.emplace_back(w.hf_name, Tensor::FromHost<float>(w.values, w.shape));
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", named).ok());
  absl::StatusOr<LoadedModel> hf = LoadHuggingFace(dir);
  ASSERT_TRUE(hf.ok()) << hf.status();
  const std::string path = dir + "/model.gguf";
  ::kiln::testing::WriteFile(path, ModelBuilder(tiny, weights).Build());
  absl::StatusOr<LoadedModel> gguf = LoadGguf(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  EXPECT_EQ(gguf->config.qkv_bias, hf->config.qkv_bias);
  EXPECT_EQ(gguf->config.qk_norm, hf->config.qk_norm);
  EXPECT_EQ(gguf->config.o_bias, hf->config.o_bias);
  EXPECT_EQ(gguf->config.head_dim(), hf->config.head_dim());
  EXPECT_EQ(gguf->config.tied_embeddings, hf->config.tied_embeddings);

  std::vector<std::vector<float>> logits;
  for (LoadedModel* loaded : {&*hf, &*gguf}) {
    absl::StatusOr<LlamaModel> model = LlamaModel::Create(loaded->config, loaded->weights);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<KvCache> cache = model->NewCache();
    ASSERT_TRUE(cache.ok()) << cache.status();
    logits.push_back(ReadF32(model->Forward(Tensor::FromHost<int32_t>({1, 7, 3, 40}, {4}), Dim(0),
                                            *cache, /*all_positions=*/true)));
  }
  ASSERT_EQ(logits[0].size(), 4u * tiny.vocab);
  EXPECT_TRUE(::kiln::testing::SameFloats(logits[1], logits[0]));
}

TEST(GgufModel, LlamaMatchesTheHuggingFaceLoader) { ExpectSameLogitsAsHuggingFace(Tiny()); }

// Llama's biases: q's and k's are permuted along with their rows.
TEST(GgufModel, LlamaWithAttentionBiasesMatchesTheHuggingFaceLoader) {
  Tiny tiny;
  tiny.llama_bias = true;
  ExpectSameLogitsAsHuggingFace(tiny);
}

TEST(GgufModel, Qwen2WithBiasesAndTiedEmbeddingsMatchesTheHuggingFaceLoader) {
  Tiny tiny;
  tiny.arch = "qwen2";
  tiny.tied = true;
  ExpectSameLogitsAsHuggingFace(tiny);
}

TEST(GgufModel, Qwen3WithQkNormAndAWideHeadMatchesTheHuggingFaceLoader) {
  Tiny tiny;
  tiny.arch = "qwen3";
  ExpectSameLogitsAsHuggingFace(tiny);
}

TEST(GgufModel, CapsTheContextWhenAsked) {
  const Tiny tiny;
  absl::StatusOr<LoadedModel> m =
      LoadBytes(ModelBuilder(tiny, tiny.Weights()), {.max_seq_len = 16});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.max_seq_len, 16);
  m = LoadBytes(ModelBuilder(tiny, tiny.Weights()), {.max_seq_len = 1000});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.max_seq_len, 64);
}

// Every model gguf-py wrote loads in each dtype, builds a LlamaModel and
// carries a tokenizer (their logits are checked against transformers'
// goldens elsewhere).
TEST(GgufModel, LoadsEveryReferenceModel) {
  namespace fs = std::filesystem;
  const fs::path dir = KILN_GGUF_REFERENCE_DIR;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) GTEST_SKIP() << dir << " does not exist yet";
  int models = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    absl::StatusOr<GgufFile> f = GgufFile::Open(entry.path().string());
    ASSERT_TRUE(f.ok()) << f.status();
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      absl::StatusOr<LoadedModel> m = LoadGgufModel(*f, {.dtype = dtype});
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_TRUE(LlamaModel::Create(m->config, m->weights).ok());
    }
    absl::StatusOr<GgufTokenizerMetadata> t = ReadGgufTokenizer(*f);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_FALSE(t->tokens.empty());
    ++models;
  }
  EXPECT_GT(models, 0) << dir << " holds no .gguf models";
}

// ------------------------------------------------------------- RoPE

absl::StatusOr<LlamaConfig> ConfigOf(const GgufBuilder& b) {
  absl::StatusOr<GgufFile> f = FileOf(b);
  if (!f.ok()) return f.status();
  return ReadGgufConfig(*f);
}

TEST(GgufModel, ReadsLlama3RopeFactors) {
  const Tiny tiny;
  GgufBuilder b = ModelBuilder(tiny, tiny.Weights());
  b.Tensor("rope_freqs.weight", {4}, GgmlType::kF32, F32Bytes({1, 1, 2.5f, 8}));
  absl::StatusOr<LoadedModel> m = LoadBytes(b);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.rope_scaling.type, RopeScaling::Type::kFactors);
  EXPECT_THAT(m->config.rope_scaling.factors, ::testing::ElementsAre(1, 1, 2.5, 8));
  GgufBuilder wrong = ModelBuilder(tiny, tiny.Weights());
  wrong.Tensor("rope_freqs.weight", {8}, GgmlType::kF32, F32Bytes(std::vector<float>(8, 1)));
  ExpectLoadFails(wrong, absl::StatusCode::kInvalidArgument, {"rope_freqs.weight", "[4]"});
}

TEST(GgufModel, ReadsRopeScalingKeys) {
  const Tiny tiny;
  GgufBuilder linear = tiny.Metadata();
  linear.String("llama.rope.scaling.type", "linear").F32("llama.rope.scaling.factor", 4);
  linear.Tensor("token_embd.weight", {32, 48}, GgmlType::kF32,
                F32Bytes(std::vector<float>(32 * 48)));
  absl::StatusOr<LlamaConfig> c = ConfigOf(linear);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kLinear);
  EXPECT_EQ(c->rope_scaling.factor, 4);

  GgufBuilder yarn = tiny.Metadata();
  yarn.String("llama.rope.scaling.type", "yarn").F32("llama.rope.scaling.factor", 4);
  yarn.U32("llama.rope.scaling.original_context_length", 16);
  yarn.Tensor("token_embd.weight", {32, 48}, GgmlType::kF32, F32Bytes(std::vector<float>(32 * 48)));
  c = ConfigOf(yarn);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 16);
  EXPECT_EQ(c->rope_scaling.beta_fast, 32);
  EXPECT_FALSE(c->rope_scaling.attention_factor.has_value());

  GgufBuilder longrope = tiny.Metadata();
  longrope.String("llama.rope.scaling.type", "longrope");
  longrope.Tensor("token_embd.weight", {32, 48}, GgmlType::kF32,
                  F32Bytes(std::vector<float>(32 * 48)));
  const absl::Status s = ConfigOf(longrope).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("longrope"));
}

// ------------------------------------------------------------- refusals

TEST(GgufModel, RefusesOtherArchitectures) {
  Tiny tiny;
  tiny.arch = "gemma3";
  ExpectLoadFails(ModelBuilder(tiny, tiny.Weights()), absl::StatusCode::kUnimplemented,
                  {"\"gemma3\" is not supported; kiln reads llama, qwen2, qwen3"});
  GgufBuilder none;
  none.U32("llama.block_count", 2);
  ExpectLoadFails(none, absl::StatusCode::kInvalidArgument, {"general.architecture"});
}

TEST(GgufModel, NamesMissingAndIllTypedKeys) {
  GgufBuilder missing;
  missing.String("general.architecture", "llama");
  missing.U32("llama.embedding_length", 32);
  ExpectLoadFails(missing, absl::StatusCode::kInvalidArgument,
                  {"\"llama.block_count\" is missing"});
  GgufBuilder text;
  text.String("general.architecture", "llama");
  text.String("llama.embedding_length", "32");
  ExpectLoadFails(text, absl::StatusCode::kInvalidArgument,
                  {"\"llama.embedding_length\"", "string \"32\"", "not a positive int"});
}

TEST(GgufModel, NamesMissingAndMisShapedTensors) {
  const Tiny tiny;
  std::vector<Weight> weights = tiny.Weights();
  std::erase_if(weights, [](const Weight& w) { return w.gguf_name == "blk.1.ffn_up.weight"; });
  ExpectLoadFails(ModelBuilder(tiny, weights), absl::StatusCode::kNotFound,
                  {"no tensor 'blk.1.ffn_up.weight'"});
  weights = tiny.Weights();
  for (Weight& w : weights) {
    if (w.gguf_name == "blk.0.attn_k.weight") w.shape = {8, 32};  // 1 KV head's worth
  }
  ExpectLoadFails(ModelBuilder(tiny, weights), absl::StatusCode::kInvalidArgument,
                  {"'blk.0.attn_k.weight' is F32 [32, 8]", "implies [32, 16]"});
}

TEST(GgufModel, RefusesQuantTypesItCannotDecode) {
  const Tiny tiny;
  GgufBuilder b = ModelBuilder(tiny, tiny.Weights());
  for (auto& t : b.tensors()) {
    if (t.name != "blk.0.ffn_gate.weight") continue;
    t.type = static_cast<uint32_t>(GgmlType::kIQ4_NL);  // blocks of 32, 18 bytes
    t.data = std::string(64 * 18, '\0');
  }
  ExpectLoadFails(b, absl::StatusCode::kUnimplemented,
                  {"'blk.0.ffn_gate.weight' is IQ4_NL", "Q6_K"});
}

TEST(GgufModel, RefusesTensorsItWouldIgnore) {
  const Tiny tiny;
  GgufBuilder extra = ModelBuilder(tiny, tiny.Weights());
  extra.Tensor("blk.2.attn_norm.weight", {32}, GgmlType::kF32, F32Bytes(std::vector<float>(32)));
  ExpectLoadFails(extra, absl::StatusCode::kUnimplemented,
                  {"'blk.2.attn_norm.weight'", "2 layers"});
  GgufBuilder bias = ModelBuilder(tiny, tiny.Weights());
  bias.Tensor("blk.1.attn_q.bias", {32}, GgmlType::kF32, F32Bytes(std::vector<float>(32)));
  ExpectLoadFails(bias, absl::StatusCode::kUnimplemented, {"'blk.1.attn_q.bias'"});
}

TEST(GgufModel, RefusesFeaturesKilnDoesNotRun) {
  const Tiny tiny;
  GgufBuilder moe = ModelBuilder(tiny, tiny.Weights());
  moe.U32("llama.expert_count", 8);
  ExpectLoadFails(moe, absl::StatusCode::kUnimplemented,
                  {"mixture of experts", "llama.expert_count"});

  // Per-layer head counts load when equal and are refused when they differ.
  for (const std::string& arr : {std::string("same"), std::string("differ")}) {
    GgufBuilder b;
    b.String("general.architecture", "llama");
    b.U32("llama.context_length", 64).U32("llama.embedding_length", 32).U32("llama.block_count", 2);
    b.U32("llama.feed_forward_length", 64).U32("llama.attention.head_count", 4);
    b.I32s("llama.attention.head_count_kv",
           arr == "same" ? std::vector<int32_t>{2, 2} : std::vector<int32_t>{2, 4});
    b.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    b.Tensor("token_embd.weight", {32, 48}, GgmlType::kF32, F32Bytes(std::vector<float>(32 * 48)));
    absl::StatusOr<LlamaConfig> c = ConfigOf(b);
    if (arr == "same") {
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_EQ(c->n_kv_heads, 2);
    } else {
      EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
      EXPECT_THAT(std::string(c.status().message()), HasSubstr("varying per layer"));
    }
  }

  GgufBuilder partial_rope;
  partial_rope.String("general.architecture", "llama");
  partial_rope.U32("llama.context_length", 64).U32("llama.embedding_length", 32);
  partial_rope.U32("llama.block_count", 2).U32("llama.feed_forward_length", 64);
  partial_rope.U32("llama.attention.head_count", 4);
  partial_rope.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  partial_rope.U32("llama.rope.dimension_count", 4);
  partial_rope.Tensor("token_embd.weight", {32, 48}, GgmlType::kF32,
                      F32Bytes(std::vector<float>(32 * 48)));
  const absl::Status s = ConfigOf(partial_rope).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("partial RoPE"));
}

TEST(GgufModel, RefusesVocabulariesThatDisagree) {
  const Tiny tiny;
  GgufBuilder b = ModelBuilder(tiny, tiny.Weights());
  b.Strings("tokenizer.ggml.tokens", std::vector<std::string>(47, "x"));
  ExpectLoadFails(b, absl::StatusCode::kInvalidArgument, {"tokenizer.ggml.tokens", "47 tokens"});
  GgufBuilder declared = ModelBuilder(tiny, tiny.Weights());
  declared.U32("llama.vocab_size", 50);
  ExpectLoadFails(declared, absl::StatusCode::kInvalidArgument, {"llama.vocab_size", "50"});
}

TEST(GgufModel, RefusesDTypesThatAreNotFloating) {
  const Tiny tiny;
  ExpectLoadFails(ModelBuilder(tiny, tiny.Weights()), absl::StatusCode::kInvalidArgument,
                  {"i32", "f32, f16 or bf16"}, {.dtype = DType::kI32});
}

TEST(GgufModel, ReportsFilesThatCannotBeOpened) {
  absl::StatusOr<LoadedModel> m = LoadGguf("/nonexistent/model.gguf");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("/nonexistent/model.gguf"));
}

// ------------------------------------------------------------- tokenizer

GgufBuilder TokenizerBuilder() {
  GgufBuilder b;
  b.String("tokenizer.ggml.model", "llama").String("tokenizer.ggml.pre", "default");
  b.Strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xe2\x96\x81hi"});
  b.F32s("tokenizer.ggml.scores", {0, 0, 0, -1.5f});
  b.I32s("tokenizer.ggml.token_type", {2, 3, 3, 1});
  b.Strings("tokenizer.ggml.merges", {"\xe2\x96\x81 h", "h i"});
  b.U32("tokenizer.ggml.bos_token_id", 1).U32("tokenizer.ggml.eos_token_id", 2);
  b.U32("tokenizer.ggml.unknown_token_id", 0);
  b.Bool("tokenizer.ggml.add_bos_token", true).Bool("tokenizer.ggml.add_eos_token", false);
  b.String("tokenizer.chat_template",
           "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
  return b;
}

TEST(GgufTokenizer, ReadsEveryField) {
  absl::StatusOr<GgufFile> f = FileOf(TokenizerBuilder());
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<GgufTokenizerMetadata> t = ReadGgufTokenizer(*f);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->model, "llama");
  EXPECT_EQ(t->pre, "default");
  EXPECT_THAT(t->tokens, ::testing::ElementsAre("<unk>", "<s>", "</s>", "\xe2\x96\x81hi"));
  EXPECT_THAT(t->scores, ::testing::ElementsAre(0, 0, 0, -1.5f));
  EXPECT_THAT(t->token_types, ::testing::ElementsAre(2, 3, 3, 1));
  EXPECT_THAT(t->merges, ::testing::ElementsAre("\xe2\x96\x81 h", "h i"));
  EXPECT_EQ(t->bos_id, 1);
  EXPECT_EQ(t->eos_id, 2);
  EXPECT_EQ(t->unk_id, 0);
  EXPECT_FALSE(t->eot_id.has_value());
  EXPECT_EQ(t->add_bos_token, true);
  EXPECT_EQ(t->add_eos_token, false);
  EXPECT_FALSE(t->add_space_prefix.has_value());
  EXPECT_THAT(t->chat_template, HasSubstr("bos_token"));
}

TEST(GgufTokenizer, RefusesInconsistentFields) {
  const auto expect = [](GgufBuilder b, absl::StatusCode code, const std::string& part) {
    absl::StatusOr<GgufFile> f = FileOf(b);
    ASSERT_TRUE(f.ok()) << f.status();
    const absl::Status s = ReadGgufTokenizer(*f).status();
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(part));
  };
  expect(GgufBuilder(), absl::StatusCode::kNotFound, "tokenizer.ggml.model");
  GgufBuilder b;
  b.String("tokenizer.ggml.model", "gpt2").Strings("tokenizer.ggml.tokens", {"a", "b"});
  b.F32s("tokenizer.ggml.scores", {1});
  expect(b, absl::StatusCode::kInvalidArgument, "has 1 entries for 2 tokens");
  GgufBuilder id;
  id.String("tokenizer.ggml.model", "gpt2").Strings("tokenizer.ggml.tokens", {"a", "b"});
  id.U32("tokenizer.ggml.eos_token_id", 2);
  expect(id, absl::StatusCode::kInvalidArgument, "\"tokenizer.ggml.eos_token_id\"");
  GgufBuilder typed;
  typed.String("tokenizer.ggml.model", "gpt2").U32("tokenizer.ggml.tokens", 3);
  expect(typed, absl::StatusCode::kInvalidArgument, "not an array of strings");
}

}  // namespace
}  // namespace kiln::models
