// The shape of a Llama-style decoder.
#ifndef KILN_MODELS_LLAMA_CONFIG_H_
#define KILN_MODELS_LLAMA_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "models/rope_scaling.h"
#include "ops/nn.h"
#include "tensor/dtype.h"

namespace kiln::models {

struct LlamaConfig {
  // What the checkpoint calls itself ("LlamaForCausalLM", "qwen2" in a GGUF,
  // "llama2.c"), for `kiln info` and messages.
  std::string architecture;
  int dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int hidden_dim = 0;
  int vocab_size = 0;
  int max_seq_len = 0;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::kInterleaved;
  RopeScaling rope_scaling;
  // The width of a query/key/value head; 0 means dim / n_heads. Qwen3 and
  // some Mistral models set it apart from dim.
  int explicit_head_dim = 0;
  // Biases on the q, k and v projections (Qwen2) and on the output
  // projection (Llama with attention_bias).
  bool qkv_bias = false;
  bool o_bias = false;
  double norm_eps = 1e-5;
  bool tied_embeddings = true;
  // RMSNorm of each query and key head (with learned weights) before RoPE.
  bool qk_norm = false;
  // LoRA adapters on the attention and MLP projections: W x + (B (A x)) * scale.
  int lora_rank = 0;
  double lora_alpha = 0;
  DType dtype = DType::kF32;  // weights and activations

  int head_dim() const {
    return explicit_head_dim > 0 ? explicit_head_dim : n_heads > 0 ? dim / n_heads : 0;
  }
  int q_dim() const { return head_dim() * n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  double lora_scale() const { return lora_rank > 0 ? lora_alpha / lora_rank : 0; }

  // Positive sizes, heads dividing dim (unless the head dim is explicit) and
  // KV heads dividing heads, an even head dim, RoPE scaling that fits the
  // head, a floating dtype. `source` names the file in the message.
  absl::Status Validate(absl::string_view source) const;
  std::string ToString() const;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_LLAMA_CONFIG_H_
