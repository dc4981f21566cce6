#include "models/sampler.h"

#include <cmath>
#include <vector>

#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::kiln::testing::kInf;
using ::testing::HasSubstr;

Sampler MakeSampler(float temperature, float top_p, uint64_t seed) {
  Sampler::Options options;
  options.temperature = temperature;
  options.top_p = top_p;
  options.seed = seed;
  return Sampler(options);
}

std::vector<int32_t> Draw(Sampler& sampler, const std::vector<float>& logits, int count) {
  std::vector<int32_t> draws;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<int32_t> token = sampler.Sample(logits);
    EXPECT_TRUE(token.ok()) << token.status();
    draws.push_back(token.ok() ? *token : -1);
  }
  return draws;
}

std::vector<int> Histogram(const std::vector<int32_t>& draws, int n) {
  std::vector<int> counts(n, 0);
  for (int32_t d : draws) {
    EXPECT_GE(d, 0);
    EXPECT_LT(d, n);
    if (d >= 0 && d < n) ++counts[d];
  }
  return counts;
}

std::vector<float> LogProbs(const std::vector<float>& probs) {
  std::vector<float> logits;
  for (float p : probs) logits.push_back(std::log(p));
  return logits;
}

void ExpectInvalid(const absl::StatusOr<int32_t>& result, const std::string& problem) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(problem));
}

TEST(Sampler, GreedyPicksTheArgmax) {
  Sampler sampler = MakeSampler(0, 1, 1);
  EXPECT_EQ(*sampler.Sample(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f}), 1);
  EXPECT_EQ(*sampler.Sample(std::vector<float>{-5.0f}), 0);
  EXPECT_EQ(*sampler.Sample(std::vector<float>{-kInf, -7.0f, -kInf}), 1);
  // top_p does not affect greedy decoding.
  Sampler with_top_p = MakeSampler(0, 0.5f, 1);
  EXPECT_EQ(*with_top_p.Sample(std::vector<float>{0.1f, 3.0f, -2.0f}), 1);
}

TEST(Sampler, GreedyBreaksTiesTowardsTheLowestIndex) {
  Sampler sampler = MakeSampler(0, 1, 1);
  EXPECT_EQ(*sampler.Sample(std::vector<float>{1.0f, 4.0f, 4.0f, 4.0f}), 1);
  EXPECT_EQ(*sampler.Sample(std::vector<float>(100, 0.0f)), 0);
}

TEST(Sampler, SameSeedGivesTheSameSequence) {
  const std::vector<float> logits(50, 0.0f);
  for (float top_p : {1.0f, 0.9f}) {
    Sampler a = MakeSampler(1, top_p, 42);
    Sampler b = MakeSampler(1, top_p, 42);
    Sampler c = MakeSampler(1, top_p, 43);
    const std::vector<int32_t> draws_a = Draw(a, logits, 200);
    EXPECT_EQ(draws_a, Draw(b, logits, 200));
    EXPECT_NE(draws_a, Draw(c, logits, 200));
  }
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  Sampler sampler = MakeSampler(1, 1, 3);
  const int kDraws = 10000;
  const std::vector<int> counts =
      Histogram(Draw(sampler, LogProbs({0.5f, 0.3f, 0.1f, 0.1f}), kDraws), 4);
  EXPECT_NEAR(counts[0] / double(kDraws), 0.5, 0.03);
  EXPECT_NEAR(counts[1] / double(kDraws), 0.3, 0.03);
  EXPECT_NEAR(counts[2] / double(kDraws), 0.1, 0.02);
  EXPECT_NEAR(counts[3] / double(kDraws), 0.1, 0.02);
}

TEST(Sampler, TopPDrawsOnlyFromTheNucleus) {
  Sampler sampler = MakeSampler(1, 0.7f, 5);
  const int kDraws = 10000;
  const std::vector<int> counts =
      Histogram(Draw(sampler, LogProbs({0.5f, 0.3f, 0.1f, 0.1f}), kDraws), 4);
  EXPECT_EQ(counts[2], 0);
  EXPECT_EQ(counts[3], 0);
  // Renormalized over the nucleus {0, 1}: index 1 with 0.3 / 0.8.
  EXPECT_NEAR(counts[1] / double(kDraws), 0.3 / 0.8, 0.03);
}

