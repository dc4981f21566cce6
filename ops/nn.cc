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

Tensor softmax(const Tensor& x, int axis) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("softmax", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("softmax", x));
  const Tensor shifted = x - max(x, axis, /*keepdim=*/true);
  const Tensor e = exp(shifted);
  return e / sum(e, axis, /*keepdim=*/true);
}

Tensor rms_norm(const Tensor& x, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rms_norm", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("rms_norm", x));
  if (x.rank() == 0) {
    return Tensor::Error(absl::InvalidArgumentError("rms_norm: needs rank >= 1"));
  }
  return x * rsqrt(mean(x * x, -1, /*keepdim=*/true) + eps);
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
  const Tensor centered = x - mean(x, -1, /*keepdim=*/true);
  const Tensor variance = mean(centered * centered, -1, /*keepdim=*/true);
  return centered * rsqrt(variance + eps);
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("layer_norm", {&x, &weight, &bias}));
  return layer_norm(x, eps) * weight + bias;
}

Tensor rope(const Tensor& x, const Dim& start, const RopeOptions& options) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("rope", {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating("rope", x));
  if (x.rank() < 2) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("rope: needs rank >= 2 ([..., seq, ..., head_dim]), got ", Describe(x))));
  }
  absl::StatusOr<int> seq_axis = NormalizeAxis(options.seq_axis, x.rank(), "rope");
  if (!seq_axis.ok()) return Tensor::Error(seq_axis.status());
  const int last = x.rank() - 1;
  const Dim& head = x.shape()[last];
  if (*seq_axis == last || !head.is_concrete() || head.value() % 2 != 0) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "rope: the last axis must be a concrete, even head dim distinct from seq_axis ",
        options.seq_axis, "; got ", Describe(x))));
  }
  if (!(options.theta > 0) || !std::isfinite(options.theta)) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("rope: theta must be positive and finite, got ", options.theta)));
  }
  const int64_t d = head.value();
  const int64_t half = d / 2;
  const Dim& seq = x.shape()[*seq_axis];
  const Device device = x.device();

  // Angles [seq, d/2] in f32: pos * (1 / theta^(2i/d)).
  const Tensor pos = cast(iota(seq, start, 1, DType::kI32, device), DType::kF32);
  const Tensor exponents = cast(iota(half, 0, 2, DType::kI32, device), DType::kF32) /
                           static_cast<double>(d);
  const Tensor inv_freq = recip(pow(full({half}, options.theta, DType::kF32, device), exponents));
  const Tensor angles = unsqueeze(pos, 1) * unsqueeze(inv_freq, 0);
  // Place seq and d/2 where x has them: [seq, 1, ..., 1, d/2].
  Shape table_shape{seq};
  for (int i = *seq_axis + 1; i < last; ++i) table_shape.push_back(Dim(1));
  table_shape.push_back(Dim(half));
  const Tensor c = reshape(cast(cos(angles), x.dtype()), table_shape);
  const Tensor s = reshape(cast(sin(angles), x.dtype()), table_shape);

  if (options.style == RopeStyle::kRotateHalf) {
    const Tensor x1 = slice(x, -1, 0, half);
    const Tensor x2 = slice(x, -1, half, d);
    return concat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
  }
  Shape pairs = x.shape();
  pairs[last] = Dim(half);
  pairs.push_back(Dim(2));
  const Tensor xp = reshape(x, pairs);
  const Tensor x0 = squeeze(slice(xp, -1, 0, 1), -1);
  const Tensor x1 = squeeze(slice(xp, -1, 1, 2), -1);
  const Tensor r0 = unsqueeze(x0 * c - x1 * s, -1);
  const Tensor r1 = unsqueeze(x0 * s + x1 * c, -1);
  return reshape(concat({r0, r1}, -1), x.shape());
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
  Shape grouped = q.shape();
  grouped[r - 3] = hkv;
  grouped.insert(r - 2, Dim(group));
  const Tensor qg = reshape(q, grouped);
  const Tensor kg = unsqueeze(k, -3);
  const Tensor vg = unsqueeze(v, -3);
  Tensor scores = matmul(qg, transpose(kg, -1, -2)) * scale;

  if (options.causal) {
    const Dim& tq = q.shape()[r - 2];
    const Dim& tk = k.shape()[r - 2];
    const Dim offset = tk - tq;
    if (offset.min_value() < 0) return bad("causal attention needs at least as many keys as queries");
    const Tensor query_pos = unsqueeze(iota(tq, offset, 1, DType::kI32, q.device()), 1);
    const Tensor key_pos = unsqueeze(iota(tk, 0, 1, DType::kI32, q.device()), 0);
    scores = where(ge(query_pos, key_pos), scores, -std::numeric_limits<double>::infinity());
  }
  const Tensor out = matmul(softmax(scores, -1), vg);
  if (!out.ok()) return out;
  Shape out_shape = out.shape();
  out_shape.erase(r - 2);
  out_shape[r - 3] = hq;
  return reshape(out, out_shape);
}

Tensor gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up,
                 const Tensor& w_down) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("gated_mlp", {&x, &w_gate, &w_up, &w_down}));
  return matmul(silu(matmul(x, w_gate)) * matmul(x, w_up), w_down);
}

}  // namespace kiln
