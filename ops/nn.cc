#include "ops/nn.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/movement.h"
#include "ops/record.h"
#include "ops/reduce.h"
#include "ops/rules.h"

namespace kiln {

using ops_internal::CheckInputs;
using ops_internal::Describe;

namespace {

// Runs `f` in f32 for a 16-bit input and rounds its result back once: the
// precision PyTorch's kernels give these ops, and far less rounding noise
// than rounding every step to 8 or 11 bits.
template <typename F>
Tensor InF32(const Tensor& x, F&& f) {
  if (x.dtype() == DType::kF32) return f(x);
  return cast(f(cast(x, DType::kF32)), x.dtype());
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("softmax", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("softmax", x));
  return InF32(x, [axis](const Tensor& v) {
    const Tensor e = exp(v - max(v, axis, /*keepdim=*/true));
    return e / sum(e, axis, /*keepdim=*/true);
  });
}

Tensor rms_norm(const Tensor& x, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rms_norm", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("rms_norm", x));
  if (x.rank() == 0) {
    return Tensor::Error(absl::InvalidArgumentError("rms_norm: needs rank >= 1"));
  }
  return InF32(x, [eps](const Tensor& v) { return v * rsqrt(mean(v * v, -1, /*keepdim=*/true) + eps); });
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rms_norm", {&x, &weight}));
  return rms_norm(x, eps) * weight;
}

Tensor layer_norm(const Tensor& x, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("layer_norm", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("layer_norm", x));
  if (x.rank() == 0) {
    return Tensor::Error(absl::InvalidArgumentError("layer_norm: needs rank >= 1"));
  }
  return InF32(x, [eps](const Tensor& v) {
    const Tensor centered = v - mean(v, -1, /*keepdim=*/true);
    const Tensor variance = mean(centered * centered, -1, /*keepdim=*/true);
    return centered * rsqrt(variance + eps);
  });
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("layer_norm", {&x, &weight, &bias}));
  return layer_norm(x, eps) * weight + bias;
}

namespace {

absl::Status CheckRope(const Shape& shape, int rank, const RopeOptions& options, int* seq_axis) {
  if (rank < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rope: needs rank >= 2 ([..., seq, ..., head_dim]), got ", shape.ToString()));
  }
  absl::StatusOr<int> axis = NormalizeAxis(options.seq_axis, rank, "rope");
  if (!axis.ok()) return axis.status();
  const Dim& head = shape[rank - 1];
  if (*axis == rank - 1 || !head.is_concrete() || head.value() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rope: the last axis must be a concrete, even head dim distinct from seq_axis ",
        options.seq_axis, "; got ", shape.ToString()));
  }
  if (!(options.theta > 0) || !std::isfinite(options.theta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope: theta must be positive and finite, got ", options.theta));
  }
  if (!options.inv_freq.empty() &&
      static_cast<int64_t>(options.inv_freq.size()) * 2 != head.value()) {
    return absl::InvalidArgumentError(absl::StrCat("rope: ", options.inv_freq.size(),
                                                   " inverse frequencies for a head dim of ",
                                                   head.value()));
  }
  if (!(options.attention_scale > 0) || !std::isfinite(options.attention_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rope: attention_scale must be positive and finite, got ", options.attention_scale));
  }
  *seq_axis = *axis;
  return absl::OkStatus();
}

}  // namespace

RopeTables rope_tables(const Dim& seq, const Dim& start, int64_t head_dim, int rank,
                       const RopeOptions& options, DType dtype, Device device) {
  Shape probe;
  for (int i = 0; i < rank - 1; ++i) probe.push_back(Dim(1));
  probe.push_back(Dim(head_dim));
  int seq_axis = 0;
  if (absl::Status s = CheckRope(probe, rank, options, &seq_axis); !s.ok()) {
    return {Tensor::Error(s), Tensor::Error(s), Tensor::Error(s)};
  }
  const int64_t d = head_dim;
  const int64_t half = d / 2;
  // Angles [seq, d/2] in f32: pos * (1 / theta^(2i/d)), as llama2.c computes them.
  const Tensor pos = cast(iota(seq, start, 1, DType::kI32, device), DType::kF32);
  Tensor inv_freq;
  if (options.inv_freq.empty()) {
    const Tensor exponents = cast(iota(half, 0, 2, DType::kI32, device), DType::kF32) /
                             static_cast<double>(d);
    inv_freq = recip(pow(full({half}, options.theta, DType::kF32, device), exponents));
  } else {
    const std::vector<float> values(options.inv_freq.begin(), options.inv_freq.end());
    inv_freq = to(Tensor::FromHost<float>(values, {half}), device);
  }
  const Tensor angles = unsqueeze(pos, 1) * unsqueeze(inv_freq, 0);
  Tensor c = cos(angles);
  Tensor s = sin(angles);
  if (options.attention_scale != 1.0) {
    c = c * options.attention_scale;
    s = s * options.attention_scale;
  }
  // Element j of a head pairs with partner[j]; out_j = x_j cos - x_partner sin
  // for the first of a pair, x_j cos + x_partner sin for the second.
  Tensor cos_d, sin_d;
  std::vector<int32_t> partner(d);
  if (options.style == RopeStyle::kRotateHalf) {
    cos_d = concat({c, c}, 1);
    sin_d = concat({-s, s}, 1);
    for (int64_t j = 0; j < d; ++j) partner[j] = static_cast<int32_t>(j < half ? j + half : j - half);
  } else {
    Shape pairs{seq, half, 1};
    cos_d = reshape(concat({reshape(c, pairs), reshape(c, pairs)}, 2), {seq, d});
    sin_d = reshape(concat({reshape(-s, pairs), reshape(s, pairs)}, 2), {seq, d});
    for (int64_t j = 0; j < d; ++j) partner[j] = static_cast<int32_t>(j ^ 1);
  }
  // Place seq and d where x has them: [seq, 1, ..., 1, d].
  Shape table_shape{seq};
  for (int i = seq_axis + 1; i < rank - 1; ++i) table_shape.push_back(Dim(1));
  table_shape.push_back(Dim(d));
  RopeTables tables;
  tables.cos = reshape(cast(cos_d, dtype), table_shape);
  tables.sin = reshape(cast(sin_d, dtype), table_shape);
  tables.partner = to(Tensor::FromHost<int32_t>(partner, {d}), device);
  return tables;
}

Tensor rope(const Tensor& x, const RopeTables& tables) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rope", {&x, &tables.cos, &tables.sin, &tables.partner}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("rope", x));
  if (x.rank() < 1 || !(x.shape()[x.rank() - 1] == tables.partner.shape()[0])) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("rope: tables for head dim ", tables.partner.shape()[0].ToString(),
                     " do not fit ", Describe(x))));
  }
  return x * tables.cos + index_select(x, -1, tables.partner) * tables.sin;
}

