#include "models/gguf/gguf_model.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/status_macros.h"
#include "ops/quant.h"
#include "tensor/storage.h"
#include "tensor/tensor.h"

namespace kiln::models {

const char kGgufArchitectures[] = "llama, qwen2, qwen3";

namespace {

struct Architecture {
  const char* name;
  bool permuted_qk;  // llama.cpp's converter reorders attn_q/attn_k rows
  bool qk_norm;      // attn_q_norm / attn_k_norm on every layer
};
constexpr Architecture kArchitectures[] = {
    {"llama", true, false},
    {"qwen2", false, false},
    {"qwen3", false, true},
};

absl::StatusOr<const Architecture*> FindArchitecture(const GgufFile& f) {
  if (f.Find("general.architecture") == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.path(), ": no metadata \"general.architecture\" (kiln reads ", kGgufArchitectures, ")"));
  }
  absl::StatusOr<absl::string_view> name = f.GetString("general.architecture");
  if (!name.ok()) return name.status();
  for (const Architecture& a : kArchitectures) {
    if (*name == a.name) return &a;
  }
  return absl::UnimplementedError(absl::StrCat(f.path(), ": general.architecture \"", *name,
                                               "\" is not supported; kiln reads ",
                                               kGgufArchitectures));
}

// Reads "<arch>.<name>" keys.
class ArchMetadata {
 public:
  ArchMetadata(const GgufFile& f, absl::string_view arch) : f_(f), arch_(arch) {}

  std::string Key(absl::string_view name) const { return absl::StrCat(arch_, ".", name); }
  bool Has(absl::string_view name) const { return f_.Find(Key(name)) != nullptr; }
  absl::Status Missing(const std::string& key) const {
    return absl::InvalidArgumentError(
        absl::StrCat(f_.path(), ": metadata \"", key, "\" is missing"));
  }
  absl::Status Unsupported(absl::string_view what) const {
    return absl::UnimplementedError(absl::StrCat(f_.path(), ": ", what, " is not supported"));
  }

  // A positive int, or an array of them that is the same for every layer
  // (some converters write per-layer head counts).
  absl::StatusOr<int> PositiveInt(absl::string_view name, std::optional<int> fallback) const {
    const std::string key = Key(name);
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    std::optional<int64_t> value = v->AsInt();
    if (v->is_array() && v->size() > 0 && v->Element(0).is_integer()) {
      value = v->Element(0).AsInt();
      for (uint64_t i = 1; i < v->size(); ++i) {
        if (v->Element(i).AsInt() != value) {
          return Unsupported(absl::StrCat("\"", key, "\" varying per layer (", v->ToString(), ")"));
        }
      }
    }
    if (!value || *value <= 0 || *value > INT_MAX) {
      return f_.KeyError(key, absl::StrCat("is ", v->ToString(), ", not a positive int"));
    }
    return static_cast<int>(*value);
  }

  absl::StatusOr<double> Number(absl::string_view name, std::optional<double> fallback) const {
    const std::string key = Key(name);
    if (f_.Find(key) == nullptr) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    return f_.GetF64(key);
  }

  absl::StatusOr<std::string> String(absl::string_view name) const {
    const std::string key = Key(name);
    if (f_.Find(key) == nullptr) return std::string();
    absl::StatusOr<absl::string_view> s = f_.GetString(key);
    if (!s.ok()) return s.status();
    return std::string(*s);
  }

 private:
  const GgufFile& f_;
  std::string arch_;
};

// ne with trailing 1s dropped, so [16] and [16, 1] compare equal.
std::vector<int64_t> Trimmed(std::vector<int64_t> ne) {
  while (!ne.empty() && ne.back() == 1) ne.pop_back();
  return ne;
}

