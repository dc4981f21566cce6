// The superoptimizer in the CUDA executor's path: plain tensor code realized
// on the GPU runs the searched kernel (one launch) and matches the CPU; the
// model's text is unchanged with the search on.
#include <fstream>
#include <optional>
#include <sstream>

#include "gtest/gtest.h"
#include "models/generate.h"
#include "models/load_model.h"
#include "models/mla.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search_trace.h"
#include "tests/models/random_mla_weights.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

class GpuSearchTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
    cache_ = std::make_unique<testing::ScopedTempDir>("search_trace");
    TraceSearchOptions options;
    options.search.cache_dir = cache_->path();
    options.search.budget_seconds = 20;
    EnableSuperoptimizer(*GetCudaExecutor(), options);
  }
  void TearDown() override {
    if (GetCudaExecutor()) GetCudaExecutor()->set_region_search(nullptr);
  }
  // The Llama block the Llama tests run (f16, 4 query and 2 KV heads of 64,
  // random weights), on the CPU (cpu_) and on the GPU (gpu_).
  void CreateLlama() {
    const models::LlamaWeights weights = testing::ValueOrFail(models::RandomLlamaWeights(config_, 7, Device::Cpu()));
    absl::StatusOr<models::LlamaModel> cpu = models::LlamaModel::Create(config_, weights);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    absl::StatusOr<models::LlamaModel> gpu = cpu->To(Device::Cuda());
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    cpu_.emplace(*std::move(cpu));
    gpu_.emplace(*std::move(gpu));
  }
  std::unique_ptr<testing::ScopedTempDir> cache_;
  const models::LlamaConfig config_{.dim = 256, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .hidden_dim = 512,
                                    .vocab_size = 256, .max_seq_len = 1024, .dtype = DType::kF16};
  std::optional<models::LlamaModel> cpu_, gpu_;
};

TEST_F(GpuSearchTrace, FusedCasesRunAsOneSearchedKernel) {
  for (const char* name :
       {"rmsnorm_linear_bs1", "gated_mlp_bs8", "lora_r16", "seed_attention", "qknorm_gqa_bs1"}) {
    SCOPED_TRACE(name);
    search::FusedCase gpu = testing::ValueOrFail(search::MakeFusedCase(name, Device::Cuda()));
    search::FusedCase cpu = testing::ValueOrFail(search::MakeFusedCase(name, Device::Cpu()));
    GetCudaExecutor()->ResetStats();
    const std::vector<float> got = testing::ReadF32(gpu.output);
    EXPECT_EQ(GetCudaExecutor()->stats().launches, 1);
    const std::vector<float> want = testing::ReadF32(cpu.output);
    testing::ExpectWithinScale(got, want, 1e-2);
  }
}

// How many of the trace's regions the executor's search (as enabled) turns
// into a searched kernel with a softmax inside (its exp): attention.
int SearchedAttentions(const Trace& trace) {
  int attention = 0;
  for (const lowering::FusedRegion& f : GetCudaExecutor()->region_search()(trace)) {
    bool exp = false;
    for (const Node* n : f.interior) exp |= n->op == OpKind::kExp;
    attention += exp;
  }
  return attention;
}

// Outputs of one forward step: the logits, then the cache.
std::vector<Tensor> StepOutputs(const Tensor& logits, const models::KvCache& cache) {
  std::vector<Tensor> out = {logits};
  out.insert(out.end(), cache.k.begin(), cache.k.end());
  out.insert(out.end(), cache.v.begin(), cache.v.end());
  return out;
}

