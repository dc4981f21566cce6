// The Llama model on the GPU: the golden text, and a Llama-3.2-1B-shaped
// model (random bf16 weights) against the CPU reference.
#include <cmath>
#include <fstream>
#include <sstream>

#include "models/generate.h"
#include "models/load_model.h"
#include "models/quantize_weights.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

#define KILN_REQUIRE_GPU() \
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s

const std::string kModels = std::string(KILN_SHARED_DIR) + "/models";

TEST(GpuModel, GreedyStories260KOnCudaPrintsTheGoldenText) {
  KILN_REQUIRE_GPU();
  absl::StatusOr<LlamaModel> cpu_model = LoadModel(kModels + "/stories260K.bin");
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status();
  absl::StatusOr<LlamaModel> model = cpu_model->To(Device::Cuda());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<LoadedTokenizer> tokenizer =
      LoadTokenizerFor(kModels + "/stories260K.bin", kModels + "/tok512.bin", 512);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  GenerateOptions options;
  options.prompt = "Once upon a time";
  options.steps = 64;
  options.sampling.temperature = 0;
  std::string text;
  absl::StatusOr<GenerateStats> stats =
      Generate(*model, *tokenizer, options,
               [&](absl::string_view piece) { text.append(piece.data(), piece.size()); });
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::ifstream in(kModels + "/stories260K.golden.txt", std::ios::binary);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str());
}

LlamaWeights ToHost(const LlamaWeights& w) {
  LlamaWeights out = w;
  std::vector<Tensor> all;
  const auto move = [&](Tensor& t) {
    t = to(t, Device::Cpu());
    all.push_back(t);
  };
  move(out.embedding);
  move(out.final_norm);
  out.classifier = out.embedding;
  for (LlamaLayerWeights& l : out.layers) {
    for (Tensor* t : {&l.attention_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate,
                      &l.w_up, &l.w_down}) {
      move(*t);
    }
  }
  EXPECT_TRUE(RealizeAll(all).ok());
  return out;
}

// Runs a 16-token prefill and 8 decode steps; returns each step's logits.
std::vector<std::vector<float>> RunSteps(const LlamaModel& model, const std::vector<int32_t>& tokens) {
  absl::StatusOr<KvCache> cache = model.NewCache(model.device());
  EXPECT_TRUE(cache.ok()) << cache.status();
  std::vector<std::vector<float>> logits;
  int64_t pos = 0;
  const auto step = [&](std::vector<int32_t> ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    const Symbol symbol = model.PositionSymbol(n);
    Tensor out = model.Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(symbol), *cache);
    std::vector<Tensor> all = {out};
    all.insert(all.end(), cache->k.begin(), cache->k.end());
    all.insert(all.end(), cache->v.begin(), cache->v.end());
    EXPECT_TRUE(RealizeAll(all, {{symbol, pos}}).ok());
    pos += n;
    logits.push_back(kiln::testing::ReadF32(out));
  };
  step(std::vector<int32_t>(tokens.begin(), tokens.begin() + 16));
  for (size_t i = 16; i < tokens.size(); ++i) step({tokens[i]});
  return logits;
}

// The prefill and decode steps' logits (RunSteps, 24 tokens) on the GPU
// model within 2% (relative L2) of the CPU model's.
void ExpectSameSteps(const LlamaModel& gpu, const LlamaModel& cpu, const std::string& label) {
  const int64_t vocab = gpu.config().vocab_size;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  const std::vector<std::vector<float>> on_gpu = RunSteps(gpu, tokens);
  const std::vector<std::vector<float>> on_cpu = RunSteps(cpu, tokens);
  ASSERT_EQ(on_gpu.size(), 9u);
  for (size_t s = 0; s < on_gpu.size(); ++s) {
    const double error = testing::RelativeL2(on_gpu[s], on_cpu[s]);
    EXPECT_LT(error, 2e-2) << label << " step " << s;
    std::printf("%s step %zu: relative L2 error %.3g\n", label.c_str(), s, error);
  }
}

TEST(GpuModel, Llama1BShapedLogitsMatchTheCpuReference) {
  KILN_REQUIRE_GPU();
  const LlamaConfig c = Llama1BShapedConfig(64);
  absl::StatusOr<LlamaWeights> random = RandomLlamaWeights(c, 100, Device::Cuda());
  ASSERT_TRUE(random.ok()) << random.status();
  const LlamaWeights& gpu_weights = *random;
  absl::StatusOr<LlamaModel> gpu = LlamaModel::Create(c, gpu_weights);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  absl::StatusOr<LlamaModel> cpu = LlamaModel::Create(c, ToHost(gpu_weights));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ExpectSameSteps(*gpu, *cpu, "bf16");
}

// Packed Q8_0 / Q4_0 weights, on the GPU decoded inside the decode
// products (and dequantized to a buffer for the prefill's), against the
// same packed model on the CPU, odd vocab included.
TEST(GpuModel, QuantizedLogitsMatchTheCpuReference) {
  KILN_REQUIRE_GPU();
  LlamaConfig c = Llama1BShapedConfig(64);
  c.dim = 256;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 608;  // 19 blocks of 32
  c.vocab_size = 1001;
  for (const QuantFormat format : {QuantFormat::kQ8_0, QuantFormat::kQ4_0}) {
    SCOPED_TRACE(std::string(QuantName(format)));
    absl::StatusOr<LlamaWeights> weights = RandomLlamaWeights(c, 11, Device::Cpu());
    ASSERT_TRUE(weights.ok()) << weights.status();
    ASSERT_TRUE(QuantizeLinearWeights(*weights, c.tied_embeddings, format).ok());
    absl::StatusOr<LlamaModel> cpu = LlamaModel::Create(c, *weights);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    absl::StatusOr<LlamaModel> gpu = cpu->To(Device::Cuda());
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    ExpectSameSteps(*gpu, *cpu, std::string(QuantName(format)));
  }
}

}  // namespace
}  // namespace kiln::models
