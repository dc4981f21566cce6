// `kiln generate`: text generation from a Llama checkpoint.
#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "models/generate.h"
#include "models/load_model.h"

namespace kiln::cli {

int RunGenerate(const std::vector<std::string>& args) {
  const std::string model_path = absl::GetFlag(FLAGS_model);
  if (model_path.empty()) {
    std::fprintf(stderr, "kiln generate: no --model given.\n\n%s", models::kSupportedCheckpoints);
    return 2;
  }
  absl::StatusOr<models::LlamaModel> model = models::LoadModel(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "kiln generate: %s\n", model.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<models::LoadedTokenizer> tokenizer = models::LoadTokenizerFor(
      model_path, absl::GetFlag(FLAGS_tokenizer), model->config().vocab_size);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "kiln generate: %s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  models::GenerateOptions options;
  options.prompt = absl::GetFlag(FLAGS_prompt);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.sampling.temperature = static_cast<float>(absl::GetFlag(FLAGS_temperature));
  options.sampling.top_p = static_cast<float>(absl::GetFlag(FLAGS_top_p));
  const int64_t seed = absl::GetFlag(FLAGS_seed);
  options.sampling.seed =
      seed >= 0 ? static_cast<uint64_t>(seed)
                : static_cast<uint64_t>(
                      std::chrono::system_clock::now().time_since_epoch().count());
  const Device device = ChooseDevice();
  if (device.type != DeviceType::kCpu) {
    absl::StatusOr<models::LlamaModel> moved = model->To(device);
    if (!moved.ok()) {
      std::fprintf(stderr, "kiln generate: %s\n", moved.status().ToString().c_str());
      return 1;
    }
    *model = *std::move(moved);
  }
  if (options.steps > model->config().max_seq_len) {
    std::fprintf(stderr, "kiln generate: --steps %d exceeds the model's context; using %d\n",
                 options.steps, model->config().max_seq_len);
    options.steps = model->config().max_seq_len;
  }

  absl::StatusOr<models::GenerateStats> stats =
      models::Generate(*model, *tokenizer, options, [](absl::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      });
  if (!stats.ok()) {
    std::fprintf(stderr, "\nkiln generate: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "\nprefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s (%s)\n",
               stats->prompt_tokens, stats->prefill_tokens_per_second(),
               stats->generated_tokens, stats->decode_tokens_per_second(),
               device.ToString().c_str());
  return 0;
}

}  // namespace kiln::cli