// A decode step of the Llama block (f16, grouped KV heads, head dim 64)
// runs its attention as a searched kernel over the KV cache: one kernel per
// layer whatever the KV length (a symbol), matching the CPU at short and
// long contexts.
TEST_F(GpuSearchTrace, LlamaDecodeAttentionIsSearchedOverTheCache) {
  ASSERT_NO_FATAL_FAILURE(CreateLlama());
  const models::LlamaConfig& config = config_;
  std::optional<models::LlamaModel>& cpu = cpu_;
  std::optional<models::LlamaModel>& gpu = gpu_;
  const Symbol pos = gpu->PositionSymbol(1);
  for (int prompt_length : {5, 300}) {
    SCOPED_TRACE(prompt_length);
    models::KvCache cpu_cache = testing::ValueOrFail(cpu->NewCache());
    models::KvCache gpu_cache = testing::ValueOrFail(gpu->NewCache(Device::Cuda()));
    std::vector<int32_t> prompt(prompt_length);
    for (int i = 0; i < prompt_length; ++i) prompt[i] = (i * 37 + 11) % config.vocab_size;
    // The prefill by the default lowering: this test is about decode.
    GetCudaExecutor()->set_region_search(nullptr);
    const Tensor tokens = Tensor::FromHost<int32_t>(prompt, {prompt_length});
    KILN_ASSERT_OK(RealizeAll(StepOutputs(cpu->Forward(tokens, Dim(0), cpu_cache), cpu_cache)));
    KILN_ASSERT_OK(RealizeAll(StepOutputs(gpu->Forward(tokens, Dim(0), gpu_cache), gpu_cache)));
    TraceSearchOptions options;
    options.search.cache_dir = cache_->path();
    options.search.budget_seconds = 8;
    EnableSuperoptimizer(*GetCudaExecutor(), options);
    for (int p = prompt_length; p < prompt_length + 3; ++p) {
      SCOPED_TRACE(p);
      const Tensor token = Tensor::FromHost<int32_t>({(p * 53 + 5) % config.vocab_size}, {1});
      const std::vector<Tensor> want = StepOutputs(cpu->Forward(token, Dim(pos), cpu_cache), cpu_cache);
      const std::vector<Tensor> got = StepOutputs(gpu->Forward(token, Dim(pos), gpu_cache), gpu_cache);
      // Each layer's attention is one searched kernel.
      if (p == prompt_length) {
        EXPECT_EQ(SearchedAttentions(testing::ValueOrFail(Trace::Collect(got))), config.n_layers);
      }
      KILN_ASSERT_OK(RealizeAll(want, {{pos, p}}));
      KILN_ASSERT_OK(RealizeAll(got, {{pos, p}}));
      testing::ExpectWithinScale(testing::ReadF32(got[0]), testing::ReadF32(want[0]), 2e-2);
    }
  }
}

// The Llama block's prefill (several queries: causal attention) runs its
// attention as a searched kernel with the mask inside, matching the CPU at
// every position: a first chunk at position 0, then a second after it
// (keys cached before the queries).
TEST_F(GpuSearchTrace, LlamaPrefillAttentionIsSearchedAndCausal) {
  ASSERT_NO_FATAL_FAILURE(CreateLlama());
  const models::LlamaConfig& config = config_;
  std::optional<models::LlamaModel>& cpu = cpu_;
  std::optional<models::LlamaModel>& gpu = gpu_;
  for (int chunk : {5, 130}) {
    SCOPED_TRACE(chunk);
    models::KvCache cpu_cache = testing::ValueOrFail(cpu->NewCache());
    models::KvCache gpu_cache = testing::ValueOrFail(gpu->NewCache(Device::Cuda()));
    const Symbol start = gpu->PositionSymbol(chunk);
    for (int c = 0; c < 2; ++c) {
      SCOPED_TRACE(c);
      std::vector<int32_t> ids(chunk);
      for (int i = 0; i < chunk; ++i) ids[i] = ((c * chunk + i) * 37 + 11) % config.vocab_size;
      const Tensor tokens = Tensor::FromHost<int32_t>(ids, {chunk});
      const std::vector<Tensor> want =
          StepOutputs(cpu->Forward(tokens, Dim(start), cpu_cache, /*all_positions=*/true), cpu_cache);
      const std::vector<Tensor> got =
          StepOutputs(gpu->Forward(tokens, Dim(start), gpu_cache, /*all_positions=*/true), gpu_cache);
      EXPECT_EQ(SearchedAttentions(testing::ValueOrFail(Trace::Collect(got))), config.n_layers);
      KILN_ASSERT_OK(RealizeAll(want, {{start, c * chunk}}));
      KILN_ASSERT_OK(RealizeAll(got, {{start, c * chunk}}));
      testing::ExpectWithinScale(testing::ReadF32(got[0]), testing::ReadF32(want[0]), 2e-2);
    }
  }
}

