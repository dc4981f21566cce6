// SentencePiece tokenizers: a tokenizer.model file (Llama 2, Mistral,
// TinyLlama) or a GGUF file's "llama" vocabulary. libsentencepiece encodes;
// decoding follows its rules here so that a stream can hand out raw bytes
// (byte-fallback pieces of one character arrive one at a time).
#ifndef KILN_MODELS_TEXT_SENTENCEPIECE_TOKENIZER_H_
#define KILN_MODELS_TEXT_SENTENCEPIECE_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "models/text/sentencepiece_shim.h"
#include "models/text/spm_model.h"
#include "models/text/tokenizer.h"

namespace kiln::models {

class SentencePieceTokenizer : public Tokenizer {
 public:
  // NotFound for a missing file; InvalidArgument naming the file when it is
  // not a model libsentencepiece accepts.
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> Load(const std::string& path);
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> FromBytes(
      absl::string_view bytes, const std::string& source);
  // A model assembled from pieces (a GGUF vocabulary), serialized for
  // libsentencepiece to load.
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> FromModel(
      const SpmModel& model, const std::string& source);

  // add_special_tokens prepends BOS (as sentencepiece's add_bos and
  // transformers' Llama tokenizers do). parse_special: the text of a control
  // piece ("<s>", "</s>") becomes its id and the text between is encoded
  // piece by piece, as transformers' slow tokenizer does; otherwise the text
  // goes to sentencepiece whole, as sp.encode() takes it.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              const EncodeOptions& options) const override;
  // sentencepiece's decoder: control pieces vanish, U+2581 becomes a space,
  // the first text piece loses its leading space (with the dummy prefix),
  // <unk> reads " \u2047 ", byte pieces give their byte.
  absl::StatusOr<std::string> DecodeBytes(absl::Span<const int32_t> ids,
                                          bool skip_special_tokens) const override;
  int vocab_size() const override { return static_cast<int>(model_.pieces.size()); }
  int32_t TokenId(absl::string_view text) const override;
  std::string TokenText(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::string Describe() const override;

  const SpmModel& model() const { return model_; }
  // Whether add_special_tokens prepends BOS (a GGUF's add_bos_token).
  void set_add_bos(bool add_bos) { add_bos_ = add_bos; }

 private:
  SentencePieceTokenizer(SpmModel model, std::unique_ptr<spm::Processor> processor,
                         std::string source);
  absl::Status EncodePlain(absl::string_view text, std::vector<int32_t>* ids) const;

  SpmModel model_;
  std::unique_ptr<spm::Processor> processor_;
  std::string source_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  // Control pieces' texts, longest first, for parse_special.
  std::vector<std::pair<std::string, int32_t>> controls_;
  // For each id: its raw byte (byte pieces) or -1.
  std::vector<int> byte_of_;
  bool add_bos_ = true;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_SENTENCEPIECE_TOKENIZER_H_
