// The shape of a Llama-style decoder.
#ifndef KILN_MODELS_LLAMA_CONFIG_H_
#define KILN_MODELS_LLAMA_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "ops/nn.h"
#include "tensor/dtype.h"

namespace kiln::models {

struct LlamaConfig {
  int dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int hidden_dim = 0;
  int vocab_size = 0;
  int max_seq_len = 0;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::kInterleaved;
  double norm_eps = 1e-5;
  bool tied_embeddings = true;
  // RMSNorm of each query and key head (with learned weights) before RoPE.
  bool qk_norm = false;
  // LoRA adapters on the attention and MLP projections: W x + (B (A x)) * scale.
  int lora_rank = 0;
  double lora_alpha = 0;
  DType dtype = DType::kF32;  // weights and activations

  int head_dim() const { return n_heads > 0 ? dim / n_heads : 0; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  double lora_scale() const { return lora_rank > 0 ? lora_alpha / lora_rank : 0; }

  // Positive sizes, heads dividing dim and KV heads dividing heads, an even
  // head dim, a floating dtype. `source` names the file in the message.
  absl::Status Validate(absl::string_view source) const;
  std::string ToString() const;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_LLAMA_CONFIG_H_