std::string Brackets(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

// The tensor `name` as ne = reverse(shape), or an error naming it.
absl::StatusOr<const GgufTensorInfo*> FindShaped(const GgufFile& f, const std::string& name,
                                                 const std::vector<int64_t>& shape,
                                                 absl::string_view implied_by) {
  const GgufTensorInfo* t = f.FindTensor(name);
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat(f.path(), ": no tensor '", name, "'"));
  }
  const std::vector<int64_t> ne(shape.rbegin(), shape.rend());
  if (Trimmed(t->dims) != Trimmed(ne)) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.path(), ": tensor '", name, "' is ", t->Describe(),
        " (GGUF order, row length first), but ", implied_by, " implies ", Brackets(ne)));
  }
  if (!CanDequantize(t->type)) {
    return absl::UnimplementedError(absl::StrCat(f.path(), ": tensor '", name, "' is ",
                                                 t->Describe(), "; kiln reads weights stored as ",
                                                 DequantizableTypeNames()));
  }
  return t;
}

absl::StatusOr<std::vector<float>> ReadFloats(const GgufFile& f, const GgufTensorInfo& t) {
  std::vector<float> values(static_cast<size_t>(t.elements()));
  if (absl::Status s = Dequantize(t.type, f.TensorData(t), absl::MakeSpan(values)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(f.path(), ": tensor '", t.name, "': ", s.message()));
  }
  return values;
}

absl::Status ReadRopeScaling(const GgufFile& f, const ArchMetadata& m, LlamaConfig& c) {
  RopeScaling& s = c.rope_scaling;
  std::string type;
  KILN_ASSIGN(type, m.String("rope.scaling.type"));
  double legacy_linear = 0;
  KILN_ASSIGN(legacy_linear, m.Number("rope.scale_linear", 0.0));
  if ((type.empty() || type == "none") && legacy_linear != 0 && legacy_linear != 1) {
    s.type = RopeScaling::Type::kLinear;
    s.factor = legacy_linear;
  } else if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
    KILN_ASSIGN(s.factor, m.Number("rope.scaling.factor", std::nullopt));
  } else if (type == "yarn") {
    s.type = RopeScaling::Type::kYarn;
    KILN_ASSIGN(s.factor, m.Number("rope.scaling.factor", std::nullopt));
    int original = 0;
    KILN_ASSIGN(original, m.PositiveInt("rope.scaling.original_context_length", c.max_seq_len));
    s.original_max_position_embeddings = original;
    KILN_ASSIGN(s.beta_fast, m.Number("rope.scaling.yarn_beta_fast", 32.0));
    KILN_ASSIGN(s.beta_slow, m.Number("rope.scaling.yarn_beta_slow", 1.0));
    double log_multiplier = 0;
    KILN_ASSIGN(log_multiplier, m.Number("rope.scaling.yarn_log_multiplier", 0.0));
    if (log_multiplier != 0) {
      return m.Unsupported(absl::StrCat("\"", m.Key("rope.scaling.yarn_log_multiplier"), "\""));
    }
    // llama.cpp multiplies YaRN's default scale 0.1 ln(factor) + 1 by this.
    if (m.Has("rope.scaling.attn_factor")) {
      double attn = 1;
      KILN_ASSIGN(attn, m.Number("rope.scaling.attn_factor", 1.0));
      s.attention_factor = attn * (s.factor > 1 ? 0.1 * std::log(s.factor) + 1.0 : 1.0);
    }
  } else if (!type.empty() && type != "none") {
    return m.Unsupported(absl::StrCat("RoPE scaling \"", type, "\" (\"", m.Key("rope.scaling.type"),
                                      "\"; kiln reads none, linear and yarn)"));
  }
  // Llama 3.1+ files carry their scaling as per-pair divisors.
  if (const GgufTensorInfo* freqs = f.FindTensor("rope_freqs.weight")) {
    if (s.type != RopeScaling::Type::kDefault) {
      return m.Unsupported(
          absl::StrCat("rope_freqs.weight together with RoPE scaling ", s.ToString()));
    }
    const GgufTensorInfo* t = nullptr;
    KILN_ASSIGN(t, FindShaped(f, freqs->name, {c.head_dim() / 2},
                              absl::StrCat("a head dim of ", c.head_dim())));
    std::vector<float> factors;
    KILN_ASSIGN(factors, ReadFloats(f, *t));
    s.type = RopeScaling::Type::kFactors;
    s.factors.assign(factors.begin(), factors.end());
  }
  return absl::OkStatus();
}

