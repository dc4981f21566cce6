// Composite ops, each defined once here in terms of primitives, so the
// optimizer sees plain algebra it can reorder and fuse. For f16 and bf16
// inputs, softmax, the norms and attention's scores compute in f32 and round
// their result once.
#ifndef KILN_OPS_NN_H_
#define KILN_OPS_NN_H_

#include <optional>
#include <vector>

#include "tensor/dim.h"
#include "tensor/tensor.h"

namespace kiln {

// exp(x - max(x)) / sum(exp(x - max(x))) along `axis`.
Tensor softmax(const Tensor& x, int axis = -1);

// x * rsqrt(mean(x^2, -1) + eps) [* weight], over the last axis.
Tensor rms_norm(const Tensor& x, double eps);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps);

// (x - mean) * rsqrt(var + eps) [* weight + bias], over the last axis; the
// variance is the biased one.
Tensor layer_norm(const Tensor& x, double eps);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);

enum class RopeStyle {
  kInterleaved,  // rotates pairs (2i, 2i+1): llama2.c, Meta's checkpoints
  kRotateHalf,   // rotates (i, i + d/2): Hugging Face checkpoints
};

struct RopeOptions {
  double theta = 10000.0;
  RopeStyle style = RopeStyle::kInterleaved;
  int seq_axis = -2;  // the axis positions advance along; the last is the head dim
  // Scaled RoPE (models/rope_scaling.h): when not empty, pair i turns by
  // pos * inv_freq[i] instead (theta unused), one entry per pair; cos and sin
  // are multiplied by attention_scale.
  std::vector<double> inv_freq;
  double attention_scale = 1.0;
};

// Rotary position embedding of x[..., d] (d even) for positions start,
// start + 1, ... along options.seq_axis: pair i turns by pos * theta^(-2i/d).
Tensor rope(const Tensor& x, const Dim& start, const RopeOptions& options = {});

// The same in two parts, so that several tensors (every layer's queries and
// keys) share one set of tables: rope(x) = x * cos + x[..., partner] * sin,
// where partner swaps the two elements of each rotated pair and sin carries
// the sign. Tables are [seq, 1, ..., 1, d] for a tensor of `rank` whose
// positions run along options.seq_axis.
struct RopeTables {
  Tensor cos;
  Tensor sin;
  Tensor partner;  // i32 [d]
};
RopeTables rope_tables(const Dim& seq, const Dim& start, int64_t head_dim, int rank,
                       const RopeOptions& options, DType dtype, Device device = Device::Cpu());
Tensor rope(const Tensor& x, const RopeTables& tables);

struct AttentionOptions {
  bool causal = false;
  std::optional<double> scale;  // default 1 / sqrt(head dim)
};

// softmax(q k^T * scale [+ causal mask]) v, for q [..., Hq, Tq, D],
// k [..., Hkv, Tk, D], v [..., Hkv, Tk, Dv] with Hq a multiple of Hkv
// (grouped-query attention: query head h reads KV head h / (Hq / Hkv)).
// Causal: query i sits at position Tk - Tq + i and sees keys up to it.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const AttentionOptions& options = {});

// (silu(x @ w_gate) * (x @ w_up)) @ w_down, weights laid out [in, out].
Tensor gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up,
                 const Tensor& w_down);

}  // namespace kiln

#endif  // KILN_OPS_NN_H_
