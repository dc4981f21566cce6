// Decode steps replayed from CUDA graphs (CudaExecutor::set_graphs) against
// the same steps launched kernel by kernel: the same greedy tokens and
// logits over 256 steps whose KV length crosses the attention's split
// boundaries, with the position changing each step and no re-capture.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "models/llama.h"
#include "models/mla.h"
#include "models/sampler.h"
#include "models/session.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "tests/models/random_mla_weights.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

#define KILN_REQUIRE_GPU() \
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s

using testing::ReadF32;
using testing::RelativeL2;
using testing::ValueOrFail;

constexpr int kPrefill = 16;
constexpr int kDecodeSteps = 256;

struct Decoded {
  std::vector<int32_t> tokens;            // the greedy token after each step
  std::vector<std::vector<float>> outputs;  // each step's logits (or block output)
  CudaExecutorStats stats;
};

int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A small Llama-style (or, with QK-norm and an explicit head dim, a
// Qwen3-style) bf16 model.
LlamaConfig SmallConfig(bool qwen3_style) {
  LlamaConfig c = Llama1BShapedConfig(kPrefill + kDecodeSteps + 8);
  c.dim = 256;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 512;
  c.vocab_size = 1000;
  if (qwen3_style) {
    c.explicit_head_dim = 128;
    c.qk_norm = true;
    c.rope_theta = 1e6;
    c.norm_eps = 1e-6;
  }
  return c;
}

// A prefill, then greedy decode steps feeding each step's token to the next.
Decoded DecodeGreedy(CudaExecutor& gpu, bool graphs, const LlamaModel& model) {
  gpu.set_graphs(graphs);
  gpu.ResetStats();
  KvCache cache = ValueOrFail(model.NewCache(Device::Cuda()));
  Decoded out;
  std::vector<int32_t> ids;
  for (int i = 0; i < kPrefill; ++i) ids.push_back((i * 7919 + 13) % model.config().vocab_size);
  int64_t pos = 0;
  for (int step = 0; step <= kDecodeSteps; ++step) {
    const int64_t n = static_cast<int64_t>(ids.size());
    const Symbol symbol = model.PositionSymbol(n);
    Tensor logits = model.Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(symbol), cache);
    std::vector<Tensor> all = {logits};
    all.insert(all.end(), cache.k.begin(), cache.k.end());
    all.insert(all.end(), cache.v.begin(), cache.v.end());
    EXPECT_TRUE(RealizeAll(all, {{symbol, pos}}).ok());
    pos += n;
    out.outputs.push_back(ReadF32(logits));
    out.tokens.push_back(Argmax(out.outputs.back()));
    ids = {out.tokens.back()};
  }
  out.stats = gpu.stats();
  return out;
}

void ExpectSameDecode(const Decoded& replayed, const Decoded& launched, double tolerance) {
  ASSERT_EQ(replayed.outputs.size(), launched.outputs.size());
  double worst = 0;
  for (size_t s = 0; s < launched.outputs.size(); ++s) {
    ASSERT_EQ(replayed.tokens[s], launched.tokens[s]) << "step " << s;
    const double error = RelativeL2(replayed.outputs[s], launched.outputs[s]);
    worst = std::max(worst, error);
    EXPECT_LT(error, tolerance) << "step " << s;
  }
  std::printf("%zu steps, worst relative L2 difference %.3g\n", launched.outputs.size(), worst);
}

// Every decode step after the first of its structure is a replay, and the
// position, changing each step, is a node update, not a new capture. A few
// captures come from launch shapes that change with the KV length (a split
// attention kernel launched cooperatively or not): at most `captures`.
void ExpectReplayed(const CudaExecutorStats& s, int captures = 3) {
  std::printf("graphs: %lld replays, %lld captures, %lld node updates, %lld fallbacks, %lld launches\n",
              static_cast<long long>(s.graph_replays), static_cast<long long>(s.graph_captures),
              static_cast<long long>(s.graph_node_updates), static_cast<long long>(s.graph_fallbacks),
              static_cast<long long>(s.launches));
  EXPECT_GE(s.graph_replays, kDecodeSteps - 1);
  EXPECT_GE(s.graph_captures, 1);
  EXPECT_LE(s.graph_captures, captures);
  EXPECT_EQ(s.graph_fallbacks, 0);
  EXPECT_GT(s.graph_node_updates, 0);
}

void CheckLlamaStyle(bool qwen3_style) {
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  const bool graphs = gpu->graphs();
  const LlamaConfig c = SmallConfig(qwen3_style);
  const LlamaWeights weights = ValueOrFail(RandomLlamaWeights(c, qwen3_style ? 31 : 17, Device::Cuda()));
  absl::StatusOr<LlamaModel> created = LlamaModel::Create(c, weights);
  ASSERT_TRUE(created.ok()) << created.status();
  const LlamaModel& model = *created;
  const Decoded launched = DecodeGreedy(*gpu, /*graphs=*/false, model);
  EXPECT_EQ(launched.stats.graph_replays, 0);
  const Decoded replayed = DecodeGreedy(*gpu, /*graphs=*/true, model);
  gpu->set_graphs(graphs);
  ExpectSameDecode(replayed, launched, 1e-2);
  ExpectReplayed(replayed.stats);
}

