#include "optimizer/search/fused_cases.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "tensor/check.h"

namespace kiln::search {
namespace {

Tensor Leaf(std::vector<int64_t> sizes, double scale, uint64_t seed, DType dtype, Device device) {
  Shape shape;
  for (int64_t s : sizes) shape.push_back(s);
  Tensor t = random_normal(shape, seed, 0, scale, dtype, Device::Cpu());
  // On the CPU the inputs stay lazy sources: the search needs their shapes only.
  if (device.type == DeviceType::kCpu) return t;
  t = to(t, device);
  KILN_CHECK(t.realize().ok(), "fused case: could not create an input");
  return t;
}

// peers.py's rms(x, dim): x * rsqrt(mean(x^2, dim) + 1e-6), the statistics
// in f32, the result in x's dtype.
Tensor PeerRms(const Tensor& x, int axis) {
  Tensor xf = cast(x, DType::kF32);
  return cast(xf * rsqrt(mean(xf * xf, axis, /*keepdim=*/true) + 1e-6), x.dtype());
}

FusedCase Finish(std::string name, std::vector<Tensor> inputs, Tensor output) {
  FusedCase c{std::move(name), std::move(inputs), std::move(output), {}};
  std::vector<const Node*> leaves;
  for (const Tensor& t : c.inputs) leaves.push_back(t.node().get());
  absl::StatusOr<Region> region = ExtractRegion(c.output.node().get(), [&](const Node* n) {
    return std::find(leaves.begin(), leaves.end(), n) != leaves.end();
  });
  KILN_CHECK(region.ok(), absl::StrCat("fused case ", c.name, ": ", region.status().ToString()));
  c.region = *std::move(region);
  return c;
}

}  // namespace

FusedCase RmsNormLinearCase(int64_t m, int64_t k, int64_t n, DType dtype, Device device) {
  Tensor x = Leaf({m, k}, 1, 1, dtype, device), w = Leaf({k, n}, 0.02, 2, dtype, device);
  return Finish(absl::StrCat("rmsnorm_linear_", m, "x", k, "x", n), {x, w}, matmul(PeerRms(x, -1), w));
}

FusedCase GatedMlpCase(int64_t m, int64_t k, int64_t n, DType dtype, Device device) {
  Tensor x = Leaf({m, k}, 1, 3, dtype, device);
  Tensor w1 = Leaf({k, n}, 0.02, 4, dtype, device), w2 = Leaf({k, n}, 0.02, 5, dtype, device);
  return Finish(absl::StrCat("gated_mlp_", m, "x", k, "x", n), {x, w1, w2}, silu(matmul(x, w1)) * matmul(x, w2));
}

FusedCase LoraCase(int64_t m, int64_t k, int64_t n, int64_t r, DType dtype, Device device) {
  Tensor x = Leaf({m, k}, 1, 6, dtype, device), w = Leaf({k, n}, 0.05, 7, dtype, device);
  Tensor a = Leaf({k, r}, 0.05, 8, dtype, device), b = Leaf({r, n}, 0.05, 9, dtype, device);
  return Finish(absl::StrCat("lora_", m, "x", k, "x", n, "_r", r), {x, w, a, b},
                matmul(x, w) + matmul(matmul(x, a), b));
}

FusedCase AttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys, DType dtype, Device device) {
  // peers.py: K given transposed, (batch, head_dim, keys); no scale.
  Tensor q = Leaf({batch, queries, head_dim}, 1, 10, dtype, device);
  Tensor k = Leaf({batch, head_dim, keys}, 0.1, 11, dtype, device);
  Tensor v = Leaf({batch, keys, head_dim}, 1, 12, dtype, device);
  return Finish(absl::StrCat("attention_", batch, "x", queries, "x", head_dim, "x", keys), {q, k, v},
                matmul(softmax(matmul(q, k), -1), v));
}

FusedCase RowKeysAttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys, DType dtype,
                               Device device) {
  Tensor q = Leaf({batch, queries, head_dim}, 1, 20, dtype, device);
  Tensor k = Leaf({batch, keys, head_dim}, 0.1, 21, dtype, device);
  Tensor v = Leaf({batch, keys, head_dim}, 1, 22, dtype, device);
  return Finish(absl::StrCat("row_keys_attention_", batch, "x", queries, "x", head_dim, "x", keys), {q, k, v},
                matmul(softmax(matmul(q, transpose(k, 1, 2)), -1), v));
}

