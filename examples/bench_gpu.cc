// `kiln bench gpu`: the GPU runtime's latencies. A decoder layer cold (trace
// -> lowered -> generated -> compiled -> result, with an empty kernel cache)
// and warm; decode ms/token of a Llama-3.2-1B-shaped model (random bf16
// weights) against its bandwidth floor; and where a decode step's time goes.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "examples/bench_steps.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "models/llama.h"
#include "models/random_weights.h"
#include "ops/ops.h"
#include "optimizer/cuda_executor.h"
#include "optimizer/search_trace.h"

namespace kiln::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "kiln bench gpu: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int BenchGpu() {
  // An empty kernel cache, so the first call measures a true cold start.
  char dir[] = "/tmp/kiln-bench-cache-XXXXXX";
  if (mkdtemp(dir) != nullptr) setenv("KILN_CACHE_DIR", dir, 1);
  if (absl::Status s = InitCuda(); !s.ok()) return Fail(s);
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  std::printf("device: %s\n", gpu->context().info().ToString().c_str());
  if (absl::GetFlag(FLAGS_superoptimize)) {
    // Searched kernels for every new trace's regions (cold: each searched once).
    TraceSearchOptions options;
    options.search.cache_dir = dir;
    options.log = absl::GetFlag(FLAGS_search_log);
    EnableSuperoptimizer(*gpu, options);
    std::printf("superoptimizer: on\n");
  }

  // A decoder layer: the 1B shape with one layer and a small vocabulary.
  models::LlamaConfig layer_config = models::Llama1BShapedConfig(2048);
  layer_config.n_layers = 1;
  layer_config.vocab_size = 256;
  absl::StatusOr<models::LlamaWeights> layer_weights =
      models::RandomLlamaWeights(layer_config, 1, Device::Cuda());
  if (!layer_weights.ok()) return Fail(layer_weights.status());
  absl::StatusOr<models::LlamaModel> layer = models::LlamaModel::Create(layer_config, *layer_weights);
  if (!layer.ok()) return Fail(layer.status());
  std::printf("\ndecoder layer (dim 2048, 32/8 heads, hidden 8192, bf16):\n");
  for (int64_t n : {int64_t{1}, int64_t{16}}) {
    absl::StatusOr<models::KvCache> cache = layer->NewCache(Device::Cuda());
    if (!cache.ok()) return Fail(cache.status());
    const int64_t compiled = gpu->stats().kernels_compiled;
    absl::StatusOr<double> cold = TimedStep(*layer, *cache, n, 0);
    if (!cold.ok()) return Fail(cold.status());
    const int64_t kernels = gpu->stats().kernels_compiled - compiled;
    std::vector<double> warm;
    for (int64_t i = 1; i <= 30; ++i) {
      absl::StatusOr<double> t = TimedStep(*layer, *cache, n, n + (i % 20) * n);
      if (!t.ok()) return Fail(t.status());
      warm.push_back(*t);
    }
    std::printf("  %s (%lld tokens): cold %.1f ms (%lld kernels compiled), warm %.3f ms\n",
                n == 1 ? "decode " : "prefill", static_cast<long long>(n), *cold * 1e3,
                static_cast<long long>(kernels), Median(warm) * 1e3);
  }

  // The whole 1B-shaped model.
  const models::LlamaConfig config = models::Llama1BShapedConfig(2048);
  absl::StatusOr<models::LlamaWeights> weights = models::RandomLlamaWeights(config, 2, Device::Cuda());
  if (!weights.ok()) return Fail(weights.status());
  absl::StatusOr<models::LlamaModel> model = models::LlamaModel::Create(config, *weights);
  if (!model.ok()) return Fail(model.status());
  absl::StatusOr<models::KvCache> cache = model->NewCache(Device::Cuda());
  if (!cache.ok()) return Fail(cache.status());
  absl::StatusOr<double> prefill = TimedStep(*model, *cache, 16, 0);
  if (!prefill.ok()) return Fail(prefill.status());
  const int steps = std::max(8, absl::GetFlag(FLAGS_steps));
  std::vector<double> decode;
  for (int i = 0; i < steps; ++i) {
    absl::StatusOr<double> t = TimedStep(*model, *cache, 1, 16 + i);
    if (!t.ok()) return Fail(t.status());
    if (i > 0) decode.push_back(*t);  // the first step compiles
  }
  const double weight_bytes = 2.0 * (config.vocab_size * config.dim +
                                     config.n_layers * (2.0 * config.dim * config.dim +
                                                        2.0 * config.dim * config.kv_dim() +
                                                        3.0 * config.dim * config.hidden_dim));
  std::printf("\nLlama-3.2-1B-shaped (16 layers, vocab 128256, bf16, %.2f GB of weights):\n",
              weight_bytes / 1e9);
  std::printf("  prefill 16 tokens (first call, compiles): %.1f ms\n", *prefill * 1e3);
  std::printf("  decode: %.3f ms/token (median of %zu steps); floor %.3f ms at 3.0 TB/s\n",
              Median(decode) * 1e3, decode.size(), weight_bytes / 3.0e12 * 1e3);

  // Where a decode step's time goes.
  gpu->set_profile(true);
  gpu->ResetStats();
  const int profiled = 16;
  double wall = 0;
  for (int i = 0; i < profiled; ++i) {
    absl::StatusOr<double> t = TimedStep(*model, *cache, 1, 16 + steps + i);
    if (!t.ok()) return Fail(t.status());
    wall += *t;
  }
  gpu->set_profile(false);
  const CudaExecutorStats s = gpu->stats();
  std::printf("  per decode step: %.3f ms wall = %.3f ms GPU (kernels and the gaps between) + "
              "%.3f ms host in the executor (plan lookup, buffers, %lld launches) + %.3f ms "
              "recording the trace and reading logits\n",
              wall / profiled * 1e3, s.gpu_seconds / profiled * 1e3,
              s.host_seconds / profiled * 1e3, static_cast<long long>(s.launches / profiled),
              (wall - s.gpu_seconds - s.host_seconds) / profiled * 1e3);
  return 0;
}

}  // namespace kiln::cli
