// A Llama-style decoder written with lazy tensor ops. Prefill (many
// positions) and decode (one position) run through the same Forward; the
// start position is a Dim, so a symbolic one gives one trace structure for
// every decode step.
#ifndef KILN_MODELS_LLAMA_H_
#define KILN_MODELS_LLAMA_H_

#include <vector>

#include "absl/status/statusor.h"
#include "models/llama_config.h"
#include "models/llama_weights.h"
#include "ops/nn.h"
#include "tensor/dim.h"
#include "tensor/tensor.h"

namespace kiln::models {

// Keys and values of every layer, preallocated to the full context:
// [n_kv_heads, max_seq_len, head_dim] each. Forward replaces the tensors with
// updated ones, which the executor writes in place.
struct KvCache {
  std::vector<Tensor> k;
  std::vector<Tensor> v;
};

class LlamaModel {
 public:
  // Checks the config and every weight's shape and dtype against it. With
  // `merge_qkv` (the default on a GPU) each layer's wq, wk and wv are copied
  // once into one [q_dim + 2 kv_dim, dim] matrix, and weights() holds views
  // of it: a step then runs one product for the three, which streams the
  // weights faster than three small ones. (Not on the CPU by default: the
  // copy would sit beside a memory-mapped file's pages.)
  static absl::StatusOr<LlamaModel> Create(LlamaConfig config, LlamaWeights weights);
  static absl::StatusOr<LlamaModel> Create(LlamaConfig config, LlamaWeights weights, bool merge_qkv);

  const LlamaConfig& config() const { return config_; }
  Device device() const { return weights_.embedding.device(); }

  // The same model with every weight copied to `device` once (realized).
  absl::StatusOr<LlamaModel> To(Device device) const;
  const LlamaWeights& weights() const { return weights_; }

  // A zeroed, realized cache on `device`.
  absl::StatusOr<KvCache> NewCache(Device device = Device::Cpu()) const;

  // Records the forward pass of `tokens` (i32 [T]) at positions start ..
  // start + T - 1, attending to the cache's first start + T positions, and
  // writing this step's keys and values into `cache`. Returns the logits of
  // the last position ([1, vocab]) or of every position ([T, vocab]).
  Tensor Forward(const Tensor& tokens, const Dim& start, KvCache& cache,
                 bool all_positions = false) const;

  // The parts of Forward, in its order: Embed, then per layer
  // x += AttentionOutput, x += MlpOutput, then Logits. Tensor parallelism
  // (tensor_parallel.h) runs them per rank on the rank's heads and hidden
  // units and sums the ranks' AttentionOutput and MlpOutput.
  Tensor Embed(const Tensor& tokens) const;  // [T, dim]
  // The RoPE tables of a step of `seq` positions from `start`.
  RopeTables StepRope(const Dim& seq, const Dim& start) const;
  // Layer `l`'s attention over x [T, dim] at `start`, writing the step's
  // keys and values into `cache`: its output projection, before the residual.
  Tensor AttentionOutput(int l, const Tensor& x, const RopeTables& rope, const Dim& start, KvCache& cache) const;
  // Layer `l`'s gated MLP of x, before the residual.
  Tensor MlpOutput(int l, const Tensor& x) const;
  // The logits of x's last position ([1, vocab]) or of every one.
  Tensor Logits(const Tensor& x, bool all_positions) const;

  // A symbol for the start position of a step of `length` tokens: its bound
  // keeps start + length within the context.
  Symbol PositionSymbol(int64_t length) const;

 private:
  LlamaModel(LlamaConfig config, LlamaWeights weights, LlamaWeights transposed, std::vector<Tensor> qkv_t,
             RopeOptions rope)
      : config_(std::move(config)),
        weights_(std::move(weights)),
        transposed_(std::move(transposed)),
        qkv_t_(std::move(qkv_t)),
        rope_(std::move(rope)) {}
  // x @ w^T (+ the adapter) (+ bias when defined), with w^T taken from
  // transposed_.
  Tensor Linear(const Tensor& x, const Tensor& w_t, const LoraAdapter& lora_t,
                const Tensor& bias = Tensor()) const;
  // As Linear, from `product` = x @ w^T computed already.
  Tensor Adjusted(const Tensor& product, const Tensor& x, const LoraAdapter& lora_t, const Tensor& bias) const;

  LlamaConfig config_;
  LlamaWeights weights_;
  // Every matrix as a realized [in, out] view (no copy), made once so that no
  // step records a transpose per projection.
  LlamaWeights transposed_;
  // With merge_qkv: each layer's [dim, q_dim + 2 kv_dim] merged projection.
  std::vector<Tensor> qkv_t_;
  // Theta, style and (for scaled RoPE) the frequencies, computed once.
  RopeOptions rope_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_LLAMA_H_
