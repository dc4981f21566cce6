// The fused-op cases of the benchmark suite (../shared/bench/peers.py: same
// names, shapes and formulas), written as plain, unfused tensor code, and
// the region the search sees for each. Used by the tests, `kiln
// superoptimize` and `kiln bench fused`.
#ifndef KILN_OPTIMIZER_SEARCH_FUSED_CASES_H_
#define KILN_OPTIMIZER_SEARCH_FUSED_CASES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/region.h"
#include "tensor/tensor.h"

namespace kiln::search {

struct FusedCase {
  std::string name;
  std::vector<Tensor> inputs;  // realized on a GPU; lazy random sources on the CPU
  Tensor output;               // the unfused expression over them
  Region region;
};

// Random inputs on `device`; dtype f16 unless given.
FusedCase RmsNormLinearCase(int64_t m, int64_t k, int64_t n, DType dtype = DType::kF16,
                            Device device = Device::Cpu());
FusedCase GatedMlpCase(int64_t m, int64_t k, int64_t n, DType dtype = DType::kF16, Device device = Device::Cpu());
FusedCase LoraCase(int64_t m, int64_t k, int64_t n, int64_t r, DType dtype = DType::kF16,
                   Device device = Device::Cpu());

// softmax(Q @ K) @ V with Q [batch, queries, head_dim], K given transposed
// [batch, head_dim, keys], V [batch, keys, head_dim]: kiln's softmax
// (max-subtracted, in f32 for 16-bit inputs).
FusedCase AttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys,
                        DType dtype = DType::kF16, Device device = Device::Cpu());

// The same with K stored by rows, [batch, keys, head_dim] (SDPA's and a KV
// cache's layout): softmax(Q @ K^T) @ V, K^T a transposed view.
FusedCase RowKeysAttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys,
                               DType dtype = DType::kF16, Device device = Device::Cpu());

// Grouped-query attention as kiln's attention op writes it for several
// queries: Q [kv_heads, group, queries, head_dim] against K and V stored by
// rows, [kv_heads, 1, keys, head_dim] (broadcast over the group), scores
// scaled by 1/sqrt(head_dim) in f32.
FusedCase GroupedAttentionCase(int64_t kv_heads, int64_t group, int64_t queries, int64_t head_dim, int64_t keys,
                               DType dtype = DType::kF16, Device device = Device::Cpu());

// The same, causal, as kiln's attention masks it: query i (of the last
// `queries` positions) sees keys 0 .. keys - queries + i; keys >= queries.
// A single query sees every key: no mask, as the attention op writes it.
FusedCase CausalAttentionCase(int64_t kv_heads, int64_t group, int64_t queries, int64_t head_dim, int64_t keys,
                              DType dtype = DType::kF16, Device device = Device::Cpu());

// Attention with QK-norm: softmax(rms(Q, -1) @ rms(K, -2)) @ V, rms in f32
// (without a weight), as peers.py's qknorm_gqa cases write it.
FusedCase QkNormAttentionCase(int64_t batch, int64_t queries, int64_t head_dim, int64_t keys,
                              DType dtype = DType::kF16, Device device = Device::Cpu());

// Multi-head latent attention at decode, naive form: one query per head,
// the compressed KV cache C [keys, latent] shared by the heads, K = C W_uk
// and V = C W_uv up-projected per head (W [heads, latent, head_dim]).
FusedCase MlaCase(int64_t heads, int64_t latent, int64_t head_dim, int64_t keys, DType dtype = DType::kF16,
                  Device device = Device::Cpu());

// rmsnorm_linear_bs1, rmsnorm_linear_bs8, gated_mlp_bs8, lora_r16, gqa_bs1, gqa_bs8,
// qknorm_gqa_bs1, qknorm_gqa_bs8, seed_attention, and mla_decode (kiln's own:
// 16 heads, a 256-wide latent, head dim 64, 4096 keys; bench/mla_peers.py
// writes it for PyTorch, naive and weight-absorbed).
std::vector<std::string> FusedCaseNames();
// MakeFusedCase also knows causal_prefill (kiln's own, issue 6's prefill
// target: 32 query and 8 KV heads, 4096 positions, head dim 128, bf16,
// causal; 137 GFLOP). It is left out of FusedCaseNames: the tests check
// every listed case against the CPU, which would take minutes for it.
// `kiln bench fused --cases causal_prefill` times it.
absl::StatusOr<FusedCase> MakeFusedCase(const std::string& name, Device device = Device::Cpu());

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_FUSED_CASES_H_
