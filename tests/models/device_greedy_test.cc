// DeviceGreedyToken against Sampler at temperature 0 (on the CPU executor;
// GpuModel's golden text runs it on the GPU).
#include "models/device_greedy.h"

#include <limits>

#include "gtest/gtest.h"
#include "models/decode_step.h"
#include "models/random_weights.h"
#include "models/sampler.h"
#include "models/session.h"
#include "ops/ops.h"
#include "tests/models/tiny_llama_config.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

int32_t DeviceGreedy(const std::vector<float>& logits, int64_t vocab) {
  const Tensor row = Tensor::FromHost<float>(logits, {1, static_cast<int64_t>(logits.size())});
  absl::StatusOr<std::vector<int32_t>> token = DeviceGreedyToken(row, vocab).to_host<int32_t>();
  EXPECT_TRUE(token.ok()) << token.status();
  return token.ok() ? (*token)[0] : -1;
}

int32_t SamplerGreedy(const std::vector<float>& logits, int64_t vocab) {
  Sampler sampler({.temperature = 0});
  return *sampler.Sample(absl::MakeConstSpan(logits.data(), vocab));
}

TEST(DeviceGreedy, PicksWhatTheSamplerPicksOverTheTokenizersVocabulary) {
  // Past 2048, in two stages: chunks of a divisor of the vocabulary (4095,
  // 4096, 128256), or of 1024 with the last one padded (2053, a prime).
  for (int64_t n : {1, 3, 17, 127, 2050, 2055, 4097, 4098, 128258}) {
    std::vector<float> logits = testing::ReadF32(random_normal({n}, 40 + n));
    const int64_t vocab = n > 3 ? n - 2 : n;  // padded rows are never picked
    if (n > 3) logits[n - 1] = 100;
    EXPECT_EQ(DeviceGreedy(logits, vocab), SamplerGreedy(logits, vocab)) << n;
  }
}

TEST(DeviceGreedy, TiesGoToTheLowestIndex) {
  std::vector<float> logits(300, -1);
  logits[7] = logits[250] = logits[299] = 2.5f;
  logits[3] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(DeviceGreedy(logits, 300), 7);
  EXPECT_EQ(SamplerGreedy(logits, 300), 7);
}

TEST(DeviceGreedy, TiesAcrossChunksGoToTheLowestIndex) {
  std::vector<float> logits(5000, -1);
  logits[4999] = logits[1030] = logits[3000] = 7;
  EXPECT_EQ(DeviceGreedy(logits, 5000), 1030);
  EXPECT_EQ(SamplerGreedy(logits, 5000), 1030);
}

TEST(DeviceGreedy, NoNumberIsAClearError) {
  for (int64_t n : {5, 3000}) {  // one stage and two
    const std::vector<float> logits(n, std::numeric_limits<float>::quiet_NaN());
    const int32_t token = DeviceGreedy(logits, n);
    EXPECT_EQ(token, n);
    EXPECT_EQ(DeviceGreedyError(token, n).code(), absl::StatusCode::kInvalidArgument) << token;
  }
  EXPECT_TRUE(DeviceGreedyError(4, 5).ok());
}

// A DecodeStep is the GPU's; on the CPU, Session's greedy feed records each
// step and picks what Sampler picks from the logits.
TEST(DecodeStep, NeedsAModelOnAGpuAndTheCpuFeedsGreedilyWithoutOne) {
  LlamaConfig c = kiln::testing::TinyLlamaConfig(300);
  absl::StatusOr<LlamaWeights> weights = RandomLlamaWeights(c, 3, Device::Cpu());
  ASSERT_TRUE(weights.ok()) << weights.status();
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(c, *weights);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<KvCache> cache = model->NewCache();
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ(DecodeStep::Create(*model, *cache, StepHead::Greedy(300)).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeStep::Create(*model, *cache, StepHead::Logits()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeStep::Create(*model, *cache, StepHead::Greedy(0)).status().code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<Session> greedy = Session::Create(*model);
  absl::StatusOr<Session> sampled = Session::Create(*model);
  ASSERT_TRUE(greedy.ok() && sampled.ok());
  std::vector<int32_t> next = {1, 17, 42};
  for (int step = 0; step < 4; ++step) {
    absl::StatusOr<int32_t> token = greedy->FeedGreedy(next, 250);
    absl::StatusOr<std::vector<float>> logits = sampled->Feed(next);
    ASSERT_TRUE(token.ok() && logits.ok());
    logits->resize(250);
    EXPECT_EQ(*token, SamplerGreedy(*logits, 250)) << step;
    next = {*token};
  }
  EXPECT_EQ(greedy->FeedGreedy(next, 301).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::models
