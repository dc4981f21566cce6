// Tiny random-weight checkpoints saved by transformers 5.17 (Llama 3 with
// llama3 RoPE scaling, Qwen2 with biases and sharded weights, Qwen3 in bf16
// with QK-norm and a head dim apart from hidden/heads, Mistral with a
// SentencePiece tokenizer) and GGUF files written by llama.cpp's gguf-py,
// against the logits and greedy tokens transformers computed
// (tests/models/references/make_references.py).
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/generate.h"
#include "models/load_model.h"
#include "models/session.h"
#include "nlohmann/json.hpp"
#include "optimizer/cuda_executor.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using nlohmann::json;

const std::string kReferences = std::string(KILN_SOURCE_DIR) + "/tests/models/references";

json ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  json j = json::parse(s.str(), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path;
  return j;
}

// ||a - b|| / ||b|| of one row.
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// The model's logits at every position of `ids`.
std::vector<std::vector<float>> AllLogits(const LlamaModel& model, const std::vector<int32_t>& ids) {
  absl::StatusOr<KvCache> cache = model.NewCache(model.device());
  EXPECT_TRUE(cache.ok()) << cache.status();
  const int64_t n = static_cast<int64_t>(ids.size());
  const Tensor logits =
      model.Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(0), *cache, /*all_positions=*/true);
  const std::vector<float> flat = testing::ReadF32(logits);
  const size_t vocab = model.config().vocab_size;
  std::vector<std::vector<float>> rows;
  for (size_t r = 0; r * vocab < flat.size(); ++r) {
    rows.emplace_back(flat.begin() + r * vocab, flat.begin() + (r + 1) * vocab);
  }
  return rows;
}

std::vector<int32_t> Greedy(const LlamaModel& model, const std::vector<int32_t>& prompt, int steps) {
  absl::StatusOr<Session> session = Session::Create(model);
  EXPECT_TRUE(session.ok());
  std::vector<int32_t> out;
  absl::StatusOr<std::vector<float>> logits = session->Feed(prompt);
  for (int i = 0; i < steps && logits.ok(); ++i) {
    const int32_t next = static_cast<int32_t>(
        std::max_element(logits->begin(), logits->end()) - logits->begin());
    out.push_back(next);
    logits = session->Feed({next});
  }
  EXPECT_TRUE(logits.ok()) << logits.status();
  return out;
}

void ExpectLogitsMatch(const LlamaModel& model, const json& golden, double tolerance) {
  const std::vector<int32_t> ids = golden["prompt_ids"];
  const std::vector<std::vector<float>> rows = AllLogits(model, ids);
  ASSERT_EQ(rows.size(), golden["logits"].size());
  double worst = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    worst = std::max(worst, RelativeError(rows[r], golden["logits"][r].get<std::vector<float>>()));
  }
  EXPECT_LE(worst, tolerance) << "worst row's relative error";
}

struct HfCase {
  std::string name;
  double tolerance;    // of the logits, relative
  bool exact_greedy;   // f32 models: the greedy tokens match exactly
};

class TinyHfModel : public ::testing::TestWithParam<HfCase> {};

