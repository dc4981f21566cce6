#include "examples/run_setup.h"

#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "examples/flags.h"
#include "tensor/quant.h"

namespace kiln::cli {

std::optional<LoadedRun> LoadRun(const char* command, int* exit_code) {
  const std::string model_path = absl::GetFlag(FLAGS_model);
  *exit_code = 1;
  if (model_path.empty()) {
    std::fprintf(stderr, "%s: no --model given.\n\n%s", command, models::kSupportedCheckpoints);
    *exit_code = 2;
    return std::nullopt;
  }
  models::LoadOptions options;
  options.max_context = absl::GetFlag(FLAGS_context);
  if (const std::string dtype = absl::GetFlag(FLAGS_dtype); !dtype.empty()) {
    options.dtype = ParseDType(dtype);
    if (!options.dtype || !IsFloating(*options.dtype)) {
      std::fprintf(stderr, "%s: --dtype must be f32, f16 or bf16, got '%s'\n", command,
                   dtype.c_str());
      *exit_code = 2;
      return std::nullopt;
    }
  }
  if (const std::string quantize = absl::GetFlag(FLAGS_quantize); !quantize.empty()) {
    options.quantize = ParseQuantFormat(quantize);
    if (!options.quantize || !CanQuantize(*options.quantize)) {
      std::fprintf(stderr, "%s: --quantize must be q8_0, q4_0 or q4_k, got '%s'\n", command, quantize.c_str());
      *exit_code = 2;
      return std::nullopt;
    }
  }
  absl::StatusOr<models::LlamaModel> model = models::LoadModel(model_path, options);
  if (!model.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, model.status().ToString().c_str());
    return std::nullopt;
  }
  absl::StatusOr<models::LoadedTokenizer> tokenizer = models::LoadTokenizerFor(
      model_path, absl::GetFlag(FLAGS_tokenizer), model->config().vocab_size);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, tokenizer.status().ToString().c_str());
    return std::nullopt;
  }
  LoadedRun run;
  run.tokenizer = *std::move(tokenizer);
  run.device = ChooseDevice();
  if (run.device.type != DeviceType::kCpu) {
    absl::StatusOr<models::LlamaModel> moved = model->To(run.device);
    if (!moved.ok()) {
      std::fprintf(stderr, "%s: %s\n", command, moved.status().ToString().c_str());
      return std::nullopt;
    }
    *model = *std::move(moved);
  }
  run.model.emplace(*std::move(model));
  return run;
}

models::Sampler::Options SamplingFromFlags() {
  models::Sampler::Options sampling;
  sampling.temperature = static_cast<float>(absl::GetFlag(FLAGS_temperature));
  sampling.top_p = static_cast<float>(absl::GetFlag(FLAGS_top_p));
  const int64_t seed = absl::GetFlag(FLAGS_seed);
  sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed)
                            : static_cast<uint64_t>(
                                  std::chrono::system_clock::now().time_since_epoch().count());
  return sampling;
}

}  // namespace kiln::cli
