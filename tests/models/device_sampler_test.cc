// DeviceSampledToken on the CPU executor against a reference written here
// in double precision: the same nucleus rule and the same pick in token
// order. (GpuGraphDecode runs it on the GPU against this executor.)
#include "models/device_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "optimizer/codegen/assemble.h"
#include "optimizer/codegen/generate.h"
#include "optimizer/lower.h"
#include "models/device_greedy.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"

namespace kiln::models {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The draw on `device` (the CPU executor unless told).
int32_t DeviceDraw(const std::vector<float>& logits, int64_t vocab, const Sampler::Options& options, float coin,
                   const DeviceSamplerGrid& grid = {}, Device device = Device::Cpu()) {
  const Tensor row = to(Tensor::FromHost<float>(logits, {1, static_cast<int64_t>(logits.size())}), device);
  const Tensor draw =
      DeviceSampledToken(row, vocab, options, to(Tensor::FromHost<float>({coin}, {1}), device), grid);
  absl::StatusOr<std::vector<int32_t>> token = draw.to_host<int32_t>();
  EXPECT_TRUE(token.ok()) << token.status();
  return token.ok() ? (*token)[0] : -1;
}

// The tokens a correct draw may give: the nucleus as DeviceSampledToken
// defines it (the fewest best tokens holding more than top_p, ties at the
// threshold included), then the token whose interval of the running sum in
// token order holds coin x mass. Where rounding could move the nucleus's
// edge or the coin across an interval's end (within `slack` of the mass),
// each side is allowed.
std::set<int32_t> AllowedDraws(const std::vector<float>& logits, int64_t vocab, const Sampler::Options& options,
                               double coin, double slack = 1e-5) {
  const double top = *std::max_element(logits.begin(), logits.begin() + vocab);
  std::vector<double> e(vocab);
  for (int64_t i = 0; i < vocab; ++i) e[i] = std::exp((logits[i] - top) / options.temperature);
  const double total = std::accumulate(e.begin(), e.end(), 0.0);
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return e[a] > e[b]; });
  // The nucleus sizes to try: the exact one and, near the edge, its
  // neighbours (whole runs of ties each).
  std::vector<double> thresholds;
  if (options.top_p > 0 && options.top_p < 1) {
    double held = 0;
    for (int64_t k = 0; k < vocab; ++k) {
      held += e[order[k]];
      const bool past = held > options.top_p * total;
      const bool near = std::abs(held - options.top_p * total) < slack * total;
      if (past || near) thresholds.push_back(e[order[k]]);
      if (past && !near) break;
    }
  } else {
    thresholds.push_back(0);
  }
  std::set<int32_t> allowed;
  for (const double threshold : thresholds) {
    double mass = 0;
    for (int64_t i = 0; i < vocab; ++i) mass += e[i] >= threshold ? e[i] : 0;
    const double target = coin * mass;
    double before = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      if (e[i] < threshold || e[i] == 0) continue;
      const double after = before + e[i];
      if (target >= before - slack * mass && target <= after + slack * mass) allowed.insert(i);
      before = after;
    }
  }
  return allowed;
}

// Logits at least `gap` apart (in a random order), so that the grid's
// threshold separates them.
std::vector<float> SpacedLogits(int64_t n, float gap, uint32_t seed) {
  std::vector<float> logits(n);
  for (int64_t i = 0; i < n; ++i) logits[i] = gap * static_cast<float>(i) - gap * n / 2;
  std::mt19937 rng(seed);
  std::shuffle(logits.begin(), logits.end(), rng);
  return logits;
}

std::string Describe(const std::set<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s += std::to_string(t) + " ";
  return s;
}

TEST(DeviceSampler, DrawsTheTokenWhoseShareHoldsTheCoin) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int64_t n : {1, 3, 17, 127, 2050, 4097}) {
    // Spread over ~12 nats whatever n: a peaked head and a long tail.
    const std::vector<float> logits = SpacedLogits(n, 12.0f / n, static_cast<uint32_t>(n));
    for (const float temperature : {0.6f, 1.0f, 1.7f}) {
      for (const float top_p : {0.3f, 0.9f, 1.0f}) {
        const Sampler::Options options{.temperature = temperature, .top_p = top_p};
        for (int trial = 0; trial < 6; ++trial) {
          const float coin = static_cast<float>(uniform(rng));
          const std::set<int32_t> allowed = AllowedDraws(logits, n, options, coin);
          const int32_t token = DeviceDraw(logits, n, options, coin);
          EXPECT_TRUE(allowed.count(token)) << "n " << n << " temperature " << temperature << " top_p " << top_p
                                            << " coin " << coin << ": drew " << token << ", allowed "
                                            << Describe(allowed);
        }
      }
    }
  }
}