absl::Status ReadHeads(const ArchMetadata& m, LlamaConfig& c) {
  KILN_ASSIGN(c.n_heads, m.PositiveInt("attention.head_count", std::nullopt));
  KILN_ASSIGN(c.n_kv_heads, m.PositiveInt("attention.head_count_kv", c.n_heads));
  const int usual = c.dim % c.n_heads == 0 ? c.dim / c.n_heads : 0;
  int key_length = 0, value_length = 0;
  KILN_ASSIGN(key_length, m.PositiveInt("attention.key_length", usual));
  KILN_ASSIGN(value_length, m.PositiveInt("attention.value_length", key_length));
  if (key_length == 0) {
    return m.Missing(m.Key("attention.key_length"));  // heads do not divide the width
  }
  if (value_length != key_length) {
    return m.Unsupported(
        absl::StrCat("value heads of ", value_length, " beside key heads of ", key_length));
  }
  if (key_length != usual) c.explicit_head_dim = key_length;
  int rotated = 0;
  KILN_ASSIGN(rotated, m.PositiveInt("rope.dimension_count", c.head_dim()));
  if (rotated != c.head_dim()) {
    return m.Unsupported(absl::StrCat("partial RoPE (\"", m.Key("rope.dimension_count"), "\" is ",
                                      rotated, " of a head of ", c.head_dim(), ")"));
  }
  return absl::OkStatus();
}

absl::Status ReadVocabSize(const GgufFile& f, const ArchMetadata& m, LlamaConfig& c) {
  const GgufTensorInfo* embedding = f.FindTensor("token_embd.weight");
  if (embedding == nullptr) {
    return absl::NotFoundError(absl::StrCat(f.path(), ": no tensor 'token_embd.weight'"));
  }
  if (embedding->dims.size() != 2 || embedding->dims[1] <= 0 || embedding->dims[1] > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(f.path(), ": tensor 'token_embd.weight' is ",
                                                   embedding->Describe(),
                                                   ", not [embedding_length, vocab]"));
  }
  c.vocab_size = static_cast<int>(embedding->dims[1]);
  int declared = 0;
  KILN_ASSIGN(declared, m.PositiveInt("vocab_size", c.vocab_size));
  if (declared != c.vocab_size) {
    return f.KeyError(
        m.Key("vocab_size"),
        absl::StrCat("is ", declared, ", but token_embd.weight is ", embedding->Describe()));
  }
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->is_array() &&
      tokens->size() != static_cast<uint64_t>(c.vocab_size)) {
    return f.KeyError("tokenizer.ggml.tokens",
                      absl::StrCat("lists ", tokens->size(), " tokens, but token_embd.weight is ",
                                   embedding->Describe()));
  }
  return absl::OkStatus();
}

// Where row r of the Hugging Face layout is in llama.cpp's: each head's rows
// (half, i) were stored as (i, half).
int64_t PermutedSourceRow(int64_t r, int64_t rows, int heads) {
  const int64_t head_dim = rows / heads, half_dim = head_dim / 2;
  const int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + 2 * (within % half_dim) + within / half_dim;
}

std::optional<DType> StoredDType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return DType::kF32;
    case GgmlType::kF16: return DType::kF16;
    case GgmlType::kBF16: return DType::kBF16;
    default: return std::nullopt;
  }
}

// Converts `count` floats into `dtype` at `out`.
void StoreFloats(const float* in, size_t count, DType dtype, void* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, in, count * sizeof(float));
    return;
  }
  const absl::Span<uint16_t> bits(static_cast<uint16_t*>(out), count);
  const absl::Span<const float> values(in, count);
  // The spans have one length, so neither can fail.
  if (dtype == DType::kF16) {
    FloatsToF16(values, bits).IgnoreError();
  } else {
    FloatsToBF16(values, bits).IgnoreError();
  }
}

// Hands out the file's tensors in kiln's layout and dtype, recording which
// were taken so that the rest can be reported.
class WeightReader {
 public:
  WeightReader(const GgufFile& f, const LlamaConfig& c, DType dtype, bool keep_packed)
      : f_(f), implied_by_(absl::StrCat("the metadata (", c.ToString(), ")")), dtype_(dtype),
        keep_packed_(keep_packed) {}

