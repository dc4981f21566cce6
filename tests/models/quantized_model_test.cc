// Llama models with packed (block-quantized) weights on the CPU executor:
// quantizing at load, the packed path against the same weights decoded
// once, the decode step's lowering (products decode the blocks; nothing
// stores a weight unpacked), and the errors.
#include <cmath>

#include "models/llama.h"
#include "models/llama2c_loader.h"
#include "models/load_model.h"
#include "models/quantize_weights.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "ops/quant.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/lower.h"
#include "tests/models/tiny_llama_config.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::testing::HasSubstr;

const std::string kStories = std::string(KILN_SHARED_DIR) + "/models/stories260K.bin";

// Every projection and the classifier, with names for messages.
std::vector<std::pair<std::string, const Tensor*>> Matrices(const LlamaWeights& w) {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LlamaLayerWeights& l = w.layers[i];
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      out.push_back({absl::StrCat("layer ", i), t});
    }
  }
  out.push_back({"classifier", &w.classifier});
  return out;
}

// The same weights with every packed one decoded once into a realized tensor.
LlamaWeights Unpacked(const LlamaWeights& packed) {
  LlamaWeights w = packed;
  std::vector<Tensor> all;
  const auto decode = [&](Tensor& t) {
    if (!AsPackedWeight(t)) return;
    t = contiguous(t);
    all.push_back(t);
  };
  decode(w.embedding);
  decode(w.classifier);
  for (LlamaLayerWeights& l : w.layers) {
    for (Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) decode(*t);
  }
  EXPECT_TRUE(RealizeAll(all).ok());
  if (packed.classifier.node() == packed.embedding.node()) w.classifier = w.embedding;
  return w;
}

// Greedy tokens and each step's logits: a prefill of `prompt`, then `steps` decode steps.
struct GreedyRun {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};

GreedyRun Greedy(const LlamaModel& model, const std::vector<int32_t>& prompt, int steps) {
  GreedyRun run;
  absl::StatusOr<KvCache> cache = model.NewCache();
  EXPECT_TRUE(cache.ok()) << cache.status();
  std::vector<int32_t> feed = prompt;
  int64_t at = 0;
  for (int s = 0; s <= steps; ++s) {
    const int64_t n = static_cast<int64_t>(feed.size());
    const Symbol pos = model.PositionSymbol(n);
    Tensor logits = model.Forward(Tensor::FromHost<int32_t>(feed, {n}), Dim(pos), *cache, false);
    std::vector<Tensor> all = {logits};
    all.insert(all.end(), cache->k.begin(), cache->k.end());
    all.insert(all.end(), cache->v.begin(), cache->v.end());
    EXPECT_TRUE(RealizeAll(all, {{pos, at}}).ok());
    absl::StatusOr<std::vector<float>> values = logits.to_host<float>();
    EXPECT_TRUE(values.ok()) << values.status();
    if (!values.ok()) return run;
    run.logits.push_back(*values);
    const int32_t next = static_cast<int32_t>(std::max_element(values->begin(), values->end()) - values->begin());
    run.tokens.push_back(next);
    at += n;
    feed = {next};
  }
  return run;
}

class QuantizedLlama : public ::testing::TestWithParam<std::tuple<QuantFormat, DType, bool>> {};

// The packed model computes exactly what the decoded weights compute: the
// CPU decodes each block as the op's reference does, rounded to the dtype.
TEST_P(QuantizedLlama, MatchesTheSameWeightsDecodedOnce) {
  const auto [format, dtype, merge] = GetParam();
  LlamaConfig config = kiln::testing::TinyLlamaConfig(96);
  config.dtype = dtype;
  if (QuantInfo(format).block_size == 256) {
    // K-quant rows are whole super-blocks of 256 values.
    config.dim = 256;
    config.hidden_dim = 512;
  }
  absl::StatusOr<LlamaWeights> weights = RandomLlamaWeights(config, 7, Device::Cpu());
  ASSERT_TRUE(weights.ok()) << weights.status();
  LlamaWeights packed = *weights;
  KILN_ASSERT_OK(QuantizeLinearWeights(packed, config.tied_embeddings, format));
  for (const auto& [name, t] : Matrices(packed)) {
    const std::optional<PackedWeight> p = AsPackedWeight(*t);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(p->format, format) << name;
    EXPECT_EQ(p->dtype, dtype) << name;
  }
  EXPECT_EQ(packed.embedding.node(), packed.classifier.node());  // tied: one packed table
  EXPECT_TRUE(packed.final_norm.is_realized());

  absl::StatusOr<LlamaModel> quantized = LlamaModel::Create(config, packed, merge);
  ASSERT_TRUE(quantized.ok()) << quantized.status();
  absl::StatusOr<LlamaModel> decoded = LlamaModel::Create(config, Unpacked(packed), merge);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const std::vector<int32_t> prompt = {3, 17, 40, 5};
  const GreedyRun q = Greedy(*quantized, prompt, 4), d = Greedy(*decoded, prompt, 4);
  EXPECT_EQ(q.tokens, d.tokens);
  ASSERT_EQ(q.logits.size(), d.logits.size());
  for (size_t s = 0; s < q.logits.size(); ++s) EXPECT_EQ(q.logits[s], d.logits[s]) << "step " << s;

  // And near the unquantized model: Q8_0 closely, Q4_0 loosely.
  absl::StatusOr<LlamaModel> plain = LlamaModel::Create(config, *weights, merge);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const GreedyRun p = Greedy(*plain, prompt, 0);
  float largest = 0, worst = 0;
  for (size_t i = 0; i < p.logits[0].size(); ++i) {
    largest = std::max(largest, std::abs(p.logits[0][i]));
    worst = std::max(worst, std::abs(p.logits[0][i] - q.logits[0][i]));
  }
  EXPECT_LE(worst, (format == QuantFormat::kQ8_0 ? 0.02f : 0.2f) * largest) << "largest logit " << largest;
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedLlama,
                         ::testing::Combine(::testing::Values(QuantFormat::kQ8_0, QuantFormat::kQ4_0,
                                                              QuantFormat::kQ4_K),
                                            ::testing::Values(DType::kF32, DType::kBF16), ::testing::Bool()));