TEST(DeviceSampler, TheEndsOfTheCoinAndAPaddedRow) {
  // 5003 is prime: the chunked row is padded; the pads are never drawn.
  const int64_t n = 5003;
  const std::vector<float> logits = SpacedLogits(n, 0.002f, 9);
  for (const float coin : {0.0f, 1e-7f, 0.5f, 0.9999999f, std::nextafter(1.0f, 0.0f)}) {
    for (const float top_p : {0.5f, 1.0f}) {
      const Sampler::Options options{.temperature = 1, .top_p = top_p};
      const std::set<int32_t> allowed = AllowedDraws(logits, n, options, coin);
      const int32_t token = DeviceDraw(logits, n, options, coin);
      EXPECT_TRUE(allowed.count(token)) << "coin " << coin << " top_p " << top_p << ": drew " << token
                                        << ", allowed " << Describe(allowed);
    }
  }
}

TEST(DeviceSampler, ALlamaSizedVocabulary) {
  // 128256 = 128 x 1002 chunks; logits past the vocabulary are never read.
  const int64_t vocab = 128256;
  std::vector<float> logits = SpacedLogits(vocab, 20.0f / vocab, 11);
  logits.push_back(1000);
  for (const float coin : {0.25f, 0.8f}) {
    const Sampler::Options options{.temperature = 0.8f, .top_p = 0.9f};
    const std::set<int32_t> allowed = AllowedDraws(logits, vocab, options, coin);
    const int32_t token = DeviceDraw(logits, vocab, options, coin);
    EXPECT_TRUE(allowed.count(token)) << "coin " << coin << ": drew " << token << ", allowed " << Describe(allowed);
  }
}

TEST(DeviceSampler, ANarrowNucleusIsTheBestToken) {
  std::vector<float> logits = SpacedLogits(3000, 0.01f, 3);
  logits[1234] = 40;  // holds nearly all the probability
  for (const float coin : {0.0f, 0.5f, 0.99f}) {
    EXPECT_EQ(DeviceDraw(logits, 3000, {.temperature = 1, .top_p = 0.9f}, coin), 1234);
  }
  // A nucleus smaller than any token is the best one alone.
  const std::vector<float> spaced = SpacedLogits(300, 0.05f, 4);
  const int32_t best = static_cast<int32_t>(std::max_element(spaced.begin(), spaced.end()) - spaced.begin());
  EXPECT_EQ(DeviceDraw(spaced, 300, {.temperature = 1, .top_p = 1e-6f}, 0.7f), best);
}

TEST(DeviceSampler, FlatLogitsShareTheCoinEvenly) {
  // Every token ties at the threshold, so all are in the nucleus.
  const std::vector<float> logits(4000, 0.5f);
  for (const float coin : {0.0f, 0.3001f, 0.7499f}) {
    const int32_t token = DeviceDraw(logits, 4000, {.temperature = 1, .top_p = 0.9f}, coin);
    EXPECT_EQ(token, static_cast<int32_t>(coin * 4000)) << coin;
  }
}

TEST(DeviceSampler, NeverDrawsMaskedTokens) {
  std::vector<float> logits(700, -kInf);
  logits[10] = 1;
  logits[650] = 1.5f;
  for (const float coin : {0.0f, 0.2f, 0.5f, 0.99f}) {
    const int32_t token = DeviceDraw(logits, 700, {.temperature = 1, .top_p = 1}, coin);
    EXPECT_TRUE(token == 10 || token == 650) << token;
  }
}

