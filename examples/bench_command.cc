// `kiln bench generate`: generation speed, and where the time goes.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "examples/bench_steps.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "models/generate.h"
#include "models/load_model.h"
#include "ops/cpu/cpu_executor.h"

namespace kiln::cli {
namespace {

int BenchGenerate() {
  const std::string model_path = absl::GetFlag(FLAGS_model);
  if (model_path.empty()) {
    std::fprintf(stderr, "kiln bench generate: no --model given.\n\n%s",
                 models::kSupportedCheckpoints);
    return 2;
  }
  absl::StatusOr<models::LlamaModel> model = models::LoadModel(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "kiln bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<models::LoadedTokenizer> tokenizer = models::LoadTokenizerFor(
      model_path, absl::GetFlag(FLAGS_tokenizer), model->config().vocab_size);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "kiln bench: %s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  // A profiling CPU executor replaces the default one for the timed runs.
  auto executor = std::make_shared<cpu::CpuExecutor>(/*profile=*/true);
  cpu::EnsureCpuExecutorRegistered();
  RegisterExecutor(DeviceType::kCpu, executor);

  models::GenerateOptions options;
  options.prompt = absl::GetFlag(FLAGS_prompt).empty() ? "Once upon a time"
                                                        : absl::GetFlag(FLAGS_prompt);
  options.steps = std::min(absl::GetFlag(FLAGS_steps), model->config().max_seq_len);
  options.sampling.temperature = 0;  // greedy: every run does the same work
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));
  std::vector<double> prefill, decode, trace, realize;
  int generated = 0, prompt_tokens = 0;
  for (int r = 0; r <= repeat; ++r) {
    if (r == 1) executor->ResetProfile();  // run 0 warms up
    absl::StatusOr<models::GenerateStats> stats =
        models::Generate(*model, *tokenizer, options, [](absl::string_view) {});
    if (!stats.ok()) {
      std::fprintf(stderr, "kiln bench: %s\n", stats.status().ToString().c_str());
      return 1;
    }
    if (r == 0) continue;
    prefill.push_back(stats->prefill_tokens_per_second());
    decode.push_back(stats->decode_tokens_per_second());
    trace.push_back(stats->decode_trace_seconds / std::max(1, stats->generated_tokens));
    realize.push_back(stats->decode_realize_seconds / std::max(1, stats->generated_tokens));
    generated = stats->generated_tokens;
    prompt_tokens = stats->prompt_tokens;
  }
  std::printf("kiln bench generate: %s, %d prompt tokens, %d generated (greedy), device cpu, "
              "median of %d runs\n",
              model_path.c_str(), prompt_tokens, generated, repeat);
  std::printf("  prefill: %10.1f tokens/s\n", Median(prefill));
  std::printf("  decode:  %10.1f tokens/s\n", Median(decode));
  std::printf("  per decoded token: %.1f us recording the trace, %.1f us realizing it\n",
              Median(trace) * 1e6, Median(realize) * 1e6);

  const cpu::CpuProfile& profile = executor->profile();
  double kernels = 0;
  std::vector<std::pair<double, int>> ops;
  for (int op = 0; op < 256; ++op) {
    if (profile.by_op[op].count == 0) continue;
    kernels += profile.by_op[op].seconds;
    ops.push_back({profile.by_op[op].seconds, op});
  }
  std::sort(ops.rbegin(), ops.rend());
  std::printf("  executor time: %.1f%% in kernels, %.1f%% in scheduling; by op:\n",
              100 * kernels / profile.total_seconds,
              100 * (profile.total_seconds - kernels) / profile.total_seconds);
  for (const auto& [seconds, op] : ops) {
    const cpu::CpuProfile::Entry& e = profile.by_op[op];
    std::printf("    %-14s %8lld calls %8.2f ms %5.1f%%  %.2f us/call\n",
                std::string(OpName(static_cast<OpKind>(op))).c_str(),
                static_cast<long long>(e.count), seconds * 1e3,
                100 * seconds / profile.total_seconds, seconds / e.count * 1e6);
  }
  return 0;
}

}  // namespace

int RunBench(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "generate") return BenchGenerate();
  if (!args.empty() && args[0] == "gpu") return BenchGpu();
  if (!args.empty() && args[0] == "fused") return BenchFused();
  if (!args.empty() && args[0] == "decode") return BenchDecode();
  std::fprintf(stderr, "kiln bench: unknown benchmark; available: generate, gpu, fused, decode\n");
  return 2;
}

}  // namespace kiln::cli
