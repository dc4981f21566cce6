// llama2.c checkpoints (the legacy format of karpathy/llama2.c's run.c): a
// header of 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; a negative vocab_size means an unshared classifier
// follows), then f32 weights grouped by kind across layers. RoPE rotates
// interleaved pairs; theta is 10000.
#ifndef KILN_MODELS_LLAMA2C_LOADER_H_
#define KILN_MODELS_LLAMA2C_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/loaded_model.h"

namespace kiln::models {

// Memory-maps the file and wraps the weights in place (no copy). Every size
// is checked against the file before anything is read.
absl::StatusOr<LoadedModel> LoadLlama2c(const std::string& path);

}  // namespace kiln::models

#endif  // KILN_MODELS_LLAMA2C_LOADER_H_