Tensor rope(const Tensor& x, const Dim& start, const RopeOptions& options) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rope", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("rope", x));
  int seq_axis = 0;
  KILN_RETURN_IF_ERROR_TENSOR(CheckRope(x.shape(), x.rank(), options, &seq_axis));
  const int64_t d = x.shape()[x.rank() - 1].value();
  return rope(x, rope_tables(x.shape()[seq_axis], start, d, x.rank(), options, x.dtype(),
                             x.device()));
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const AttentionOptions& options) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("attention", {&q, &k, &v}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("attention", q));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType("attention", q, k));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType("attention", q, v));
  const auto bad = [&](absl::string_view why) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("attention: ", why, " (q ", Describe(q), ", k ", Describe(k), ", v ",
                     Describe(v), ")")));
  };
  if (q.rank() < 3 || k.rank() != q.rank() || v.rank() != q.rank()) {
    return bad("q, k and v need one rank >= 3: [..., heads, seq, head_dim]");
  }
  const int r = q.rank();
  const Dim& hq = q.shape()[r - 3];
  const Dim& hkv = k.shape()[r - 3];
  const Dim& head_dim = q.shape()[r - 1];
  if (!(v.shape()[r - 3] == hkv) || !(v.shape()[r - 2] == k.shape()[r - 2])) {
    return bad("k and v must have the same heads and sequence length");
  }
  if (!hq.is_concrete() || !hkv.is_concrete() || hkv.value() == 0 ||
      hq.value() % hkv.value() != 0) {
    return bad("the query heads must be a concrete multiple of the KV heads");
  }
  if (!head_dim.is_concrete()) return bad("the head dim must be concrete");
  const double scale = options.scale.value_or(
      head_dim.value() > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim.value())) : 1.0);
  const int64_t group = hq.value() / hkv.value();

  // Grouped heads: [..., Hkv, group, Tq, D] against [..., Hkv, 1, Tk, D].
  // A single query (a decode step) puts its group in the rows instead,
  // [..., Hkv, 1, group, D]: one product per KV head, which reads its keys
  // and values once for the whole group.
  const Dim& tq = q.shape()[r - 2];
  const bool group_rows = tq == Dim(1);
  Shape grouped = q.shape();
  grouped[r - 3] = hkv;
  grouped.insert(r - 2, group_rows ? Dim(1) : Dim(group));
  if (group_rows) grouped[r - 1] = Dim(group);
  const Tensor qg = reshape(q, grouped);
  const Tensor kg = unsqueeze(k, -3);
  const Tensor vg = unsqueeze(v, -3);
  // Scores, mask and softmax in f32 (for 16-bit inputs), the probabilities
  // rounded once before the product with V.
  Tensor scores = cast(matmul(qg, transpose(kg, -1, -2)), DType::kF32) * scale;

  const Dim& tk = k.shape()[r - 2];
  const Dim offset = tk - tq;
  if (options.causal && offset.min_value() < 0) {
    return bad("causal attention needs at least as many keys as queries");
  }
  // A single query sits at the last position and sees every key: no mask.
  if (options.causal && !(tq == Dim(1))) {
    const Tensor query_pos = unsqueeze(iota(tq, offset, 1, DType::kI32, q.device()), 1);
    const Tensor key_pos = unsqueeze(iota(tk, 0, 1, DType::kI32, q.device()), 0);
    scores = where(ge(query_pos, key_pos), scores, -std::numeric_limits<double>::infinity());
  }
  const Tensor out = matmul(cast(softmax(scores, -1), q.dtype()), vg);
  if (!out.ok()) return out;
  Shape out_shape = q.shape();
  out_shape[r - 1] = v.shape()[r - 1];
  return reshape(out, out_shape);
}

Tensor gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up,
                 const Tensor& w_down) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("gated_mlp", {&x, &w_gate, &w_up, &w_down}));
  return matmul(silu(matmul(x, w_gate)) * matmul(x, w_up), w_down);
}

}  // namespace kiln
