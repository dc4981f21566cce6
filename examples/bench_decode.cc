// `kiln bench decode`: a whole model decoding one token per step at batch 1,
// as the PyTorch peers are timed (the greedy token picked on the GPU):
// ms/token split into GPU time and host time, launches per step, and the
// achieved bandwidth against the floor (every weight read once plus the KV
// cache up to the context, over the device-to-device copy bandwidth
// measured in the same run).
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "examples/bench_steps.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "jit/cuda_types.h"
#include "models/decode_step.h"
#include "models/llama.h"
#include "models/quantize_weights.h"
#include "models/random_weights.h"
#include "nlohmann/json.hpp"
#include "optimizer/cuda_executor.h"
#include "optimizer/search_trace.h"
#include "tensor/quant.h"

ABSL_FLAG(std::string, shape, "1b", "bench decode: the model shape: 1b, 8b or qwen3-8b");
ABSL_FLAG(std::string, json, "", "bench decode: also write the results to this JSON file");
ABSL_FLAG(int, prefill, 0, "bench decode: also time a prefill of this many tokens (0: none)");
ABSL_FLAG(int, kernels, 0, "bench decode: also time each kernel of a step and print the N slowest kinds");
ABSL_FLAG(std::string, quant, "",
          "bench decode: quantize the projections and the classifier at load (q8_0, q4_0 or q4_k), kept packed");

namespace kiln::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "kiln bench decode: %s\n", s.ToString().c_str());
  return 1;
}

// Whether a flag shared with other commands was given a value other than its
// default (bench decode has defaults of its own, the peers').
bool Specified(const char* flag) {
  const absl::CommandLineFlag* f = absl::FindCommandLineFlag(flag);
  return f != nullptr && f->CurrentValue() != f->DefaultValue();
}

// Bytes read and written per second by device-to-device copies of 512 MiB.
absl::StatusOr<double> CopyBandwidth(jit::CudaContext& context) {
  const size_t bytes = size_t{512} << 20;
  absl::StatusOr<std::shared_ptr<Storage>> a = context.Allocate(bytes);
  if (!a.ok()) return a.status();
  absl::StatusOr<std::shared_ptr<Storage>> b = context.Allocate(bytes);
  if (!b.ok()) return b.status();
  const auto ptr = [](const std::shared_ptr<Storage>& s) {
    return static_cast<jit::CUdeviceptr>(reinterpret_cast<uintptr_t>(s->data()));
  };
  absl::StatusOr<jit::CudaEvent> start = context.CreateEvent();
  absl::StatusOr<jit::CudaEvent> end = context.CreateEvent();
  if (!start.ok() || !end.ok()) return start.ok() ? end.status() : start.status();
  constexpr int kCopies = 10;
  for (int i = 0; i < kCopies + 3; ++i) {
    if (i == 3) {
      if (absl::Status s = start->Record(); !s.ok()) return s;
    }
    if (absl::Status s = context.CopyDeviceToDevice(ptr(*b), ptr(*a), bytes); !s.ok()) return s;
  }
  if (absl::Status s = end->Record(); !s.ok()) return s;
  if (absl::Status s = end->Synchronize(); !s.ok()) return s;
  absl::StatusOr<float> ms = jit::CudaEvent::ElapsedMilliseconds(*start, *end);
  if (!ms.ok()) return ms.status();
  return 2.0 * bytes * kCopies / (*ms * 1e-3);
}

// What one decode step must read: every weight but the embedding table
// (one row of it is read) and the KV cache up to `context`, as the peers
// count it.
// The bytes a step reads: the weights (the matrices in `quant`'s blocks
// where set) and the KV cache, bf16.
double StepBytes(const models::LlamaConfig& c, int64_t context, std::optional<QuantFormat> quant) {
  const double e = 2;  // bf16
  const double matrix = quant ? static_cast<double>(QuantInfo(*quant).block_bytes) / QuantInfo(*quant).block_size : e;
  const double dim = c.dim, q = c.q_dim(), kv = c.kv_dim(), hidden = c.hidden_dim;
  double layer = matrix * (dim * q * 2 + dim * kv * 2 + dim * hidden * 3) + e * dim * 2;
  if (c.qk_norm) layer += e * 2.0 * c.head_dim();
  const double weights = c.n_layers * layer + matrix * c.vocab_size * dim + e * dim;
  const double cache = e * 2.0 * c.n_layers * kv * context;
  return weights + cache;
}

