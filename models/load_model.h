// Opens a checkpoint of any supported format, chosen by what the path is, and
// the tokenizer (and chat template) that goes with it.
#ifndef KILN_MODELS_LOAD_MODEL_H_
#define KILN_MODELS_LOAD_MODEL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/chat_template.h"
#include "models/llama.h"
#include "models/loaded_model.h"
#include "models/text/tokenizer.h"
#include "tensor/quant.h"

namespace kiln::models {

// What kiln reads, for --help and error messages.
extern const char kSupportedCheckpoints[];

enum class CheckpointFormat { kHuggingFace, kGguf, kLlama2c };

struct LoadOptions {
  // The weights' dtype. Unset: as stored (safetensors, llama2.c), or for a
  // GGUF file the dtype of its unquantized matrices (f32 when quantized).
  std::optional<DType> dtype;
  // The longest context a run may use (the KV cache is sized by it): the
  // model's own, capped at this. 0 takes the model's whole context, which
  // for Llama 3 (131072 positions) is gigabytes of cache.
  int max_context = 4096;
  // GGUF matrices stored in a block format kiln decodes (tensor/quant.h:
  // Q8_0, Q4_0, Q4_K, Q6_K, ...) stay packed as the file stores them,
  // decoded where products read them; false decodes them at load.
  bool keep_packed = true;
  // Quantizes the projection matrices and the classifier at load (Q8_0 or
  // Q4_0; see quantize_weights.h). Packed GGUF matrices stay as they are.
  std::optional<QuantFormat> quantize;
};

// A directory is a Hugging Face checkpoint (config.json + .safetensors); a
// file starting with "GGUF" is a GGUF file; any other file a llama2.c
// checkpoint. NotFound for a missing path.
absl::StatusOr<CheckpointFormat> DetectCheckpointFormat(const std::string& path);

absl::StatusOr<LoadedModel> LoadCheckpoint(const std::string& path, const LoadOptions& options = {});
absl::StatusOr<LlamaModel> LoadModel(const std::string& path, const LoadOptions& options = {});

// A tokenizer and what generation needs from the files around it.
struct LoadedTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string path;  // the file it was read from
  // Generation ends at any of these: EOS, end of turn (config.json's and
  // generation_config.json's eos_token_id, tokenizer_config.json's
  // eos_token, a GGUF's eos/eot/eom ids; BOS and EOS for llama2.c).
  std::vector<int32_t> stop_ids;
  // tokenizer_config.json's or the GGUF's template; none when absent.
  std::shared_ptr<const ChatTemplate> chat_template;
  // Why there is no template, for `kiln chat`'s message.
  std::string no_template_reason;
};

// `tokenizer_path` (a tokenizer.json, tokenizer.model, GGUF file, llama2.c
// tokenizer.bin, or a directory holding one), or else the tokenizer found
// with the model: tokenizer.json, then tokenizer.model, then tokenizer.bin
// in a checkpoint directory; a GGUF file's own; tokenizer.bin beside a
// llama2.c file. `vocab_size` is the model's: a tokenizer with more ids is
// refused.
absl::StatusOr<LoadedTokenizer> LoadTokenizerFor(const std::string& model_path,
                                                 const std::string& tokenizer_path,
                                                 int vocab_size);

}  // namespace kiln::models

#endif  // KILN_MODELS_LOAD_MODEL_H_
