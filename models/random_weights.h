// Random weights for a Llama config (tests and benchmarks of model shapes
// no checkpoint is at hand for): projections normal(0, 0.02), norm weights
// uniform in [0.8, 1.2], made on `device` with kiln's counter-based
// generator, so the same seed gives the same model everywhere.
#ifndef KILN_MODELS_RANDOM_WEIGHTS_H_
#define KILN_MODELS_RANDOM_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/llama_config.h"
#include "models/llama_weights.h"

namespace kiln::models {

// The shape of Llama 3.2 1B (dim 2048, 16 layers, 32 heads, 8 KV heads,
// hidden 8192, vocab 128256, rotate-half RoPE with theta 500000, tied
// embeddings) in bf16, with `max_seq_len` positions.
LlamaConfig Llama1BShapedConfig(int max_seq_len);

// The benchmarks' shapes by name: "1b" (above), "8b" (Llama 3.1 8B: dim 4096,
// 32 layers, 32/8 heads, hidden 14336, untied) and "qwen3-8b" (dim 4096, 36
// layers, 32/8 heads of 128, QK-norm, hidden 12288, vocab 151936, untied,
// theta 1e6), bf16. InvalidArgument naming the shapes for another name.
absl::StatusOr<LlamaConfig> ShapedConfig(absl::string_view name, int max_seq_len);

// Realized. The classifier is the embedding when config.tied_embeddings.
absl::StatusOr<LlamaWeights> RandomLlamaWeights(const LlamaConfig& config, uint64_t seed,
                                                Device device);

}  // namespace kiln::models

#endif  // KILN_MODELS_RANDOM_WEIGHTS_H_
