// Hugging Face Llama checkpoints: a directory holding config.json and the
// weights as safetensors (model.safetensors; or shards listed by
// model.safetensors.index.json; or, failing both, every *.safetensors).
//
// HF's converter permutes the q/k projection rows so that RoPE rotates halves
// (element i with i + head_dim/2); kiln keeps the rows as stored and uses
// RopeStyle::kRotateHalf. Weights are used in place from the mapped files.
#ifndef KILN_MODELS_HF_LOADER_H_
#define KILN_MODELS_HF_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/loaded_model.h"

namespace kiln::models {

// Reads the config and every weight the config calls for, checking names,
// shapes and dtypes (all weights share one floating dtype, which becomes
// config.dtype). Errors name the file and the field or tensor; features kiln
// does not implement (biases, RoPE scaling, a decoupled head_dim) are
// Unimplemented rather than silently ignored.
absl::StatusOr<LoadedModel> LoadHuggingFace(const std::string& dir);

}  // namespace kiln::models

#endif  // KILN_MODELS_HF_LOADER_H_