  // `shape` is kiln's ([out, in] for matrices); `heads` > 0 undoes the llama
  // row permutation of a projection with that many heads.
  absl::StatusOr<Tensor> Take(const std::string& name, const std::vector<int64_t>& shape,
                              int heads = 0) {
    const GgufTensorInfo* t = nullptr;
    KILN_ASSIGN(t, FindShaped(f_, name, shape, implied_by_));
    taken_.insert(name);
    const absl::Span<const uint8_t> bytes = f_.TensorData(*t);
    if (const std::optional<QuantFormat> format = QuantFormatOf(t->type); keep_packed_ && format && shape.size() == 2) {
      return Packed(name, *t, shape[0], heads, *format);
    }
    const std::optional<DType> stored = StoredDType(t->type);
    if (stored == dtype_ && heads == 0) {
      const bool aligned = reinterpret_cast<uintptr_t>(bytes.data()) % DTypeSize(dtype_) == 0;
      return Named(name, aligned
                             ? Tensor::WrapHost(dtype_, shape, bytes.data(), bytes.size(),
                                                f_.owner(), /*writable=*/false)
                             : Tensor::FromHostBytes(dtype_, shape, bytes.data(), bytes.size()));
    }
    const int64_t elements = t->elements();
    absl::StatusOr<std::shared_ptr<Storage>> storage =
        Storage::AllocateHost(static_cast<size_t>(elements) * DTypeSize(dtype_));
    if (!storage.ok()) {
      return absl::Status(storage.status().code(), absl::StrCat(f_.path(), ": tensor '", name,
                                                                "': ", storage.status().message()));
    }
    uint8_t* out = static_cast<uint8_t*>((*storage)->data());
    if (absl::Status s = shape.size() == 1 ? ConvertVector(*t, heads, out)
                                           : ConvertRows(*t, shape[0], heads, out);
        !s.ok()) {
      return s;
    }
    return Named(name, Tensor::WrapHost(dtype_, shape, out, (*storage)->bytes(), *storage,
                                        /*writable=*/true));
  }

  const std::set<std::string>& taken() const { return taken_; }
  void MarkTaken(const std::string& name) { taken_.insert(name); }

 private:
  absl::StatusOr<Tensor> Named(const std::string& name, Tensor t) const {
    if (t.ok()) return t;
    return absl::InvalidArgumentError(
        absl::StrCat(f_.path(), ": tensor '", name, "': ", t.status().message()));
  }

