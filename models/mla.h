// Multi-head latent attention (DeepSeek-V2's MLA, without its decoupled
// RoPE keys) as a block of lazy tensor ops: the cache holds one compressed
// latent per position, shared by the heads; keys and values are its
// per-head up-projections. A decode step (one position) is written in the
// naive form, K = C W_uk and V = C W_uv, which the superoptimizer turns
// into one kernel that never forms K or V (it absorbs W_uk into the query
// and applies W_uv after the loop; tests/optimizer/search/mla_search_test.cc).
#ifndef KILN_MODELS_MLA_H_
#define KILN_MODELS_MLA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "tensor/dim.h"
#include "tensor/tensor.h"

namespace kiln::models {

struct MlaConfig {
  int64_t dim = 0;         // the model width
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t latent_dim = 0;  // the compressed KV width
  int64_t max_seq_len = 0;
  double norm_eps = 1e-6;  // the latent's RMSNorm
  DType dtype = DType::kF32;

  absl::Status Validate() const;
};

// Matrices as [in, out].
struct MlaWeights {
  Tensor wq;       // [dim, n_heads * head_dim]
  Tensor w_dkv;    // [dim, latent_dim]: the down-projection into the cache
  Tensor kv_norm;  // [latent_dim]
  Tensor w_uk;     // [n_heads, latent_dim, head_dim]
  Tensor w_uv;     // [n_heads, latent_dim, head_dim]
  Tensor wo;       // [n_heads * head_dim, dim]
};

class MlaAttention {
 public:
  // Checks the config and every weight's shape and dtype against it.
  static absl::StatusOr<MlaAttention> Create(MlaConfig config, MlaWeights weights);

  const MlaConfig& config() const { return config_; }

  // A zeroed, realized latent cache [max_seq_len, latent_dim] on `device`.
  absl::StatusOr<Tensor> NewCache(Device device = Device::Cpu()) const;

  // x [T, dim] at positions start .. start + T - 1: writes their latents
  // into `cache` and attends causally to its first start + T positions.
  // Returns [T, dim].
  Tensor Forward(const Tensor& x, const Dim& start, Tensor& cache) const;

  // One decode step's attention, naive form: q [n_heads, 1, head_dim]
  // (already scaled), the latents [keys, latent_dim]; [n_heads, 1, head_dim].
  Tensor DecodeAttention(const Tensor& q, const Tensor& latents) const;

 private:
  MlaAttention(MlaConfig config, MlaWeights weights) : config_(config), weights_(std::move(weights)) {}

  MlaConfig config_;
  MlaWeights weights_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_MLA_H_
