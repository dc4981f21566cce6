// What `kiln generate`, `kiln chat` and `kiln bench generate` share: the
// model and tokenizer of --model/--tokenizer loaded with --dtype and
// --context, moved to --device, and the sampling flags.
#ifndef KILN_EXAMPLES_RUN_SETUP_H_
#define KILN_EXAMPLES_RUN_SETUP_H_

#include <optional>
#include <string>

#include "models/load_model.h"
#include "models/sampler.h"
#include "tensor/device.h"

namespace kiln::cli {

struct LoadedRun {
  std::optional<models::LlamaModel> model;
  models::LoadedTokenizer tokenizer;
  Device device = Device::Cpu();
};

// Prints the problem to stderr (prefixed by `command`) and returns nullopt
// when anything fails; `exit_code` is then 2 for a usage error, 1 otherwise.
std::optional<LoadedRun> LoadRun(const char* command, int* exit_code);

// --temperature, --top-p and --seed (the clock when negative).
models::Sampler::Options SamplingFromFlags();

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_RUN_SETUP_H_