TEST(GpuGraphDecode, LlamaStepsReplayedFromAGraphMatchLaunchedSteps) {
  KILN_REQUIRE_GPU();
  CheckLlamaStyle(false);
}

TEST(GpuGraphDecode, Qwen3StyleStepsReplayedFromAGraphMatchLaunchedSteps) {
  KILN_REQUIRE_GPU();
  CheckLlamaStyle(true);
}

// Greedy decoding through Session: a prompt, 256 one-token steps, then a
// two-token feed (a new chat turn: the lazy path over the same cache) and
// 8 more steps.
std::vector<int32_t> SessionTokens(CudaExecutor& gpu, bool replay, const LlamaModel& model,
                                   CudaExecutorStats* stats) {
  gpu.set_graphs(replay);
  gpu.ResetStats();
  std::vector<int32_t> out;
  absl::StatusOr<Session> session = Session::Create(model);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return out;
  session->set_replay_steps(replay);
  const int64_t vocab = model.config().vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < kPrefill; ++i) prompt.push_back((i * 7919 + 13) % vocab);
  absl::StatusOr<int32_t> next = session->FeedGreedy(prompt, vocab);
  for (int step = 0; step < kDecodeSteps && next.ok(); ++step) {
    out.push_back(*next);
    next = session->FeedGreedy({*next}, vocab);
  }
  if (next.ok()) next = session->FeedGreedy({*next, 5}, vocab);
  for (int step = 0; step < 8 && next.ok(); ++step) {
    out.push_back(*next);
    next = session->FeedGreedy({*next}, vocab);
  }
  EXPECT_TRUE(next.ok()) << next.status();
  *stats = gpu.stats();
  return out;
}

TEST(GpuGraphDecode, ADecodeStepRecordedOnceGivesTheTokensOfStepsRecordedEachToken) {
  KILN_REQUIRE_GPU();
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  const bool graphs = gpu->graphs();
  LlamaConfig c = SmallConfig(false);
  c.max_seq_len = kPrefill + kDecodeSteps + 2 + 8;  // the prompt, the steps, a two-token feed, 8 steps
  const LlamaWeights weights = ValueOrFail(RandomLlamaWeights(c, 23, Device::Cuda()));
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(c, weights);
  ASSERT_TRUE(model.ok()) << model.status();
  CudaExecutorStats recorded_stats, replayed_stats;
  const std::vector<int32_t> recorded = SessionTokens(*gpu, false, *model, &recorded_stats);
  const std::vector<int32_t> replayed = SessionTokens(*gpu, true, *model, &replayed_stats);
  gpu->set_graphs(graphs);
  ASSERT_EQ(replayed.size(), static_cast<size_t>(kDecodeSteps + 8));
  EXPECT_EQ(replayed, recorded);
  ExpectReplayed(replayed_stats, /*captures=*/4);  // its KV length runs 10 positions further
  EXPECT_EQ(recorded_stats.graph_replays, 0);
}

// Decoding that samples on the host: each one-token Feed returns the
// logits row; with replay on, from a DecodeStep recorded once. The tokens
// are the host argmax of each row, and the same tokens come from
// FeedGreedy's pick on the GPU (a vocabulary of 4097 is reduced in two
// stages, the last chunk padded).
struct FedLogits {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> rows;
};

FedLogits SessionLogits(const LlamaModel& model, bool replay, int steps) {
  FedLogits out;
  absl::StatusOr<Session> session = Session::Create(model);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return out;
  session->set_replay_steps(replay);
  std::vector<int32_t> prompt;
  for (int i = 0; i < kPrefill; ++i) prompt.push_back((i * 7919 + 13) % model.config().vocab_size);
  absl::StatusOr<std::vector<float>> row = session->Feed(prompt);
  for (int step = 0; step < steps && row.ok(); ++step) {
    out.tokens.push_back(Argmax(*row));
    out.rows.push_back(*row);
    row = session->Feed({out.tokens.back()});
  }
  EXPECT_TRUE(row.ok()) << row.status();
  return out;
}