  // The blocks of matrix t [rows, ...] as a packed weight: the file's bytes
  // in place, or with `heads`, rows copied in Hugging Face's order.
  absl::StatusOr<Tensor> Packed(const std::string& name, const GgufTensorInfo& t, int64_t rows, int heads,
                                QuantFormat format) const {
    const absl::Span<const uint8_t> bytes = f_.TensorData(t);
    const int64_t row_bytes = static_cast<int64_t>(bytes.size()) / rows;
    Tensor blocks;
    if (heads == 0) {
      blocks = Tensor::WrapHost(DType::kU8, {rows, row_bytes}, bytes.data(), bytes.size(), f_.owner(),
                                /*writable=*/false);
    } else {
      std::vector<uint8_t> permuted(bytes.size());
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(permuted.data() + r * row_bytes, bytes.data() + PermutedSourceRow(r, rows, heads) * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
      blocks = Tensor::FromVector(std::move(permuted), {rows, row_bytes});
    }
    return Named(name, Unpack({blocks, format, dtype_}));
  }

  absl::Status ConvertVector(const GgufTensorInfo& t, int heads, uint8_t* out) const {
    std::vector<float> values;
    KILN_ASSIGN(values, ReadFloats(f_, t));
    if (heads > 0) {
      const std::vector<float> stored = values;
      const int64_t n = static_cast<int64_t>(values.size());
      for (int64_t r = 0; r < n; ++r) values[r] = stored[PermutedSourceRow(r, n, heads)];
    }
    StoreFloats(values.data(), values.size(), dtype_, out);
    return absl::OkStatus();
  }

  absl::Status ConvertRows(const GgufTensorInfo& t, int64_t rows, int heads, uint8_t* out) const {
    const absl::Span<const uint8_t> bytes = f_.TensorData(t);
    const int64_t row_length = t.elements() / rows;
    const size_t row_bytes = bytes.size() / static_cast<size_t>(rows);
    const size_t out_row_bytes = static_cast<size_t>(row_length) * DTypeSize(dtype_);
    const bool same = StoredDType(t.type) == dtype_;
    std::vector<float> scratch(same || dtype_ == DType::kF32 ? 0 : row_length);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t source = heads > 0 ? PermutedSourceRow(r, rows, heads) : r;
      const absl::Span<const uint8_t> in = bytes.subspan(source * row_bytes, row_bytes);
      uint8_t* dst = out + r * out_row_bytes;
      if (same) {
        std::memcpy(dst, in.data(), row_bytes);
        continue;
      }
      float* decoded = dtype_ == DType::kF32 ? reinterpret_cast<float*>(dst) : scratch.data();
      if (absl::Status s = Dequantize(t.type, in, absl::MakeSpan(decoded, row_length)); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat(f_.path(), ": tensor '", t.name, "': ", s.message()));
      }
      if (dtype_ != DType::kF32) StoreFloats(decoded, row_length, dtype_, dst);
    }
    return absl::OkStatus();
  }

  const GgufFile& f_;
  std::string implied_by_;
  DType dtype_;
  bool keep_packed_;
  std::set<std::string> taken_;
};

