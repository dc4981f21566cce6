// The tensors of a Llama-style decoder. Projection matrices are laid out
// [out, in], as both llama2.c and Hugging Face store them.
#ifndef KILN_MODELS_LLAMA_WEIGHTS_H_
#define KILN_MODELS_LLAMA_WEIGHTS_H_

#include <vector>

#include "tensor/tensor.h"

namespace kiln::models {

// A low-rank adapter: y += (x A^T) B^T * scale, A [rank, in], B [out, rank].
struct LoraAdapter {
  Tensor a;
  Tensor b;
};

struct LlamaLayerWeights {
  Tensor attention_norm;  // [dim]
  Tensor wq;              // [q_dim, dim] (q_dim = heads * head_dim, usually dim)
  Tensor wk;              // [kv_dim, dim]
  Tensor wv;              // [kv_dim, dim]
  Tensor wo;              // [dim, q_dim]
  // With config.qkv_bias: [q_dim], [kv_dim], [kv_dim]; with config.o_bias: [dim].
  Tensor bq, bk, bv, bo;
  Tensor ffn_norm;        // [dim]
  Tensor w_gate;          // [hidden, dim]   (llama2.c w1)
  Tensor w_down;          // [dim, hidden]   (llama2.c w2)
  Tensor w_up;            // [hidden, dim]   (llama2.c w3)
  // With config.qk_norm: [head_dim] weights.
  Tensor q_norm;
  Tensor k_norm;
  // With config.lora_rank > 0 (all or none).
  LoraAdapter lora_q, lora_k, lora_v, lora_o, lora_gate, lora_up, lora_down;
};

struct LlamaWeights {
  Tensor embedding;  // [vocab, dim]
  std::vector<LlamaLayerWeights> layers;
  Tensor final_norm;  // [dim]
  Tensor classifier;  // [vocab, dim]; the embedding itself when tied
};

}  // namespace kiln::models

#endif  // KILN_MODELS_LLAMA_WEIGHTS_H_