TEST(GpuGraphDecode, SampledStepsReadTheLogitsOfStepsRecordedEachToken) {
  KILN_REQUIRE_GPU();
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  LlamaConfig c = SmallConfig(false);
  c.vocab_size = 4097;
  const LlamaWeights weights = ValueOrFail(RandomLlamaWeights(c, 29, Device::Cuda()));
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(c, weights);
  ASSERT_TRUE(model.ok()) << model.status();
  constexpr int kSteps = 64;
  const FedLogits recorded = SessionLogits(*model, false, kSteps);
  const FedLogits replayed = SessionLogits(*model, true, kSteps);
  ASSERT_EQ(replayed.rows.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(recorded.rows.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(replayed.tokens, recorded.tokens);
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_EQ(replayed.rows[i].size(), static_cast<size_t>(c.vocab_size));
    EXPECT_LE(RelativeL2(replayed.rows[i], recorded.rows[i]), 1e-5) << "step " << i;
  }

  absl::StatusOr<Session> greedy = Session::Create(*model);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  std::vector<int32_t> prompt;
  for (int i = 0; i < kPrefill; ++i) prompt.push_back((i * 7919 + 13) % c.vocab_size);
  absl::StatusOr<int32_t> next = greedy->FeedGreedy(prompt, c.vocab_size);
  for (int step = 0; step < kSteps && next.ok(); ++step) {
    EXPECT_EQ(*next, replayed.tokens[step]) << "step " << step;
    next = greedy->FeedGreedy({*next}, c.vocab_size);
  }
  EXPECT_TRUE(next.ok()) << next.status();
}

// Tokens drawn on the GPU by FeedSampled (temperature 0.9, top-p 0.9, one
// seed): from the step recorded once with replay on, from a step recorded
// each token with it off.
std::vector<int32_t> SampledTokens(const LlamaModel& model, bool replay, int steps) {
  std::vector<int32_t> tokens;
  absl::StatusOr<Session> session = Session::Create(model);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return tokens;
  session->set_replay_steps(replay);
  Sampler sampler({.temperature = 0.9f, .top_p = 0.9f, .seed = 77});
  std::vector<int32_t> prompt;
  for (int i = 0; i < kPrefill; ++i) prompt.push_back((i * 7919 + 13) % model.config().vocab_size);
  absl::StatusOr<int32_t> next = session->FeedSampled(prompt, model.config().vocab_size, sampler);
  for (int step = 0; step < steps && next.ok(); ++step) {
    tokens.push_back(*next);
    next = session->FeedSampled({*next}, model.config().vocab_size, sampler);
  }
  EXPECT_TRUE(next.ok()) << next.status();
  return tokens;
}

TEST(GpuGraphDecode, TokensDrawnOnTheGpuAreTheSameReplayedOrRecorded) {
  KILN_REQUIRE_GPU();
  LlamaConfig c = SmallConfig(false);
  c.vocab_size = 4097;
  const LlamaWeights weights = ValueOrFail(RandomLlamaWeights(c, 31, Device::Cuda()));
  absl::StatusOr<LlamaModel> model = LlamaModel::Create(c, weights);
  ASSERT_TRUE(model.ok()) << model.status();
  constexpr int kSteps = 64;
  const std::vector<int32_t> recorded = SampledTokens(*model, false, kSteps);
  const std::vector<int32_t> replayed = SampledTokens(*model, true, kSteps);
  ASSERT_EQ(replayed.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(replayed, recorded);
  // Random weights give nearly flat logits: a sampled decode wanders.
  const std::set<int32_t> distinct(replayed.begin(), replayed.end());
  EXPECT_GT(distinct.size(), static_cast<size_t>(kSteps / 2));
}

// An MLA attention block's decode steps over its latent cache.
Decoded DecodeMla(CudaExecutor& gpu, bool graphs, const MlaAttention& mla) {
  gpu.set_graphs(graphs);
  gpu.ResetStats();
  Tensor cache = ValueOrFail(mla.NewCache(Device::Cuda()));
  const Symbol pos("pos", mla.config().max_seq_len - 1);
  Decoded out;
  for (int step = 0; step < kDecodeSteps; ++step) {
    Tensor x = random_normal({1, mla.config().dim}, 1000 + step);
    EXPECT_TRUE(x.realize().ok());
    x = to(x, Device::Cuda());
    EXPECT_TRUE(x.realize().ok());
    Tensor y = mla.Forward(x, Dim(pos), cache);
    EXPECT_TRUE(RealizeAll({y, cache}, {{pos, step}}).ok());
    out.outputs.push_back(ReadF32(y));
    out.tokens.push_back(Argmax(out.outputs.back()));
  }
  out.stats = gpu.stats();
  return out;
}

TEST(GpuGraphDecode, MlaStepsReplayedFromAGraphMatchLaunchedSteps) {
  KILN_REQUIRE_GPU();
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  const bool graphs = gpu->graphs();
  const MlaConfig c{.dim = 256, .n_heads = 4, .head_dim = 64, .latent_dim = 128, .max_seq_len = kDecodeSteps + 8};
  absl::StatusOr<MlaAttention> created = MlaAttention::Create(c, testing::RandomMlaWeights(c, 5, 0.1, Device::Cuda()));
  ASSERT_TRUE(created.ok()) << created.status();
  const MlaAttention& mla = *created;
  const Decoded launched = DecodeMla(*gpu, /*graphs=*/false, mla);
  const Decoded replayed = DecodeMla(*gpu, /*graphs=*/true, mla);
  gpu->set_graphs(graphs);
  ExpectSameDecode(replayed, launched, 1e-4);
  // Steps 0 and 1 build and first run the plan; the rest replay.
  const CudaExecutorStats& s = replayed.stats;
  EXPECT_GE(s.graph_replays, kDecodeSteps - 2);
  EXPECT_LE(s.graph_captures, 3);
  EXPECT_EQ(s.graph_fallbacks, 0);
}

}  // namespace
}  // namespace kiln::models