// A decode step and a 5-token prefill lowered as on any device: every
// product reads its weight's blocks (none is decoded into a buffer); only
// the embedding's gathered rows are decoded by a kernel of their own.
TEST(QuantizedLlamaLowering, ProductsReadTheBlocks) {
  for (const auto& [merge, tokens] : std::vector<std::pair<bool, int64_t>>{{false, 1}, {true, 1}, {true, 5}}) {
    SCOPED_TRACE(absl::StrCat(tokens, " tokens, ", merge ? "merged" : "unmerged"));
    LlamaConfig config = kiln::testing::TinyLlamaConfig(96);
    config.dtype = DType::kBF16;
    absl::StatusOr<LlamaWeights> weights = RandomLlamaWeights(config, 3, Device::Cpu());
    ASSERT_TRUE(weights.ok()) << weights.status();
    KILN_ASSERT_OK(QuantizeLinearWeights(*weights, config.tied_embeddings, QuantFormat::kQ8_0));
    absl::StatusOr<LlamaModel> model = LlamaModel::Create(config, *weights, merge);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<KvCache> cache = model->NewCache();
    ASSERT_TRUE(cache.ok()) << cache.status();
    const Symbol pos = model->PositionSymbol(tokens);
    const std::vector<int32_t> ids(static_cast<size_t>(tokens), 5);
    std::vector<Tensor> outputs = {model->Forward(Tensor::FromHost<int32_t>(ids, {tokens}), Dim(pos), *cache, false)};
    outputs.insert(outputs.end(), cache->k.begin(), cache->k.end());
    outputs.insert(outputs.end(), cache->v.begin(), cache->v.end());
    absl::StatusOr<Trace> trace = Trace::Collect(outputs);
    ASSERT_TRUE(trace.ok()) << trace.status();
    absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    int decoding_products = 0, dequant_ops = 0;
    for (const ugraph::Kernel& k : lowered->graph.kernels) {
      if (k.block.kind == ugraph::BlockKind::kMatmul && k.block.inputs[1].quant) ++decoding_products;
      for (const ugraph::ScalarOp& op : k.block.epilogue.ops) dequant_ops += op.kind == ugraph::ScalarOp::Kind::kDequant;
    }
    // q, k, v (one product merged), o, gate, up, down per layer, and the classifier.
    EXPECT_EQ(decoding_products, config.n_layers * (merge ? 5 : 7) + 1);
    EXPECT_EQ(dequant_ops, 1);
    // Every kernel of the step compiles (NVRTC needs no GPU).
    absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
    if (!nvrtc.ok()) continue;
    for (size_t k = 0; k < lowered->graph.kernels.size(); ++k) {
      absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(lowered->graph, static_cast<int>(k));
      ASSERT_TRUE(source.ok()) << source.status();
      absl::StatusOr<std::string> cubin =
          jit::CompileToCubin(**nvrtc, codegen::AssembleSource(source->source), jit::CompileOptions());
      EXPECT_TRUE(cubin.ok()) << "kernel " << k << ": " << cubin.status();
    }
  }
}

TEST(QuantizeLinearWeights, NamesTheWeightWhoseRowsAreNotWholeBlocks) {
  absl::StatusOr<LoadedModel> m = LoadLlama2c(kStories);  // hidden 172: w_down's rows are not 32s
  ASSERT_TRUE(m.ok()) << m.status();
  absl::Status s = QuantizeLinearWeights(m->weights, m->config.tied_embeddings, QuantFormat::kQ8_0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("layers.0.w_down"));
  EXPECT_THAT(s.message(), HasSubstr("whole blocks of 32"));
  EXPECT_EQ(QuantizeLinearWeights(m->weights, true, QuantFormat::kQ6_K).code(), absl::StatusCode::kUnimplemented);
}

TEST(QuantizeLinearWeights, LoadCheckpointQuantizesAndNamesThePathOnError) {
  LoadOptions options;
  options.quantize = QuantFormat::kQ8_0;
  absl::StatusOr<LoadedModel> m = LoadCheckpoint(kStories, options);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr(kStories));
}

}  // namespace
}  // namespace kiln::models
