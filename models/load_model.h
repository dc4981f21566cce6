// Opens a checkpoint of any supported format, chosen by what the path is.
#ifndef KILN_MODELS_LOAD_MODEL_H_
#define KILN_MODELS_LOAD_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/llama.h"
#include "models/tokenizer.h"

namespace kiln::models {

// What kiln reads, for --help and error messages.
extern const char kSupportedCheckpoints[];

// A directory is a Hugging Face checkpoint (config.json + .safetensors); a
// file is a llama2.c checkpoint.
absl::StatusOr<LlamaModel> LoadModel(const std::string& path);

// `tokenizer_path`, or when empty tokenizer.bin beside the model.
absl::StatusOr<Tokenizer> LoadTokenizerFor(const std::string& model_path,
                                           const std::string& tokenizer_path, int vocab_size);

}  // namespace kiln::models

#endif  // KILN_MODELS_LOAD_MODEL_H_
