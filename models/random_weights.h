// Random weights for a Llama config (tests and benchmarks of model shapes
// no checkpoint is at hand for): projections normal(0, 0.02), norm weights
// uniform in [0.8, 1.2], made on `device` with kiln's counter-based
// generator, so the same seed gives the same model everywhere.
#ifndef KILN_MODELS_RANDOM_WEIGHTS_H_
#define KILN_MODELS_RANDOM_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "models/llama_config.h"
#include "models/llama_weights.h"

namespace kiln::models {

// Realized. The classifier is the embedding when config.tied_embeddings.
absl::StatusOr<LlamaWeights> RandomLlamaWeights(const LlamaConfig& config, uint64_t seed,
                                                Device device);

}  // namespace kiln::models

#endif  // KILN_MODELS_RANDOM_WEIGHTS_H_
