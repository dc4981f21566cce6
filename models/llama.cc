#include "models/llama.h"

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "ops/quant.h"

namespace kiln::models {
namespace {

absl::Status CheckWeight(absl::string_view name, const Tensor& t, const Shape& shape,
                         DType dtype) {
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat("missing weight ", name));
  if (!t.ok()) return t.status();
  if (!(t.shape() == shape) || t.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("weight ", name, " is ", DTypeName(t.dtype()),
                                                   t.shape().ToString(), ", expected ",
                                                   DTypeName(dtype), shape.ToString()));
  }
  return absl::OkStatus();
}

// Whether every layer's wq, wk and wv can be one matrix: all unpacked, or
// all packed in one format and dtype (their blocks' rows then concatenate).
bool MergeableQkv(const std::vector<LlamaLayerWeights>& layers) {
  if (layers.empty()) return false;
  const std::optional<PackedWeight> first = AsPackedWeight(layers[0].wq);
  for (const LlamaLayerWeights& l : layers) {
    for (const Tensor* t : {&l.wq, &l.wk, &l.wv}) {
      const std::optional<PackedWeight> p = AsPackedWeight(*t);
      if (p.has_value() != first.has_value()) return false;
      if (p && (p->format != first->format || p->dtype != first->dtype)) return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<LlamaModel> LlamaModel::Create(LlamaConfig config, LlamaWeights weights) {
  const bool on_gpu = weights.embedding.defined() && weights.embedding.device().type == DeviceType::kCuda;
  return Create(std::move(config), std::move(weights), on_gpu);
}

absl::StatusOr<LlamaModel> LlamaModel::Create(LlamaConfig config, LlamaWeights weights, bool merge_qkv) {
  if (absl::Status s = config.Validate("LlamaModel"); !s.ok()) return s;
  const int64_t dim = config.dim, hidden = config.hidden_dim, kv = config.kv_dim();
  const int64_t qd = config.q_dim();
  const int64_t head = config.head_dim(), vocab = config.vocab_size, r = config.lora_rank;
  const DType dt = config.dtype;
  if (static_cast<int>(weights.layers.size()) != config.n_layers) {
    return absl::InvalidArgumentError(absl::StrCat("LlamaModel: ", weights.layers.size(),
                                                   " layers of weights for a config of ",
                                                   config.n_layers));
  }
  std::vector<std::pair<std::string, std::pair<const Tensor*, Shape>>> checks = {
      {"embedding", {&weights.embedding, Shape{vocab, dim}}},
      {"final_norm", {&weights.final_norm, Shape{dim}}},
      {"classifier", {&weights.classifier, Shape{vocab, dim}}},
  };
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const LlamaLayerWeights& l = weights.layers[i];
    const std::string p = absl::StrCat("layers.", i, ".");
    const std::vector<std::tuple<std::string, const Tensor*, Shape>> layer = {
        {"attention_norm", &l.attention_norm, Shape{dim}}, {"wq", &l.wq, Shape{qd, dim}},
        {"wk", &l.wk, Shape{kv, dim}},         {"wv", &l.wv, Shape{kv, dim}},
        {"wo", &l.wo, Shape{dim, qd}},         {"ffn_norm", &l.ffn_norm, Shape{dim}},
        {"w_gate", &l.w_gate, Shape{hidden, dim}}, {"w_down", &l.w_down, Shape{dim, hidden}},
        {"w_up", &l.w_up, Shape{hidden, dim}}};
    for (const auto& [name, t, shape] : layer) checks.push_back({p + name, {t, shape}});
    if (config.qkv_bias) {
      checks.push_back({p + "bq", {&l.bq, Shape{qd}}});
      checks.push_back({p + "bk", {&l.bk, Shape{kv}}});
      checks.push_back({p + "bv", {&l.bv, Shape{kv}}});
    }
    if (config.o_bias) checks.push_back({p + "bo", {&l.bo, Shape{dim}}});
    if (config.qk_norm) {
      checks.push_back({p + "q_norm", {&l.q_norm, Shape{head}}});
      checks.push_back({p + "k_norm", {&l.k_norm, Shape{head}}});
    }
    if (r > 0) {
      const std::vector<std::tuple<std::string, const LoraAdapter*, int64_t, int64_t>> adapters =
          {{"lora_q", &l.lora_q, dim, qd},           {"lora_k", &l.lora_k, dim, kv},
           {"lora_v", &l.lora_v, dim, kv},           {"lora_o", &l.lora_o, qd, dim},
           {"lora_gate", &l.lora_gate, dim, hidden}, {"lora_up", &l.lora_up, dim, hidden},
           {"lora_down", &l.lora_down, hidden, dim}};
      for (const auto& [name, a, in, out] : adapters) {
        checks.push_back({p + name + ".a", {&a->a, Shape{r, in}}});
        checks.push_back({p + name + ".b", {&a->b, Shape{out, r}}});
      }
    }
  }
  for (const auto& [name, check] : checks) {
    if (absl::Status s = CheckWeight(name, *check.first, check.second, dt); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("LlamaModel: ", s.message()));
    }
  }
  std::vector<Tensor> qkv_t;
  if (merge_qkv && MergeableQkv(weights.layers)) {
    // Packed weights merge their blocks (rows stay whole) and stay packed.
    const bool packed = AsPackedWeight(weights.layers[0].wq).has_value();
    const auto blocks = [&](const Tensor& t) { return packed ? AsPackedWeight(t)->blocks : t; };
    std::vector<Tensor> merged;
    for (LlamaLayerWeights& l : weights.layers) {
      merged.push_back(contiguous(concat({blocks(l.wq), blocks(l.wk), blocks(l.wv)}, 0)));
    }
    if (absl::Status s = RealizeAll(merged); !s.ok()) return s;
    std::vector<Tensor> parts;
    for (size_t i = 0; i < merged.size(); ++i) {
      LlamaLayerWeights& l = weights.layers[i];
      const std::optional<PackedWeight> format = AsPackedWeight(l.wq);
      const auto rows = [&](int64_t from, int64_t to) {
        const Tensor part = slice(merged[i], 0, from, to);
        parts.push_back(part);
        return part;
      };
      const auto weight = [&](const Tensor& rows) {
        return format ? Unpack({rows, format->format, format->dtype}) : rows;
      };
      l.wq = weight(rows(0, qd));
      l.wk = weight(rows(qd, qd + kv));
      l.wv = weight(rows(qd + kv, qd + 2 * kv));
      if (format) {
        qkv_t.push_back(transpose(weight(merged[i]), 0, 1));
      } else {
        qkv_t.push_back(transpose(merged[i], 0, 1));
        parts.push_back(qkv_t.back());
      }
    }
    if (absl::Status s = RealizeAll(parts); !s.ok()) return s;
  }
  LlamaWeights transposed = weights;
  std::vector<Tensor> views;
  const auto transpose_in_place = [&](Tensor& t) {
    if (!t.defined()) return;
    const bool packed = AsPackedWeight(t).has_value();
    t = transpose(t, 0, 1);
    // A packed weight's transpose stays a view of its decoded values.
    if (!packed) views.push_back(t);
  };
  transpose_in_place(transposed.classifier);
  for (LlamaLayerWeights& l : transposed.layers) {
    for (Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      transpose_in_place(*t);
    }
    for (LoraAdapter* a : {&l.lora_q, &l.lora_k, &l.lora_v, &l.lora_o, &l.lora_gate, &l.lora_up,
                           &l.lora_down}) {
      transpose_in_place(a->a);
      transpose_in_place(a->b);
    }
  }
  if (absl::Status s = RealizeAll(views); !s.ok()) return s;
  RopeOptions rope{config.rope_theta, config.rope_style, /*seq_axis=*/0};
  if (config.rope_scaling.type != RopeScaling::Type::kDefault) {
    absl::StatusOr<RopeFrequencies> freqs =
        ComputeRopeFrequencies(config.rope_theta, head, config.rope_scaling);
    if (!freqs.ok()) return freqs.status();
    rope.inv_freq = std::move(freqs->inv_freq);
    rope.attention_scale = freqs->attention_scale;
  }
  return LlamaModel(std::move(config), std::move(weights), std::move(transposed), std::move(qkv_t),
                    std::move(rope));
}

absl::StatusOr<LlamaModel> LlamaModel::To(Device device) const {
  LlamaWeights moved = weights_;
  std::vector<Tensor> all;
  const auto move = [&](Tensor& t) {
    if (!t.defined()) return;
    if (std::optional<PackedWeight> packed = AsPackedWeight(t)) {
      packed->blocks = to(packed->blocks, device);
      all.push_back(packed->blocks);
      t = Unpack(*packed);
      return;
    }
    t = to(t, device);
    all.push_back(t);
  };
  move(moved.embedding);
  move(moved.final_norm);
  if (config_.tied_embeddings) {
    moved.classifier = moved.embedding;
  } else {
    move(moved.classifier);
  }
  for (LlamaLayerWeights& l : moved.layers) {
    for (Tensor* t : {&l.attention_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate,
                      &l.w_down, &l.w_up, &l.q_norm, &l.k_norm, &l.bq, &l.bk, &l.bv, &l.bo}) {
      move(*t);
    }
    for (LoraAdapter* a : {&l.lora_q, &l.lora_k, &l.lora_v, &l.lora_o, &l.lora_gate, &l.lora_up,
                           &l.lora_down}) {
      move(a->a);
      move(a->b);
    }
  }
  if (absl::Status s = RealizeAll(all); !s.ok()) return s;
  return Create(config_, std::move(moved));
}

absl::StatusOr<KvCache> LlamaModel::NewCache(Device device) const {
  KvCache cache;
  const Shape shape{config_.n_kv_heads, config_.max_seq_len, config_.head_dim()};
  std::vector<Tensor> all;
  for (int l = 0; l < config_.n_layers; ++l) {
    cache.k.push_back(contiguous(zeros(shape, config_.dtype, device)));
    cache.v.push_back(contiguous(zeros(shape, config_.dtype, device)));
    all.push_back(cache.k.back());
    all.push_back(cache.v.back());
  }
  if (absl::Status s = RealizeAll(all); !s.ok()) return s;
  return cache;
}

Symbol LlamaModel::PositionSymbol(int64_t length) const {
  return Symbol("pos", std::max<int64_t>(0, config_.max_seq_len - length));
}

Tensor LlamaModel::Linear(const Tensor& x, const Tensor& w_t, const LoraAdapter& lora_t,
                          const Tensor& bias) const {
  return Adjusted(matmul(x, w_t), x, lora_t, bias);
}

Tensor LlamaModel::Adjusted(const Tensor& product, const Tensor& x, const LoraAdapter& lora_t,
                            const Tensor& bias) const {
  Tensor y = product;
  if (bias.defined()) y = y + bias;
  if (config_.lora_rank > 0) {
    y = y + matmul(matmul(x, lora_t.a), lora_t.b) * config_.lora_scale();
  }
  return y;
}

Tensor LlamaModel::Forward(const Tensor& tokens, const Dim& start, KvCache& cache,
                           bool all_positions) const {
  if (tokens.ok() && tokens.rank() != 1) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "LlamaModel::Forward: tokens must be 1-d, got ", tokens.shape().ToString())));
  }
  if (static_cast<int>(cache.k.size()) != config_.n_layers ||
      static_cast<int>(cache.v.size()) != config_.n_layers) {
    return Tensor::Error(absl::InvalidArgumentError(
        "LlamaModel::Forward: the cache does not belong to this model; use NewCache()"));
  }
  const LlamaConfig& c = config_;
  const Dim seq = tokens.ok() ? tokens.shape()[0] : Dim(1);
  if (seq == Dim(0)) {
    return Tensor::Error(absl::InvalidArgumentError("LlamaModel::Forward: no tokens"));
  }
  // One set of RoPE tables serves every layer's queries and keys.
  const RopeTables rope_for_step = StepRope(seq, start);
  Tensor x = Embed(tokens);  // [T, dim]
  for (int l = 0; l < c.n_layers; ++l) {
    x = x + AttentionOutput(l, x, rope_for_step, start, cache);
    x = x + MlpOutput(l, x);
  }
  return Logits(x, all_positions);
}

