#include "models/random_weights.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {

LlamaConfig Llama1BShapedConfig(int max_seq_len) {
  LlamaConfig c;
  c.dim = 2048;
  c.n_layers = 16;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.hidden_dim = 8192;
  c.vocab_size = 128256;
  c.max_seq_len = max_seq_len;
  c.rope_theta = 500000;
  c.rope_style = RopeStyle::kRotateHalf;
  c.norm_eps = 1e-5;
  c.tied_embeddings = true;
  c.dtype = DType::kBF16;
  return c;
}

absl::StatusOr<LlamaConfig> ShapedConfig(absl::string_view name, int max_seq_len) {
  LlamaConfig c = Llama1BShapedConfig(max_seq_len);
  if (name == "1b") return c;
  c.dim = 4096;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.tied_embeddings = false;
  if (name == "8b") {
    c.n_layers = 32;
    c.hidden_dim = 14336;
    return c;
  }
  if (name == "qwen3-8b") {
    c.n_layers = 36;
    c.hidden_dim = 12288;
    c.vocab_size = 151936;
    c.explicit_head_dim = 128;
    c.qk_norm = true;
    c.rope_theta = 1e6;
    c.norm_eps = 1e-6;
    return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model shape '", name, "': use 1b, 8b or qwen3-8b"));
}

absl::StatusOr<LlamaWeights> RandomLlamaWeights(const LlamaConfig& c, uint64_t seed,
                                                Device device) {
  if (absl::Status s = c.Validate("RandomLlamaWeights"); !s.ok()) return s;
  std::vector<Tensor> all;
  const auto normal = [&](Shape shape) {
    all.push_back(random_normal(shape, seed++, 0, 0.02, c.dtype, device));
    return all.back();
  };
  const auto norm = [&](int64_t n) {
    all.push_back(random_uniform({n}, seed++, 0.8, 1.2, c.dtype, device));
    return all.back();
  };
  const int64_t d = c.dim, kv = c.kv_dim(), h = c.hidden_dim, head = c.head_dim();
  const int64_t qd = c.q_dim();
  LlamaWeights w;
  w.embedding = normal({c.vocab_size, d});
  for (int l = 0; l < c.n_layers; ++l) {
    LlamaLayerWeights layer;
    layer.attention_norm = norm(d);
    layer.wq = normal({qd, d});
    layer.wk = normal({kv, d});
    layer.wv = normal({kv, d});
    layer.wo = normal({d, qd});
    layer.ffn_norm = norm(d);
    layer.w_gate = normal({h, d});
    layer.w_up = normal({h, d});
    layer.w_down = normal({d, h});
    if (c.qk_norm) {
      layer.q_norm = norm(head);
      layer.k_norm = norm(head);
    }
    w.layers.push_back(std::move(layer));
  }
  w.final_norm = norm(d);
  w.classifier = c.tied_embeddings ? w.embedding : normal({c.vocab_size, d});
  if (absl::Status s = RealizeAll(all); !s.ok()) return s;
  return w;
}

}  // namespace kiln::models
