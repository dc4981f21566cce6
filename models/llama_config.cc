#include "models/llama_config.h"

#include "absl/strings/str_cat.h"

namespace kiln::models {

absl::Status LlamaConfig::Validate(absl::string_view source) const {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": invalid model config (", ToString(), "): ", why));
  };
  if (dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || hidden_dim <= 0 ||
      vocab_size <= 0 || max_seq_len <= 0) {
    return bad("every size must be positive");
  }
  constexpr int kLimit = 1 << 24;
  if (dim > kLimit || n_layers > 4096 || hidden_dim > kLimit || vocab_size > kLimit ||
      max_seq_len > kLimit) {
    return bad("a size is implausibly large");
  }
  if (explicit_head_dim < 0 || explicit_head_dim > kLimit) return bad("bad explicit head dim");
  if (explicit_head_dim == 0 && dim % n_heads != 0) {
    return bad("dim must be a multiple of n_heads");
  }
  if (n_heads % n_kv_heads != 0) return bad("n_heads must be a multiple of n_kv_heads");
  if (head_dim() % 2 != 0) return bad("the head dim must be even for RoPE");
  if (!(rope_theta > 0)) return bad("rope_theta must be positive");
  if (rope_scaling.type != RopeScaling::Type::kDefault) {
    if (absl::Status s = ComputeRopeFrequencies(rope_theta, head_dim(), rope_scaling).status();
        !s.ok()) {
      return bad(s.message());
    }
  }
  if (!(norm_eps >= 0)) return bad("norm_eps must not be negative");
  if (lora_rank < 0) return bad("lora_rank must not be negative");
  if (!IsFloating(dtype)) return bad("the dtype must be f32, f16 or bf16");
  return absl::OkStatus();
}

std::string LlamaConfig::ToString() const {
  return absl::StrCat("dim=", dim, " layers=", n_layers, " heads=", n_heads,
                      " kv_heads=", n_kv_heads,
                      explicit_head_dim > 0 ? absl::StrCat(" head_dim=", explicit_head_dim) : "",
                      " hidden=", hidden_dim, " vocab=", vocab_size, " max_seq=", max_seq_len,
                      " dtype=", DTypeName(dtype));
}

}  // namespace kiln::models