absl::Status CheckAllTaken(const GgufFile& f, const WeightReader& r, const LlamaConfig& c) {
  for (const GgufTensorInfo& t : f.tensors()) {
    if (r.taken().count(t.name) > 0) continue;
    return absl::UnimplementedError(absl::StrCat(
        f.path(), ": tensor '", t.name, "' (", t.Describe(), ") has no place in kiln's ",
        c.architecture, " model as the metadata describes it (", c.n_layers,
        " layers; kiln reads token_embd, output_norm, output, rope_freqs and blk.N.{attn_norm, "
        "attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, attention "
        "biases and qwen3's attn_q_norm/attn_k_norm)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LlamaConfig> ReadGgufConfig(const GgufFile& f) {
  const Architecture* arch = nullptr;
  KILN_ASSIGN(arch, FindArchitecture(f));
  const ArchMetadata m(f, arch->name);
  LlamaConfig c;
  c.architecture = arch->name;
  if (const GgufValue* experts = f.Find(m.Key("expert_count"));
      experts != nullptr && experts->AsInt().value_or(1) != 0) {
    return m.Unsupported(absl::StrCat("a mixture of experts (\"", m.Key("expert_count"), "\" is ",
                                      experts->ToString(), ")"));
  }
  KILN_ASSIGN(c.dim, m.PositiveInt("embedding_length", std::nullopt));
  KILN_ASSIGN(c.n_layers, m.PositiveInt("block_count", std::nullopt));
  KILN_ASSIGN(c.hidden_dim, m.PositiveInt("feed_forward_length", std::nullopt));
  KILN_ASSIGN(c.max_seq_len, m.PositiveInt("context_length", std::nullopt));
  KILN_ASSIGN(c.norm_eps, m.Number("attention.layer_norm_rms_epsilon", std::nullopt));
  KILN_ASSIGN(c.rope_theta, m.Number("rope.freq_base", 10000.0));  // llama.cpp's default
  if (absl::Status s = ReadHeads(m, c); !s.ok()) return s;
  if (absl::Status s = ReadVocabSize(f, m, c); !s.ok()) return s;
  if (absl::Status s = ReadRopeScaling(f, m, c); !s.ok()) return s;
  c.rope_style = RopeStyle::kRotateHalf;
  c.qk_norm = arch->qk_norm;
  c.qkv_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = f.FindTensor("blk.0.attn_output.bias") != nullptr;
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  if (absl::Status s = c.Validate(f.path()); !s.ok()) return s;
  return c;
}

absl::StatusOr<LoadedModel> LoadGgufModel(const GgufFile& f, const GgufLoadOptions& options) {
  if (!IsFloating(options.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(f.path(), ": cannot load weights as ",
                                                   DTypeName(options.dtype),
                                                   "; the dtype must be f32, f16 or bf16"));
  }
  if (options.max_seq_len < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": max_seq_len ", options.max_seq_len, " is negative"));
  }
  LoadedModel model;
  KILN_ASSIGN(model.config, ReadGgufConfig(f));
  LlamaConfig& c = model.config;
  c.dtype = options.dtype;
  if (options.max_seq_len > 0) c.max_seq_len = std::min(c.max_seq_len, options.max_seq_len);
  const Architecture* arch = nullptr;
  KILN_ASSIGN(arch, FindArchitecture(f));
  const int q_heads = arch->permuted_qk ? c.n_heads : 0;
  const int k_heads = arch->permuted_qk ? c.n_kv_heads : 0;

  WeightReader r(f, c, c.dtype, options.keep_packed);
  if (c.rope_scaling.type == RopeScaling::Type::kFactors) r.MarkTaken("rope_freqs.weight");
  const int64_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  const int64_t head = c.head_dim(), qd = c.q_dim();
  LlamaWeights& w = model.weights;
  KILN_ASSIGN(w.embedding, r.Take("token_embd.weight", {vocab, dim}));
  w.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    LlamaLayerWeights& l = w.layers[i];
    const std::string p = absl::StrCat("blk.", i, ".");
    KILN_ASSIGN(l.attention_norm, r.Take(p + "attn_norm.weight", {dim}));
    KILN_ASSIGN(l.wq, r.Take(p + "attn_q.weight", {qd, dim}, q_heads));
    KILN_ASSIGN(l.wk, r.Take(p + "attn_k.weight", {kv, dim}, k_heads));
    KILN_ASSIGN(l.wv, r.Take(p + "attn_v.weight", {kv, dim}));
    KILN_ASSIGN(l.wo, r.Take(p + "attn_output.weight", {dim, qd}));
    if (c.qkv_bias) {
      KILN_ASSIGN(l.bq, r.Take(p + "attn_q.bias", {qd}, q_heads));
      KILN_ASSIGN(l.bk, r.Take(p + "attn_k.bias", {kv}, k_heads));
      KILN_ASSIGN(l.bv, r.Take(p + "attn_v.bias", {kv}));
    }
    if (c.o_bias) KILN_ASSIGN(l.bo, r.Take(p + "attn_output.bias", {dim}));
    if (c.qk_norm) {
      KILN_ASSIGN(l.q_norm, r.Take(p + "attn_q_norm.weight", {head}));
      KILN_ASSIGN(l.k_norm, r.Take(p + "attn_k_norm.weight", {head}));
    }
    KILN_ASSIGN(l.ffn_norm, r.Take(p + "ffn_norm.weight", {dim}));
    KILN_ASSIGN(l.w_gate, r.Take(p + "ffn_gate.weight", {hidden, dim}));
    KILN_ASSIGN(l.w_up, r.Take(p + "ffn_up.weight", {hidden, dim}));
    KILN_ASSIGN(l.w_down, r.Take(p + "ffn_down.weight", {dim, hidden}));
  }
  KILN_ASSIGN(w.final_norm, r.Take("output_norm.weight", {dim}));
  if (c.tied_embeddings) {
    w.classifier = w.embedding;
  } else {
    KILN_ASSIGN(w.classifier, r.Take("output.weight", {vocab, dim}));
  }
  if (absl::Status s = CheckAllTaken(f, r, c); !s.ok()) return s;
  return model;
}

absl::StatusOr<LoadedModel> LoadGguf(const std::string& path, const GgufLoadOptions& options) {
  absl::StatusOr<GgufFile> file = GgufFile::Open(path);
  if (!file.ok()) return file.status();
  return LoadGgufModel(*file, options);
}

// ---------------------------------------------------------------- tokenizer