Tensor LlamaModel::Embed(const Tensor& tokens) const {
  const Tensor ids = to(tokens, device());
  // A packed table: the tokens' rows of blocks, then those decoded.
  if (std::optional<PackedWeight> packed = AsPackedWeight(weights_.embedding)) {
    packed->blocks = index_select(packed->blocks, 0, ids);
    return Unpack(*packed);
  }
  return index_select(weights_.embedding, 0, ids);
}

RopeTables LlamaModel::StepRope(const Dim& seq, const Dim& start) const {
  return rope_tables(seq, start, config_.head_dim(), /*rank=*/3, rope_, config_.dtype, device());
}

Tensor LlamaModel::AttentionOutput(int l, const Tensor& x, const RopeTables& rope_for_step, const Dim& start,
                                   KvCache& cache) const {
  const LlamaConfig& c = config_;
  const int64_t head = c.head_dim();
  const Dim seq = x.ok() ? x.shape()[0] : Dim(1);
  const Dim end = start + seq;
  const LlamaLayerWeights& w = weights_.layers[l];
  const LlamaLayerWeights& wt = transposed_.layers[l];
  const Tensor h = rms_norm(x, w.attention_norm, c.norm_eps);
  Tensor q_lin, k_lin, v_lin;
  if (!qkv_t_.empty()) {
    const int64_t qd = c.q_dim(), kv = c.kv_dim();
    const Tensor qkv = matmul(h, qkv_t_[l]);
    q_lin = Adjusted(slice(qkv, 1, 0, qd), h, wt.lora_q, w.bq);
    k_lin = Adjusted(slice(qkv, 1, qd, qd + kv), h, wt.lora_k, w.bk);
    v_lin = Adjusted(slice(qkv, 1, qd + kv, qd + 2 * kv), h, wt.lora_v, w.bv);
  } else {
    q_lin = Linear(h, wt.wq, wt.lora_q, w.bq);
    k_lin = Linear(h, wt.wk, wt.lora_k, w.bk);
    v_lin = Linear(h, wt.wv, wt.lora_v, w.bv);
  }
  Tensor q = reshape(q_lin, {seq, c.n_heads, head});
  Tensor k = reshape(k_lin, {seq, c.n_kv_heads, head});
  const Tensor v = reshape(v_lin, {seq, c.n_kv_heads, head});
  if (c.qk_norm) {
    q = rms_norm(q, w.q_norm, c.norm_eps);
    k = rms_norm(k, w.k_norm, c.norm_eps);
  }
  q = transpose(rope(q, rope_for_step), 0, 1);  // [heads, T, head]
  k = transpose(rope(k, rope_for_step), 0, 1);  // [kv_heads, T, head]
  cache.k[l] = slice_update(cache.k[l], k, 1, start);
  cache.v[l] = slice_update(cache.v[l], transpose(v, 0, 1), 1, start);
  const Tensor keys = slice(cache.k[l], 1, 0, end);
  const Tensor values = slice(cache.v[l], 1, 0, end);
  const Tensor o = attention(q, keys, values, {.causal = true});  // [heads, T, head]
  return Linear(reshape(transpose(o, 0, 1), {seq, c.q_dim()}), wt.wo, wt.lora_o, w.bo);
}

Tensor LlamaModel::MlpOutput(int l, const Tensor& x) const {
  const LlamaLayerWeights& w = weights_.layers[l];
  const LlamaLayerWeights& wt = transposed_.layers[l];
  const Tensor f = rms_norm(x, w.ffn_norm, config_.norm_eps);
  const Tensor gated = silu(Linear(f, wt.w_gate, wt.lora_gate)) * Linear(f, wt.w_up, wt.lora_up);
  return Linear(gated, wt.w_down, wt.lora_down);
}

Tensor LlamaModel::Logits(const Tensor& x, bool all_positions) const {
  const Tensor last = all_positions || !x.ok() ? x : slice(x, 0, x.shape()[0] - 1, x.shape()[0]);
  return matmul(rms_norm(last, weights_.final_norm, config_.norm_eps), transposed_.classifier);
}

}  // namespace kiln::models
