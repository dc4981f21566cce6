// Llama-style decoders from GGUF files: general.architecture "llama" (which
// Mistral files use too), "qwen2" and "qwen3".
//
// GGUF stores a matrix [out, in] with ne = [in, out], so rows are kept as
// they are. llama.cpp's converter permutes the rows of attn_q and attn_k (and
// their biases) of "llama" files so that RoPE turns adjacent pairs; the loader
// undoes that, giving Hugging Face's layout, and kiln uses
// RopeStyle::kRotateHalf for every GGUF model (qwen2/qwen3 files are stored
// in that layout already).
#ifndef KILN_MODELS_GGUF_GGUF_MODEL_H_
#define KILN_MODELS_GGUF_GGUF_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/gguf/gguf_file.h"
#include "models/loaded_model.h"
#include "tensor/dtype.h"

namespace kiln::models {

struct GgufLoadOptions {
  // The weights' (and so the model's) dtype: f32, f16 or bf16. Tensors
  // stored in it, unpermuted, are used in place from the mapped file; the
  // others are dequantized / converted (round to nearest even) into new
  // host tensors.
  DType dtype = DType::kF32;
  // 0: the file's context_length; otherwise the smaller of the two (the KV
  // cache is sized by it).
  int max_seq_len = 0;
  // Matrices stored in a block format of tensor/quant.h stay packed: each
  // is dequantize(blocks, format, dtype) (ops/quant.h, PackedWeight) over
  // the file's bytes (copied only where attn_q / attn_k rows are
  // permuted back), decoded where products read them.
  bool keep_packed = false;
};

// The architectures kiln reads, for messages: "llama, qwen2, qwen3".
extern const char kGgufArchitectures[];

// The config the metadata and tensor shapes describe (config.dtype is
// f32). InvalidArgument naming the file and key for missing or ill-typed
// metadata, Unimplemented for architectures and features kiln does not run
// (mixture of experts, partial RoPE, longrope, ...).
absl::StatusOr<LlamaConfig> ReadGgufConfig(const GgufFile& file);

// The config and every weight it calls for, each checked for its shape and
// type. Errors name the file and the key or tensor; tensors kiln would
// otherwise ignore (biases it does not expect, extra layers, MoE experts)
// are errors, not silently dropped.
absl::StatusOr<LoadedModel> LoadGgufModel(const GgufFile& file, const GgufLoadOptions& options);
absl::StatusOr<LoadedModel> LoadGguf(const std::string& path, const GgufLoadOptions& options = {});

// The tokenizer's metadata (built into a tokenizer elsewhere), copied out of
// the file. Optional keys absent from the file are empty / nullopt.
struct GgufTokenizerMetadata {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE), ...
  std::string pre;    // tokenizer.ggml.pre: the pre-tokenizer ("llama-bpe", "qwen2", ...)
  std::vector<std::string> tokens;  // tokenizer.ggml.tokens
  std::vector<float> scores;        // tokenizer.ggml.scores (one per token)
  std::vector<int32_t>
      token_types;  // tokenizer.ggml.token_type (one per token; gguf-py's TokenType)
  std::vector<std::string> merges;  // tokenizer.ggml.merges ("a b")
  std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id;  // each < tokens.size()
  std::optional<bool> add_bos_token, add_eos_token, add_space_prefix;
  std::string chat_template;  // tokenizer.chat_template
};

// NotFound when the file has no tokenizer.ggml.model; InvalidArgument naming
// the key for ill-typed values, lengths that differ from the token count and
// ids outside it.
absl::StatusOr<GgufTokenizerMetadata> ReadGgufTokenizer(const GgufFile& file);

}  // namespace kiln::models

#endif  // KILN_MODELS_GGUF_GGUF_MODEL_H_