TEST(Sampler, TopPNucleusIsOrderIndependent) {
  // The same distribution, shuffled: the nucleus is {3, 0}.
  Sampler sampler = MakeSampler(1, 0.7f, 6);
  const std::vector<int> counts =
      Histogram(Draw(sampler, LogProbs({0.3f, 0.1f, 0.1f, 0.5f}), 5000), 4);
  EXPECT_EQ(counts[1] + counts[2], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[3], counts[0]);
}

TEST(Sampler, TopPOnFlatLogitsKeepsAtLeastOneToken) {
  // llama2.c's cutoff drops every token here and reads out of bounds.
  Sampler sampler = MakeSampler(1, 0.1f, 7);
  for (int32_t token : Draw(sampler, std::vector<float>(2, 0.0f), 100)) EXPECT_EQ(token, 0);
  Sampler wide = MakeSampler(1, 0.05f, 7);
  for (int32_t token : Draw(wide, std::vector<float>(1000, 1.0f), 100)) {
    EXPECT_GE(token, 0);
    EXPECT_LT(token, 51);  // ties are ordered by index; 51 tokens pass 5%
  }
}

TEST(Sampler, TopPOutsideZeroOneIsOff) {
  const std::vector<float> logits = LogProbs({0.5f, 0.3f, 0.1f, 0.1f});
  Sampler off = MakeSampler(1, 1.0f, 9);
  const std::vector<int32_t> expected = Draw(off, logits, 300);
  for (float top_p : {0.0f, -1.0f, 1.5f}) {
    Sampler sampler = MakeSampler(1, top_p, 9);
    EXPECT_EQ(Draw(sampler, logits, 300), expected) << top_p;
  }
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  const std::vector<float> logits = {1.0f, 2.0f};
  const int kDraws = 10000;
  auto share_of_max = [&](float temperature) {
    Sampler sampler = MakeSampler(temperature, 1, 11);
    return Histogram(Draw(sampler, logits, kDraws), 2)[1] / double(kDraws);
  };
  const double e = std::exp(1.0);
  EXPECT_NEAR(share_of_max(1.0f), e / (1 + e), 0.02);
  EXPECT_NEAR(share_of_max(0.25f), std::exp(4.0) / (1 + std::exp(4.0)), 0.01);
  EXPECT_NEAR(share_of_max(100.0f), 0.5, 0.02);
  // A tiny temperature is effectively greedy, without overflowing.
  EXPECT_EQ(share_of_max(1e-30f), 1.0);
}

TEST(Sampler, NeverDrawsMaskedTokens) {
  Sampler sampler = MakeSampler(1, 1, 13);
  const std::vector<int> counts =
      Histogram(Draw(sampler, {-kInf, 0.0f, -kInf, 0.0f, -kInf}, 2000), 5);
  EXPECT_EQ(counts[0] + counts[2] + counts[4], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[3], 0);
}

TEST(Sampler, RejectsBadLogits) {
  Sampler sampler = MakeSampler(1, 0.9f, 1);
  ExpectInvalid(sampler.Sample({}), "empty");
  ExpectInvalid(sampler.Sample(std::vector<float>{0.0f, std::nanf("")}), "logit 1");
  ExpectInvalid(sampler.Sample(std::vector<float>{kInf, 0.0f}), "logit 0");
  ExpectInvalid(sampler.Sample(std::vector<float>{-kInf, -kInf}), "-inf");
  Sampler greedy = MakeSampler(0, 1, 1);
  ExpectInvalid(greedy.Sample({}), "empty");
  ExpectInvalid(greedy.Sample(std::vector<float>{std::nanf(""), 1.0f}), "logit 0");
}

TEST(Sampler, RejectsBadOptions) {
  for (float temperature : {-0.5f, std::nanf(""), kInf}) {
    Sampler sampler = MakeSampler(temperature, 1, 1);
    EXPECT_FALSE(sampler.options().Validate().ok()) << temperature;
    ExpectInvalid(sampler.Sample(std::vector<float>{0.0f, 1.0f}), "temperature");
  }
  Sampler nan_top_p = MakeSampler(1, std::nanf(""), 1);
  ExpectInvalid(nan_top_p.Sample(std::vector<float>{0.0f, 1.0f}), "top_p");
  EXPECT_TRUE(Sampler::Options{}.Validate().ok());
}

}  // namespace
}  // namespace kiln::models