// The MLA block's decode steps on the GPU, with the superoptimizer on:
// its attention is the searched kernel over the latent cache (K and V never
// formed), matching the CPU step after step.
TEST_F(GpuSearchTrace, MlaDecodeMatchesTheCpu) {
  const models::MlaConfig config{.dim = 96, .n_heads = 4, .head_dim = 16, .latent_dim = 32, .max_seq_len = 200};
  absl::StatusOr<models::MlaAttention> cpu =
      models::MlaAttention::Create(config, testing::RandomMlaWeights(config, 11, 0.2));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<models::MlaAttention> gpu =
      models::MlaAttention::Create(config, testing::RandomMlaWeights(config, 11, 0.2, Device::Cuda()));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  Tensor cpu_cache = testing::ValueOrFail(cpu->NewCache());
  Tensor gpu_cache = testing::ValueOrFail(gpu->NewCache(Device::Cuda()));
  // A prompt of 130 positions by the default lowering, then decode steps searched.
  GetCudaExecutor()->set_region_search(nullptr);
  const Tensor prompt = random_normal({130, config.dim}, 3);
  KILN_ASSERT_OK(RealizeAll({cpu->Forward(prompt, Dim(0), cpu_cache), cpu_cache}));
  KILN_ASSERT_OK(RealizeAll({gpu->Forward(to(prompt, Device::Cuda()), Dim(0), gpu_cache), gpu_cache}));
  TraceSearchOptions options;
  options.search.cache_dir = cache_->path();
  options.search.budget_seconds = 20;
  EnableSuperoptimizer(*GetCudaExecutor(), options);
  GetCudaExecutor()->ResetStats();
  const Symbol pos("pos", config.max_seq_len - 1);
  for (int p = 130; p < 133; ++p) {
    SCOPED_TRACE(p);
    const Tensor x = random_normal({1, config.dim}, 100 + p);
    const Tensor want = cpu->Forward(x, Dim(pos), cpu_cache);
    const Tensor got = gpu->Forward(to(x, Device::Cuda()), Dim(pos), gpu_cache);
    if (p == 130) {
      EXPECT_EQ(SearchedAttentions(testing::ValueOrFail(Trace::Collect({got, gpu_cache}))), 1);
    }
    KILN_ASSERT_OK(RealizeAll({want, cpu_cache}, {{pos, p}}));
    KILN_ASSERT_OK(RealizeAll({got, gpu_cache}, {{pos, p}}));
    testing::ExpectWithinScale(testing::ReadF32(got), testing::ReadF32(want), 1e-3);
  }
  EXPECT_GE(GetCudaExecutor()->stats().regions_fused, 1);
}

TEST_F(GpuSearchTrace, Stories260KKeepsItsGoldenText) {
  const std::string models = std::string(KILN_SHARED_DIR) + "/models";
  absl::StatusOr<models::LlamaModel> cpu_model = models::LoadModel(models + "/stories260K.bin");
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status();
  absl::StatusOr<models::LlamaModel> model = cpu_model->To(Device::Cuda());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<models::LoadedTokenizer> tokenizer =
      models::LoadTokenizerFor(models + "/stories260K.bin", models + "/tok512.bin", 512);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  models::GenerateOptions options;
  options.prompt = "Once upon a time";
  options.steps = 64;
  options.sampling.temperature = 0;
  std::string text;
  absl::StatusOr<models::GenerateStats> stats = models::Generate(
      *model, *tokenizer, options, [&](absl::string_view piece) { text.append(piece.data(), piece.size()); });
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::ifstream in(models + "/stories260K.golden.txt", std::ios::binary);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str());
}

}  // namespace
}  // namespace kiln