namespace {

std::vector<std::string> Copies(absl::Span<const absl::string_view> views) {
  std::vector<std::string> out;
  out.reserve(views.size());
  for (absl::string_view v : views) out.emplace_back(v);
  return out;
}

}  // namespace

absl::StatusOr<GgufTokenizerMetadata> ReadGgufTokenizer(const GgufFile& f) {
  GgufTokenizerMetadata t;
  absl::StatusOr<absl::string_view> model = f.GetString("tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  t.model = std::string(*model);
  if (f.Find("tokenizer.ggml.pre") != nullptr) {
    absl::StatusOr<absl::string_view> pre = f.GetString("tokenizer.ggml.pre");
    if (!pre.ok()) return pre.status();
    t.pre = std::string(*pre);
  }
  absl::StatusOr<absl::Span<const absl::string_view>> tokens =
      f.GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) return tokens.status();
  t.tokens = Copies(*tokens);
  const uint64_t n = t.tokens.size();
  const auto check_length = [&](const char* key, size_t length) -> absl::Status {
    if (length == n) return absl::OkStatus();
    return f.KeyError(key, absl::StrCat("has ", length, " entries for ", n, " tokens"));
  };
  if (f.Find("tokenizer.ggml.scores") != nullptr) {
    KILN_ASSIGN(t.scores, f.GetF32Array("tokenizer.ggml.scores"));
    if (absl::Status s = check_length("tokenizer.ggml.scores", t.scores.size()); !s.ok()) return s;
  }
  if (f.Find("tokenizer.ggml.token_type") != nullptr) {
    std::vector<int64_t> types;
    KILN_ASSIGN(types, f.GetIntArray("tokenizer.ggml.token_type"));
    if (absl::Status s = check_length("tokenizer.ggml.token_type", types.size()); !s.ok()) return s;
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] < INT32_MIN || types[i] > INT32_MAX) {
        return f.KeyError("tokenizer.ggml.token_type",
                          absl::StrCat("entry ", i, " (", types[i], ") does not fit in int32"));
      }
      t.token_types.push_back(static_cast<int32_t>(types[i]));
    }
  }
  if (f.Find("tokenizer.ggml.merges") != nullptr) {
    absl::StatusOr<absl::Span<const absl::string_view>> merges =
        f.GetStringArray("tokenizer.ggml.merges");
    if (!merges.ok()) return merges.status();
    t.merges = Copies(*merges);
  }
  const std::pair<const char*, std::optional<int64_t>*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &t.bos_id},
      {"tokenizer.ggml.eos_token_id", &t.eos_id},
      {"tokenizer.ggml.eot_token_id", &t.eot_id},
      {"tokenizer.ggml.eom_token_id", &t.eom_id},
      {"tokenizer.ggml.unknown_token_id", &t.unk_id},
      {"tokenizer.ggml.padding_token_id", &t.pad_id},
  };
  for (const auto& [key, id] : ids) {
    if (f.Find(key) == nullptr) continue;
    absl::StatusOr<int64_t> value = f.GetInt(key);
    if (!value.ok()) return value.status();
    if (*value < 0 || static_cast<uint64_t>(*value) >= n) {
      return f.KeyError(key, absl::StrCat("is ", *value, ", not a token id below ", n));
    }
    *id = *value;
  }
  const std::pair<const char*, std::optional<bool>*> flags[] = {
      {"tokenizer.ggml.add_bos_token", &t.add_bos_token},
      {"tokenizer.ggml.add_eos_token", &t.add_eos_token},
      {"tokenizer.ggml.add_space_prefix", &t.add_space_prefix},
  };
  for (const auto& [key, flag] : flags) {
    if (f.Find(key) == nullptr) continue;
    absl::StatusOr<bool> value = f.GetBool(key);
    if (!value.ok()) return value.status();
    *flag = *value;
  }
  if (f.Find("tokenizer.chat_template") != nullptr) {
    absl::StatusOr<absl::string_view> text = f.GetString("tokenizer.chat_template");
    if (!text.ok()) return text.status();
    t.chat_template = std::string(*text);
  }
  return t;
}

}  // namespace kiln::models