TEST_P(TinyHfModel, MatchesTransformers) {
  const HfCase& c = GetParam();
  const std::string dir = kReferences + "/models/" + c.name;
  const json golden = ReadJson(dir + "/golden.json");
  absl::StatusOr<LlamaModel> model = LoadModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<LoadedTokenizer> tokenizer = LoadTokenizerFor(dir, "", model->config().vocab_size);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<std::vector<int32_t>> ids =
      tokenizer->tokenizer->Encode(golden["prompt"].get<std::string>(), {});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, golden["prompt_ids"].get<std::vector<int32_t>>());
  ExpectLogitsMatch(*model, golden, c.tolerance);
  if (c.exact_greedy) {
    EXPECT_EQ(Greedy(*model, golden["prompt_ids"], 12), golden["greedy"].get<std::vector<int32_t>>());
  }
  if (golden.contains("chat_text")) {
    ASSERT_NE(tokenizer->chat_template, nullptr) << tokenizer->no_template_reason;
    ChatRenderOptions options;
    options.add_generation_prompt = true;
    absl::StatusOr<std::string> text =
        tokenizer->chat_template->Render(nlohmann::ordered_json(golden["chat_messages"]), options);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, golden["chat_text"].get<std::string>());
    absl::StatusOr<std::vector<int32_t>> chat_ids =
        tokenizer->tokenizer->Encode(*text, {.add_special_tokens = false});
    ASSERT_TRUE(chat_ids.ok());
    EXPECT_EQ(*chat_ids, golden["chat_ids"].get<std::vector<int32_t>>());
    if (c.exact_greedy) {
      EXPECT_EQ(Greedy(*model, *chat_ids, 8), golden["chat_greedy"].get<std::vector<int32_t>>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    References, TinyHfModel,
    ::testing::Values(HfCase{"tiny-llama3", 1e-4, true}, HfCase{"tiny-qwen2", 1e-4, true},
                      HfCase{"tiny-qwen3", 2e-2, false}, HfCase{"tiny-mistral", 1e-4, true}),
    [](const ::testing::TestParamInfo<HfCase>& info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(TinyHfModel, ConfigsAreReadAsTransformersWroteThem) {
  absl::StatusOr<LoadedModel> llama = LoadCheckpoint(kReferences + "/models/tiny-llama3");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->config.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_FALSE(llama->config.tied_embeddings);
  absl::StatusOr<LoadedModel> qwen2 = LoadCheckpoint(kReferences + "/models/tiny-qwen2");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_TRUE(qwen2->config.qkv_bias);
  EXPECT_TRUE(qwen2->config.tied_embeddings);
  absl::StatusOr<LoadedModel> qwen3 = LoadCheckpoint(kReferences + "/models/tiny-qwen3");
  ASSERT_TRUE(qwen3->config.qk_norm);
  EXPECT_EQ(qwen3->config.head_dim(), 32);
  EXPECT_EQ(qwen3->config.dtype, DType::kBF16);
  // --dtype f32 on a bf16 checkpoint: the same model, widened.
  absl::StatusOr<LoadedModel> widened =
      LoadCheckpoint(kReferences + "/models/tiny-qwen3", {.dtype = DType::kF32});
  ASSERT_TRUE(widened.ok()) << widened.status();
  EXPECT_EQ(widened->config.dtype, DType::kF32);
  EXPECT_EQ(widened->weights.layers[1].wq.dtype(), DType::kF32);
}

TEST(TinyHfModel, StopIdsComeFromTheConfigs) {
  absl::StatusOr<LoadedTokenizer> t =
      LoadTokenizerFor(kReferences + "/models/tiny-llama3", "", 420);
  ASSERT_TRUE(t.ok()) << t.status();
  // config.json's eos_token_id [1, 4] and tokenizer_config.json's <|eot_id|>.
  EXPECT_THAT(t->stop_ids, ::testing::UnorderedElementsAre(1, 4));
}

TEST(TinyHfModel, ContextIsCappedOnRequest) {
  absl::StatusOr<LoadedModel> m =
      LoadCheckpoint(kReferences + "/models/tiny-llama3", {.max_context = 16});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->config.max_seq_len, 16);
  EXPECT_EQ(LoadCheckpoint(kReferences + "/models/tiny-llama3", {.max_context = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

struct GgufCase {
  std::string file;
  DType dtype;
  double tolerance;
  bool exact_greedy;
};

class TinyGgufModel : public ::testing::TestWithParam<GgufCase> {};

TEST_P(TinyGgufModel, MatchesTransformersOnTheDequantizedWeights) {
  const GgufCase& c = GetParam();
  const std::string path = kReferences + "/gguf/" + c.file;
  const json golden = ReadJson(kReferences + "/gguf/goldens.json")["models"][c.file];
  ASSERT_TRUE(golden.is_object());
  absl::StatusOr<LlamaModel> model = LoadModel(path, {.dtype = c.dtype});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config().dtype, c.dtype);
  absl::StatusOr<LoadedTokenizer> tokenizer = LoadTokenizerFor(path, "", model->config().vocab_size);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<std::vector<int32_t>> ids =
      tokenizer->tokenizer->Encode(golden["prompt"].get<std::string>(), {});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, golden["prompt_ids"].get<std::vector<int32_t>>());
  ExpectLogitsMatch(*model, golden, c.tolerance);
  if (c.exact_greedy) {
    EXPECT_EQ(Greedy(*model, golden["prompt_ids"], 12), golden["greedy"].get<std::vector<int32_t>>());
  }
  EXPECT_NE(tokenizer->chat_template, nullptr);
  EXPECT_FALSE(tokenizer->stop_ids.empty());
}

INSTANTIATE_TEST_SUITE_P(
    References, TinyGgufModel,
    ::testing::Values(GgufCase{"tiny-llama3-q.gguf", DType::kF32, 1e-4, true},
                      // The fixture's K-quant blocks are random bytes, whose weights are
                      // ~50x a trained model's: rounding them to bf16 moves the logits ~9%.
                      // A wrong bf16 path would move them ~100%.
                      GgufCase{"tiny-llama3-q.gguf", DType::kBF16, 0.15, false},
                      GgufCase{"tiny-qwen2-f16.gguf", DType::kF32, 1e-4, true},
                      GgufCase{"tiny-qwen2-f16.gguf", DType::kF16, 1e-2, false},
                      GgufCase{"tiny-qwen2-bf16.gguf", DType::kF32, 1e-4, true},
                      GgufCase{"tiny-mistral-spm.gguf", DType::kF32, 1e-4, true}),
    [](const ::testing::TestParamInfo<GgufCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.size() - 5) + "_" +
                         std::string(DTypeName(info.param.dtype));
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(TinyGgufModel, SentencePieceVocabularyEncodesAsSentencepiece) {
  const std::string path = kReferences + "/gguf/tiny-mistral-spm.gguf";
  const json golden = ReadJson(kReferences + "/gguf/goldens.json")["models"]["tiny-mistral-spm.gguf"];
  const json texts = ReadJson(kReferences + "/tokenizers.json")["texts"];
  absl::StatusOr<LoadedTokenizer> t = LoadTokenizerFor(path, "", 100000);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(texts.size(), golden["tokenizer_ids"].size());
  for (size_t i = 0; i < texts.size(); ++i) {
    absl::StatusOr<std::vector<int32_t>> ids =
        t->tokenizer->Encode(texts[i].get<std::string>(), {.parse_special = false});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, golden["tokenizer_ids"][i].get<std::vector<int32_t>>()) << texts[i];
  }
}

TEST(TinyGgufModel, NativeDtypeIsTheFilesWhenUnquantized) {
  absl::StatusOr<LoadedModel> f16 = LoadCheckpoint(kReferences + "/gguf/tiny-qwen2-f16.gguf");
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(f16->config.dtype, DType::kF16);
  absl::StatusOr<LoadedModel> q = LoadCheckpoint(kReferences + "/gguf/tiny-llama3-q.gguf");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->config.dtype, DType::kF32);
  EXPECT_EQ(q->config.rope_scaling.type, RopeScaling::Type::kFactors);
}

// Generation end to end through the public loop: greedy text decodes the
// greedy tokens, and stops at a stop token.
TEST(TinyHfModel, GenerateStreamsTheGreedyText) {
  const std::string dir = kReferences + "/models/tiny-llama3";
  const json golden = ReadJson(dir + "/golden.json");
  absl::StatusOr<LlamaModel> model = LoadModel(dir);
  ASSERT_TRUE(model.ok());
  absl::StatusOr<LoadedTokenizer> tokenizer = LoadTokenizerFor(dir, "", model->config().vocab_size);
  ASSERT_TRUE(tokenizer.ok());
  GenerateOptions options;
  options.prompt = golden["prompt"];
  // Positions in all: the prompt's last pass yields the first of 12 tokens.
  options.steps = static_cast<int>(golden["prompt_ids"].size()) + 11;
  options.sampling.temperature = 0;
  options.echo_prompt = false;
  std::string text;
  absl::StatusOr<GenerateStats> stats = Generate(
      *model, *tokenizer, options, [&](absl::string_view piece) { text.append(piece.data(), piece.size()); });
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::vector<int32_t> expected;
  for (int32_t id : golden["greedy"].get<std::vector<int32_t>>()) {
    if (std::count(tokenizer->stop_ids.begin(), tokenizer->stop_ids.end(), id)) break;
    expected.push_back(id);
  }
  EXPECT_EQ(text, *tokenizer->tokenizer->Decode(expected, /*skip_special_tokens=*/true));
  EXPECT_EQ(stats->generated_tokens, static_cast<int>(expected.size()));
}

// The same checkpoints on the GPU (the default lowering): logits against
// transformers', greedy tokens exactly where the model is f32.
class GpuTinyHfModel : public ::testing::TestWithParam<HfCase> {};

TEST_P(GpuTinyHfModel, MatchesTransformers) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  const HfCase& c = GetParam();
  const std::string dir = kReferences + "/models/" + c.name;
  const json golden = ReadJson(dir + "/golden.json");
  absl::StatusOr<LlamaModel> cpu = LoadModel(dir);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<LlamaModel> model = cpu->To(Device::Cuda());
  ASSERT_TRUE(model.ok()) << model.status();
  // The GPU's f32 products may sum in another order: a looser bound than the CPU's.
  ExpectLogitsMatch(*model, golden, std::max(c.tolerance, 1e-3));
  if (c.exact_greedy) {
    EXPECT_EQ(Greedy(*model, golden["prompt_ids"], 12), golden["greedy"].get<std::vector<int32_t>>());
  }
}

INSTANTIATE_TEST_SUITE_P(
    GpuReferences, GpuTinyHfModel,
    ::testing::Values(HfCase{"tiny-llama3", 1e-4, true}, HfCase{"tiny-qwen2", 1e-4, true},
                      HfCase{"tiny-qwen3", 2e-2, false}, HfCase{"tiny-mistral", 1e-4, true}),
    [](const ::testing::TestParamInfo<HfCase>& info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

class GpuTinyGgufModel : public ::testing::TestWithParam<GgufCase> {};

TEST_P(GpuTinyGgufModel, MatchesTransformersOnTheDequantizedWeights) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  const GgufCase& c = GetParam();
  const std::string path = kReferences + "/gguf/" + c.file;
  const json golden = ReadJson(kReferences + "/gguf/goldens.json")["models"][c.file];
  absl::StatusOr<LlamaModel> cpu = LoadModel(path, {.dtype = c.dtype});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<LlamaModel> model = cpu->To(Device::Cuda());
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectLogitsMatch(*model, golden, std::max(c.tolerance, 1e-3));
}

INSTANTIATE_TEST_SUITE_P(
    GpuReferences, GpuTinyGgufModel,
    ::testing::Values(GgufCase{"tiny-llama3-q.gguf", DType::kF32, 1e-4, true},
                      GgufCase{"tiny-llama3-q.gguf", DType::kBF16, 0.15, false},
                      GgufCase{"tiny-qwen2-f16.gguf", DType::kF16, 1e-2, false},
                      GgufCase{"tiny-mistral-spm.gguf", DType::kF32, 1e-4, true}),
    [](const ::testing::TestParamInfo<GgufCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.size() - 5) + "_" +
                         std::string(DTypeName(info.param.dtype));
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace kiln::models
