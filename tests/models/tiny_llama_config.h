// A Llama-style f32 config small enough for the CPU executor: 2 layers of
// dim 64, 4 query heads over 2 KV heads, hidden 96, a context of 32.
#ifndef KILN_TESTS_MODELS_TINY_LLAMA_CONFIG_H_
#define KILN_TESTS_MODELS_TINY_LLAMA_CONFIG_H_

#include "models/llama_config.h"
#include "models/random_weights.h"

namespace kiln::testing {

inline models::LlamaConfig TinyLlamaConfig(int64_t vocab) {
  models::LlamaConfig c = models::Llama1BShapedConfig(32);
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 96;
  c.vocab_size = vocab;
  c.dtype = DType::kF32;
  return c;
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_MODELS_TINY_LLAMA_CONFIG_H_