TEST(DeviceSampler, ACoarseGridStillKeepsTheNucleus) {
  // Fewer points a round: the same draws where the logits are far apart.
  const std::vector<float> logits = SpacedLogits(500, 0.05f, 8);
  const Sampler::Options options{.temperature = 4, .top_p = 0.5f};
  for (const float coin : {0.1f, 0.45f, 0.9f}) {
    const std::set<int32_t> allowed = AllowedDraws(logits, 500, options, coin);
    const int32_t token = DeviceDraw(logits, 500, options, coin, {.points = 8, .rounds = 9});
    EXPECT_TRUE(allowed.count(token)) << "drew " << token << ", allowed " << Describe(allowed);
  }
}

TEST(DeviceSampler, NoNumberIsAClearError) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {5, 3000}) {
    std::vector<float> with_nan(n, 0.25f), with_inf(n, 0.25f);
    with_nan[n / 2] = nan;
    with_inf[1] = kInf;
    std::vector<float> masked(n, -kInf);
    for (const std::vector<float>* logits : {&with_nan, &with_inf, &masked}) {
      const int32_t token = DeviceDraw(*logits, n, {.temperature = 1, .top_p = 0.9f}, 0.5f);
      EXPECT_EQ(token, n);
      EXPECT_EQ(DeviceGreedyError(token, n).code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

// The draw's kernels as the GPU runs them (lowered by the default rules)
// compile with NVRTC, which needs no GPU: the grid's [points, vocab] masked
// sums, the chunk sums and the running sums.
TEST(DeviceSampler, EveryKernelOfTheDrawCompiles) {
  absl::StatusOr<const jit::NvrtcApi*> nvrtc = jit::LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status();
  for (const float top_p : {0.9f, 1.0f}) {
    const Tensor logits = Tensor::FromHost<float>(SpacedLogits(5003, 0.002f, 2), {1, 5003});
    const Tensor draw = DeviceSampledToken(cast(logits, DType::kBF16), 5000, {.temperature = 0.7f, .top_p = top_p},
                                           Tensor::FromHost<float>({0.5f}, {1}));
    absl::StatusOr<Trace> trace = Trace::Collect({draw});
    ASSERT_TRUE(trace.ok()) << trace.status();
    absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    ASSERT_GT(lowered->graph.kernels.size(), 3u);
    for (size_t k = 0; k < lowered->graph.kernels.size(); ++k) {
      absl::StatusOr<codegen::KernelSource> source = codegen::GenerateKernel(lowered->graph, static_cast<int>(k));
      ASSERT_TRUE(source.ok()) << "kernel " << k << ": " << source.status();
      absl::StatusOr<std::string> cubin =
          jit::CompileToCubin(**nvrtc, codegen::AssembleSource(source->source), jit::CompileOptions());
      ASSERT_TRUE(cubin.ok()) << "kernel " << k << ": " << cubin.status() << "\n" << source->source;
    }
  }
}

// The same draws on a GPU: its kernels (the grid's [points, vocab] masked
// sums, the chunked running sums) against the reference.
TEST(GpuDeviceSampler, DrawsTheTokenWhoseShareHoldsTheCoin) {
  if (absl::Status s = InitCuda(); !s.ok()) GTEST_SKIP() << s;
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int64_t n : {1, 3, 17, 127, 4097, 5003, 128256}) {
    const std::vector<float> logits = SpacedLogits(n, 14.0f / n, static_cast<uint32_t>(n) + 1);
    for (const float top_p : {0.3f, 0.9f, 1.0f}) {
      const Sampler::Options options{.temperature = 0.8f, .top_p = top_p};
      for (int trial = 0; trial < 4; ++trial) {
        const float coin = static_cast<float>(uniform(rng));
        const std::set<int32_t> allowed = AllowedDraws(logits, n, options, coin);
        const int32_t token = DeviceDraw(logits, n, options, coin, {}, Device::Cuda());
        EXPECT_TRUE(allowed.count(token)) << "n " << n << " top_p " << top_p << " coin " << coin << ": drew "
                                          << token << ", allowed " << Describe(allowed);
      }
    }
  }
  std::vector<float> with_nan(3000, 0.5f);
  with_nan[2999] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(DeviceDraw(with_nan, 3000, {.temperature = 1, .top_p = 0.9f}, 0.5f, {}, Device::Cuda()), 3000);
}

}  // namespace
}  // namespace kiln::models
