#include "models/mla.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {
namespace {

absl::Status CheckWeight(const char* name, const Tensor& t, const Shape& want, DType dtype) {
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat("MLA weight ", name, " is missing"));
  if (!t.ok()) return t.status();
  if (t.shape() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLA weight ", name, " has shape ", t.shape().ToString(), "; the config wants ", want.ToString()));
  }
  if (t.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("MLA weight ", name, " is ", DTypeName(t.dtype()),
                                                   "; the config's dtype is ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MlaConfig::Validate() const {
  for (const auto& [name, value] : std::vector<std::pair<std::string, int64_t>>{
           {"dim", dim}, {"n_heads", n_heads}, {"head_dim", head_dim}, {"latent_dim", latent_dim},
           {"max_seq_len", max_seq_len}}) {
    if (value <= 0) return absl::InvalidArgumentError(absl::StrCat("MLA config: ", name, " must be positive, got ", value));
  }
  if (!(norm_eps > 0)) return absl::InvalidArgumentError("MLA config: norm_eps must be positive");
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat("MLA config: dtype must be f32, f16 or bf16, got ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

absl::StatusOr<MlaAttention> MlaAttention::Create(MlaConfig config, MlaWeights weights) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  const int64_t d = config.dim, h = config.n_heads, hd = config.head_dim, l = config.latent_dim;
  const DType t = config.dtype;
  for (absl::Status s : {CheckWeight("wq", weights.wq, Shape{d, h * hd}, t),
                         CheckWeight("w_dkv", weights.w_dkv, Shape{d, l}, t),
                         CheckWeight("kv_norm", weights.kv_norm, Shape{l}, t),
                         CheckWeight("w_uk", weights.w_uk, Shape{h, l, hd}, t),
                         CheckWeight("w_uv", weights.w_uv, Shape{h, l, hd}, t),
                         CheckWeight("wo", weights.wo, Shape{h * hd, d}, t)}) {
    if (!s.ok()) return s;
  }
  return MlaAttention(config, std::move(weights));
}

absl::StatusOr<Tensor> MlaAttention::NewCache(Device device) const {
  Tensor cache = contiguous(zeros(Shape{config_.max_seq_len, config_.latent_dim}, config_.dtype, device));
  if (absl::Status s = cache.realize(); !s.ok()) return s;
  return cache;
}

Tensor MlaAttention::DecodeAttention(const Tensor& q, const Tensor& latents) const {
  const MlaWeights& w = weights_;
  // K given transposed: K^T = W_uk^T C^T, [heads, head_dim, keys]; V = C W_uv.
  const Tensor kt = matmul(transpose(w.w_uk, 1, 2), transpose(latents, 0, 1));
  const Tensor v = matmul(latents, w.w_uv);
  return matmul(softmax(matmul(q, kt), -1), v);
}

Tensor MlaAttention::Forward(const Tensor& x, const Dim& start, Tensor& cache) const {
  const MlaConfig& c = config_;
  if (x.ok() && (x.rank() != 2 || !(x.shape()[1] == Dim(c.dim)))) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("MlaAttention::Forward: x must be [T, ", c.dim, "], got ", x.shape().ToString())));
  }
  if (cache.ok() && cache.shape() != Shape{c.max_seq_len, c.latent_dim}) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "MlaAttention::Forward: the cache must be [", c.max_seq_len, ", ", c.latent_dim, "]; use NewCache()")));
  }
  const Dim seq = x.ok() ? x.shape()[0] : Dim(1);
  const Dim end = start + seq;
  const MlaWeights& w = weights_;
  // The 1/sqrt(head_dim) scale goes into the queries, before the heads are split.
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const Tensor q = transpose(reshape(matmul(x, w.wq) * scale, {seq, c.n_heads, c.head_dim}), 0, 1);
  cache = slice_update(cache, rms_norm(matmul(x, w.w_dkv), w.kv_norm, c.norm_eps), 0, start);
  const Tensor latents = slice(cache, 0, 0, end);  // [keys, latent]
  Tensor o;  // [heads, T, head_dim]
  if (seq == Dim(1)) {
    o = DecodeAttention(q, latents);
  } else {
    const Tensor k = matmul(latents, w.w_uk), v = matmul(latents, w.w_uv);
    o = attention(q, k, v, {.causal = true, .scale = 1.0});
  }
  return matmul(reshape(transpose(o, 0, 1), {seq, c.n_heads * c.head_dim}), w.wo);
}

}  // namespace kiln::models
