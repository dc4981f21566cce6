// Hugging Face Llama checkpoints: a directory holding config.json and the
// weights as safetensors (model.safetensors; or shards listed by
// model.safetensors.index.json; or, failing both, every *.safetensors).
//
// HF's converter permutes the q/k projection rows so that RoPE rotates halves
// (element i with i + head_dim/2); kiln keeps the rows as stored and uses
// RopeStyle::kRotateHalf. Weights are used in place from the mapped files.
// Qwen2's q/k/v biases, Qwen3's QK-norm and explicit head_dim, and Llama's
// attention_bias are read where the config says so.
#ifndef KILN_MODELS_HF_LOADER_H_
#define KILN_MODELS_HF_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/loaded_model.h"
#include "nlohmann/json.hpp"

namespace kiln::models {

// Reads the config and every weight the config calls for, checking names,
// shapes and dtypes (all weights share one floating dtype, which becomes
// config.dtype). Errors name the file and the field or tensor; features kiln
// does not implement (MLP biases, dynamic or longrope RoPE scaling, other
// architectures) are Unimplemented rather than silently ignored.
absl::StatusOr<LoadedModel> LoadHuggingFace(const std::string& dir);

// config.json's fields as a LlamaConfig (dtype left f32): the architecture
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM),
// sizes, RoPE and its scaling ("rope_scaling" or transformers 5's
// "rope_parameters": default, linear, llama3, yarn), attention biases, an
// explicit head_dim, a sliding window (which caps the context). `path`
// names the file in errors.
absl::StatusOr<LlamaConfig> ParseHfConfig(const nlohmann::json& config, const std::string& path);

}  // namespace kiln::models

#endif  // KILN_MODELS_HF_LOADER_H_
