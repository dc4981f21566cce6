// What a checkpoint loader returns.
#ifndef KILN_MODELS_LOADED_MODEL_H_
#define KILN_MODELS_LOADED_MODEL_H_

#include "models/llama_config.h"
#include "models/llama_weights.h"

namespace kiln::models {

struct LoadedModel {
  LlamaConfig config;
  LlamaWeights weights;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_LOADED_MODEL_H_