// The `rows` kinds of kernel that took the most GPU time over `runs` runs of
// `what`, timed one by one.
void PrintKernelProfile(const char* what, const std::vector<KernelProfileRow>& profile, int runs, int rows) {
  double total = 0;
  for (const KernelProfileRow& r : profile) total += r.seconds;
  std::printf("  %s, kernels timed one by one (%d runs): %.3f ms GPU/run; the %d slowest kinds:\n", what, runs,
              total / runs * 1e3, rows);
  std::printf("    %9s %6s %9s %10s  %s\n", "us/run", "share", "launches", "GB/s", "kernel");
  for (int i = 0; i < rows && i < static_cast<int>(profile.size()); ++i) {
    const KernelProfileRow& r = profile[i];
    std::printf("    %9.1f %5.1f%% %9.1f %10.0f  %s\n", r.seconds / runs * 1e6, 100 * r.seconds / total,
                static_cast<double>(r.launches) / runs, r.tensor_bytes / r.seconds / 1e9, r.kernel.c_str());
  }
}

}  // namespace

int BenchDecode() {
  char dir[] = "/tmp/kiln-bench-cache-XXXXXX";
  if (mkdtemp(dir) != nullptr && getenv("KILN_CACHE_DIR") == nullptr) {
    setenv("KILN_CACHE_DIR", dir, 1);
  }
  if (absl::Status s = InitCuda(); !s.ok()) return Fail(s);
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  const std::string shape = absl::GetFlag(FLAGS_shape);
  const int context = Specified("context") ? absl::GetFlag(FLAGS_context) : 1024;
  const int steps = Specified("steps") ? absl::GetFlag(FLAGS_steps) : 64;
  if (context < 1 || steps < 4) return Fail(absl::InvalidArgumentError("--context >= 1, --steps >= 4"));
  const bool search = absl::GetFlag(FLAGS_superoptimize);
  gpu->set_graphs(absl::GetFlag(FLAGS_cuda_graphs));
  gpu->set_pipelined_products(absl::GetFlag(FLAGS_pipelined_products));
  gpu->set_decode_columns(cli::DecodeColumns());
  if (search) {
    TraceSearchOptions options;
    options.search.cache_dir = getenv("KILN_CACHE_DIR");
    options.log = absl::GetFlag(FLAGS_search_log);
    EnableSuperoptimizer(*gpu, options);
  }
  absl::StatusOr<models::LlamaConfig> config = models::ShapedConfig(shape, context + steps + 16);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<double> bandwidth = CopyBandwidth(gpu->context());
  if (!bandwidth.ok()) return Fail(bandwidth.status());
  std::optional<QuantFormat> quant;
  if (const std::string name = absl::GetFlag(FLAGS_quant); !name.empty()) {
    quant = ParseQuantFormat(name);
    if (!quant || !CanQuantize(*quant)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--quant is q8_0, q4_0 or q4_k, got '", name, "'")));
    }
  }
  absl::StatusOr<models::LlamaWeights> weights = models::RandomLlamaWeights(*config, 7, Device::Cuda());
  if (!weights.ok()) return Fail(weights.status());
  if (quant) {
    // Quantized on the host (each matrix read back), then moved back packed.
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s = models::QuantizeLinearWeights(*weights, config->tied_embeddings, *quant); !s.ok()) {
      return Fail(s);
    }
    std::printf("  quantized to %s on the host in %.1f s\n", std::string(QuantName(*quant)).c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  absl::StatusOr<models::LlamaModel> model = models::LlamaModel::Create(*config, *weights);
  if (!model.ok()) return Fail(model.status());
  if (quant) {  // the blocks are on the host; the rest on the GPU (To moves both)
    absl::StatusOr<models::LlamaModel> moved = model->To(Device::Cuda());
    if (!moved.ok()) return Fail(moved.status());
    *model = *std::move(moved);
  }
  absl::StatusOr<models::KvCache> cache = model->NewCache(Device::Cuda());
  if (!cache.ok()) return Fail(cache.status());

  // A step: the decode step recorded once and rerun (--replay_steps, what
  // kiln generate runs), or recorded anew each token. Greedy as the peers
  // are timed, or drawn on the GPU with --temperature above 0 (--top_p).
  const bool replay = absl::GetFlag(FLAGS_replay_steps);
  const models::Sampler::Options sampling{
      .temperature = Specified("temperature") ? static_cast<float>(absl::GetFlag(FLAGS_temperature)) : 0.0f,
      .top_p = static_cast<float>(absl::GetFlag(FLAGS_top_p)),
      .seed = 1};
  if (absl::Status s = sampling.Validate(); !s.ok()) return Fail(s);
  if (sampling.temperature > 0 && !replay) {
    return Fail(absl::InvalidArgumentError("--temperature above 0 times the recorded step: keep --replay_steps"));
  }
  models::Sampler coins(sampling);
  const models::StepHead head = models::StepHead::Sampled(config->vocab_size, sampling);
  std::unique_ptr<models::DecodeStep> decode_step;
  const auto step = [&](int64_t pos, StepTimes* times) -> absl::StatusOr<double> {
    if (!replay) return TimedStep(*model, *cache, 1, pos, times, /*greedy=*/true);
    const auto start = std::chrono::steady_clock::now();
    if (decode_step == nullptr) {
      absl::StatusOr<std::unique_ptr<models::DecodeStep>> created =
          models::DecodeStep::Create(*model, *cache, head);
      if (!created.ok()) return created.status();
      decode_step = *std::move(created);
    }
    const int32_t token = static_cast<int32_t>(pos * 7919 % config->vocab_size);
    absl::StatusOr<int32_t> next = head.kind == models::StepHead::Kind::kSampled
                                       ? decode_step->Sampled(token, pos, coins.NextUniform())
                                       : decode_step->Greedy(token, pos);
    if (!next.ok()) return next.status();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (times != nullptr) times->realize += seconds;
    return seconds;
  };
  // The first step compiles (or finds the kernel cache); two more warm up.
  absl::StatusOr<double> first = step(context, nullptr);
  if (!first.ok()) return Fail(first.status());
  for (int i = 1; i < 3; ++i) {
    if (absl::StatusOr<double> t = step(context + i, nullptr); !t.ok()) return Fail(t.status());
  }
  std::vector<double> wall;
  StepTimes parts;
  for (int i = 0; i < steps; ++i) {
    absl::StatusOr<double> t = step(context + 3 + i % 8, &parts);
    if (!t.ok()) return Fail(t.status());
    wall.push_back(*t);
  }
  // Profiled steps: each waits for its kernels, so GPU and host time split.
  gpu->set_profile(true);
  gpu->ResetStats();
  const int profiled = 16;
  for (int i = 0; i < profiled; ++i) {
    if (absl::StatusOr<double> t = step(context + 3 + i % 8, nullptr); !t.ok()) return Fail(t.status());
  }
  gpu->set_profile(false);
  const CudaExecutorStats stats = gpu->stats();
  // Kernels timed one by one (events between them, no graph).
  const int kernel_rows = absl::GetFlag(FLAGS_kernels);
  std::vector<KernelProfileRow> kernel_profile;
  constexpr int kKernelSteps = 8;
  if (kernel_rows > 0) {
    gpu->ResetStats();
    gpu->set_profile_kernels(true);
    for (int i = 0; i < kKernelSteps; ++i) {
      if (absl::StatusOr<double> t = step(context + 3 + i, nullptr); !t.ok()) return Fail(t.status());
    }
    gpu->set_profile_kernels(false);
    kernel_profile = gpu->kernel_profile();
  }
  // A prefill of --prefill tokens at position 0 (the cache's first
  // positions are overwritten; the decode steps are done).
  const int prefill = absl::GetFlag(FLAGS_prefill);
  double prefill_ms = 0;
  std::vector<KernelProfileRow> prefill_profile;
  decode_step.reset();  // it writes the cache by itself
  if (prefill > 0) {
    if (prefill > config->max_seq_len) return Fail(absl::InvalidArgumentError("--prefill exceeds the context"));
    std::vector<double> times;
    for (int i = 0; i < 6; ++i) {  // the first compiles
      absl::StatusOr<double> t = TimedStep(*model, *cache, prefill, 0);
      if (!t.ok()) return Fail(t.status());
      if (i > 0) times.push_back(*t);
    }
    prefill_ms = Median(times) * 1e3;
    if (kernel_rows > 0) {
      gpu->ResetStats();
      gpu->set_profile_kernels(true);
      if (absl::StatusOr<double> t = TimedStep(*model, *cache, prefill, 0); !t.ok()) return Fail(t.status());
      gpu->set_profile_kernels(false);
      prefill_profile = gpu->kernel_profile();
    }
  }
  const double ms = Median(wall) * 1e3;
  const double gpu_ms = stats.gpu_seconds / profiled * 1e3;
  const double bytes = StepBytes(*config, context, quant);
  const double floor_ms = bytes / *bandwidth * 1e3;
  const double launches = static_cast<double>(stats.launches) / profiled;
  const double node_updates = static_cast<double>(stats.graph_node_updates) / profiled;
  std::printf("kiln bench decode: %s shape (%d layers, dim %d, vocab %d, bf16%s), context %d, "
              "%s, %s\n", shape.c_str(), config->n_layers, config->dim, config->vocab_size,
              quant ? absl::StrCat(", matrices ", QuantName(*quant)).c_str() : "", context, search ? "superoptimizer on" : "default lowering",
              gpu->context().info().ToString().c_str());
  if (head.kind == models::StepHead::Kind::kSampled) {
    std::printf("  the token drawn on the GPU at temperature %g, top-p %g\n", sampling.temperature, sampling.top_p);
  }
  std::printf("  first step (compiles or loads kernels): %.1f ms\n", *first * 1e3);
  std::printf("  decode: %.3f ms/token (median of %d steps) = %.3f ms GPU + %.3f ms host; "
              "%.0f launches/step\n", ms, steps, gpu_ms, ms - gpu_ms, launches);
  if (replay) {
    std::printf("  a step's wall time (mean): %.1f us, the step recorded once and rerun "
                "(--replay_steps)\n", parts.realize / steps * 1e6);
  } else {
    std::printf("  a step's wall time (mean): %.1f us recording the trace, %.1f us realizing it, %.1f us "
                "reading the greedy token back\n", parts.trace / steps * 1e6, parts.realize / steps * 1e6,
                parts.read_back / steps * 1e6);
  }
  if (gpu->graphs()) {
    std::printf("  CUDA graphs: %lld of %d profiled steps replayed, %lld captured, %.1f kernel nodes "
                "updated/step, %lld fell back to per-kernel launches\n",
                static_cast<long long>(stats.graph_replays), profiled, static_cast<long long>(stats.graph_captures),
                node_updates, static_cast<long long>(stats.graph_fallbacks));
  } else {
    std::printf("  CUDA graphs: off\n");
  }
  std::printf("  floor: %.3f ms (%.3f GB at %.2f TB/s measured copy); achieved %.2f TB/s, "
              "%.0f%% of the floor's speed\n", floor_ms, bytes / 1e9, *bandwidth / 1e12,
              bytes / (ms * 1e-3) / 1e12, 100 * floor_ms / ms);
  if (prefill > 0) {
    std::printf("  prefill of %d tokens: %.3f ms (%.0f tokens/s)\n", prefill, prefill_ms, prefill / prefill_ms * 1e3);
  }
  if (kernel_rows > 0) {
    PrintKernelProfile("decode step", kernel_profile, kKernelSteps, kernel_rows);
    if (prefill > 0) PrintKernelProfile("prefill", prefill_profile, 1, kernel_rows);
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    const nlohmann::json row = {
        {"shape", shape},       {"context", context},         {"steps", steps},
        {"quant", quant ? std::string(QuantName(*quant)) : std::string()},
        {"ms_per_token", ms},   {"gpu_ms", gpu_ms},           {"host_ms", ms - gpu_ms},
        {"launches", launches}, {"floor_ms", floor_ms},       {"bytes_GB", bytes / 1e9},
        {"copy_TBps", *bandwidth / 1e12}, {"first_step_ms", *first * 1e3},
        {"superoptimize", search}, {"cuda_graphs", gpu->graphs()}, {"replay_steps", replay},
        {"temperature", sampling.temperature}, {"top_p", sampling.top_p},
        {"prefill_tokens", prefill}, {"prefill_ms", prefill_ms},
        {"graph_replays", stats.graph_replays}, {"graph_captures", stats.graph_captures},
        {"node_updates_per_step", node_updates}, {"trace_us", parts.trace / steps * 1e6},
        {"realize_us", parts.realize / steps * 1e6}, {"read_back_us", parts.read_back / steps * 1e6}, {"device", gpu->context().info().ToString()}};
    std::ofstream out(path);
    out << row.dump(1) << "\n";
    if (!out) return Fail(absl::InternalError("cannot write " + path));
  }
  return 0;
}

}  // namespace kiln::cli
