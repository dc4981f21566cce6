// The superoptimizer in the CUDA executor's path: plain tensor code realized
// on the GPU runs the searched kernel (one launch) and matches the CPU; the
// model's text is unchanged with the search on.
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "models/generate.h"
#include "models/load_model.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/search/fused_cases.h"
#include "optimizer/search_trace.h"
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
  std::unique_ptr<testing::ScopedTempDir> cache_;
};

TEST_F(GpuSearchTrace, FusedCasesRunAsOneSearchedKernel) {
  for (const std::string& name :
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

TEST_F(GpuSearchTrace, Stories260KKeepsItsGoldenText) {
  const std::string models = std::string(KILN_SHARED_DIR) + "/models";
  absl::StatusOr<models::LlamaModel> cpu_model = models::LoadModel(models + "/stories260K.bin");
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status();
  absl::StatusOr<models::LlamaModel> model = cpu_model->To(Device::Cuda());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<models::Tokenizer> tokenizer =
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