namespace {

// Grouped-query attention; with `causal`, masked as ops/nn.cc's attention masks it.
FusedCase GroupedAttention(bool causal, int64_t kv_heads, int64_t group, int64_t queries, int64_t head_dim,
                           int64_t keys, DType dtype, Device device) {
  KILN_CHECK(!causal || keys >= queries, "causal attention needs at least as many keys as queries");
  Tensor q = Leaf({kv_heads, group, queries, head_dim}, 1, 23, dtype, device);
  Tensor k = Leaf({kv_heads, 1, keys, head_dim}, 1, 24, dtype, device);
  Tensor v = Leaf({kv_heads, 1, keys, head_dim}, 1, 25, dtype, device);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  Tensor scores = cast(matmul(q, transpose(k, 2, 3)), DType::kF32) * scale;
  // As ops/nn.cc's attention writes it; a single query (the last position)
  // sees every key and is not masked.
  if (causal && queries > 1) {
    const Tensor query_pos = unsqueeze(iota(queries, keys - queries, 1, DType::kI32, device), 1);
    const Tensor key_pos = unsqueeze(iota(keys, 0, 1, DType::kI32, device), 0);
    scores = where(ge(query_pos, key_pos), scores, -INFINITY);
  }
  return Finish(absl::StrCat(causal ? "causal" : "grouped", "_attention_", kv_heads, "x", group, "x", queries, "x",
                             head_dim, "x", keys),
                {q, k, v}, matmul(cast(softmax(scores, -1), dtype), v));
}

}  // namespace

FusedCase GroupedAttentionCase(int64_t kv_heads, int64_t group, int64_t queries, int64_t head_dim, int64_t keys,
                               DType dtype, Device device) {
  return GroupedAttention(false, kv_heads, group, queries, head_dim, keys, dtype, device);
}

FusedCase CausalAttentionCase(int64_t kv_heads, int64_t group, int64_t queries, int64_t head_dim, int64_t keys,
                              DType dtype, Device device) {
  return GroupedAttention(true, kv_heads, group, queries, head_dim, keys, dtype, device);
}

FusedCase QkNormAttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys, DType dtype,
                              Device device) {
  Tensor q = Leaf({batch, queries, head_dim}, 1, 13, dtype, device);
  Tensor k = Leaf({batch, head_dim, keys}, 0.1, 14, dtype, device);
  Tensor v = Leaf({batch, keys, head_dim}, 1, 15, dtype, device);
  // peers.py: rms over Q's last dim and over K's head dim (its axis -2).
  return Finish(absl::StrCat("qknorm_attention_", batch, "x", queries, "x", head_dim, "x", keys), {q, k, v},
                matmul(softmax(matmul(PeerRms(q, -1), PeerRms(k, -2)), -1), v));
}

FusedCase MlaCase(int64_t heads, int64_t latent, int64_t head_dim, int64_t keys, DType dtype, Device device) {
  Tensor q = Leaf({heads, 1, head_dim}, 1, 16, dtype, device);
  Tensor c = Leaf({keys, latent}, 1, 17, dtype, device);
  // Keys of about 0.1, as the other cases': peers.py's unstabilized f16 softmax overflows otherwise.
  Tensor w_uk = Leaf({heads, latent, head_dim}, 0.1 / std::sqrt(static_cast<double>(latent)), 18, dtype, device);
  Tensor w_uv = Leaf({heads, latent, head_dim}, 0.05, 19, dtype, device);
  // K given transposed, as the other cases: K^T = W_uk^T C^T, [heads, head_dim, keys].
  Tensor kt = matmul(transpose(w_uk, 1, 2), transpose(c, 0, 1));
  Tensor v = matmul(c, w_uv);
  return Finish(absl::StrCat("mla_", heads, "x", latent, "x", head_dim, "x", keys), {q, c, w_uk, w_uv},
                matmul(softmax(matmul(q, kt), -1), v));
}

std::vector<std::string> FusedCaseNames() {
  return {"rmsnorm_linear_bs1", "rmsnorm_linear_bs8", "gated_mlp_bs8", "lora_r16", "gqa_bs1", "gqa_bs8",
          "qknorm_gqa_bs1", "qknorm_gqa_bs8", "seed_attention", "mla_decode"};
}

absl::StatusOr<FusedCase> MakeFusedCase(const std::string& name, Device device) {
  FusedCase c;
  if (name == "rmsnorm_linear_bs1") c = RmsNormLinearCase(2, 4096, 6144, DType::kF16, device);
  else if (name == "rmsnorm_linear_bs8") c = RmsNormLinearCase(16, 4096, 6144, DType::kF16, device);
  else if (name == "gated_mlp_bs8") c = GatedMlpCase(8, 4096, 4096, DType::kF16, device);
  else if (name == "lora_r16") c = LoraCase(16, 256, 4096, 16, DType::kF16, device);
  else if (name == "gqa_bs1") c = AttentionCase(2, 256, 64, 4096, DType::kF16, device);
  else if (name == "gqa_bs8") c = AttentionCase(16, 256, 64, 4096, DType::kF16, device);
  else if (name == "qknorm_gqa_bs1") c = QkNormAttentionCase(2, 256, 64, 4096, DType::kF16, device);
  else if (name == "qknorm_gqa_bs8") c = QkNormAttentionCase(16, 256, 64, 4096, DType::kF16, device);
  else if (name == "seed_attention") c = AttentionCase(64, 1, 128, 4096, DType::kF16, device);
  else if (name == "mla_decode") c = MlaCase(16, 256, 64, 4096, DType::kF16, device);
  else if (name == "causal_prefill") c = CausalAttentionCase(8, 4, 4096, 128, 4096, DType::kBF16, device);
  else return absl::NotFoundError(absl::StrCat("no fused case named ", name));
  c.name = name;
  return c;
}

}  // namespace kiln::search
