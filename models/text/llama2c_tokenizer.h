// The byte-level BPE tokenizer of llama2.c's tokenizer.bin (SentencePiece
// vocabularies exported by llama2.c's tokenizer.py), with llama2.c's encode and
// decode behaviour, so prompts tokenize exactly as run.c tokenizes them.
#ifndef KILN_MODELS_TEXT_LLAMA2C_TOKENIZER_H_
#define KILN_MODELS_TEXT_LLAMA2C_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/text/tokenizer.h"

namespace kiln::models {

class Llama2cTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;

  // Reads tokenizer.bin: int32 max_token_length, then vocab_size records of
  // (float32 score, int32 length, length bytes), little-endian. vocab_size comes
  // from the model. NotFound when the file is missing; InvalidArgument naming
  // the file and the problem when it is empty, truncated, has a bad length or
  // holds more than vocab_size tokens.
  static absl::StatusOr<Llama2cTokenizer> Load(const std::string& path, int vocab_size);

  // Builds a tokenizer from pieces and scores directly (tests, other formats).
  // InvalidArgument when the sizes differ or the vocabulary is empty.
  static absl::StatusOr<Llama2cTokenizer> FromPieces(std::vector<std::string> pieces,
                                              std::vector<float> scores);

  // llama2.c's encode: [BOS] " " + text split into UTF-8 code points (unknown
  // ones as <0xNN> byte tokens, id byte + 3), then greedy merges of the
  // adjacent pair whose concatenation scores highest (leftmost on ties), then
  // [EOS]. The dummy-prefix space is added only to non-empty text.
  // InvalidArgument when a needed token (BOS, EOS, a byte token) lies outside
  // this vocabulary.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool bos, bool eos) const;

  // The text of `token` when it follows `prev_token`: after BOS a leading space
  // is dropped (SentencePiece's decoder does the same); "<0xNN>" pieces become
  // the raw byte. InvalidArgument for an id outside [0, vocab_size).
  absl::StatusOr<std::string> Decode(int32_t prev_token, int32_t token) const;

  // The Tokenizer interface: Encode adds BOS for add_special_tokens (never
  // EOS; llama2.c has no special-token text to parse); DecodeBytes joins
  // Decode(prev, token) over the ids, skipping <unk>, BOS and EOS when asked.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              const EncodeOptions& options) const override;
  absl::StatusOr<std::string> DecodeBytes(absl::Span<const int32_t> ids,
                                          bool skip_special_tokens) const override;
  using Tokenizer::Decode;
  int32_t TokenId(absl::string_view text) const override { return Lookup(text); }
  std::string TokenText(int32_t id) const override {
    return id >= 0 && id < vocab_size() ? pieces_[id] : std::string();
  }
  bool IsSpecial(int32_t id) const override { return id >= 0 && id <= kEos && id < vocab_size(); }
  std::string Describe() const override;

  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  // The stored piece of a token (byte tokens as "<0xNN>"); `id` must be valid.
  const std::string& piece(int32_t id) const { return pieces_[id]; }
  float score(int32_t id) const { return scores_[id]; }
  // The id of a piece, or -1.
  int32_t Lookup(absl::string_view piece) const;

 private:
  Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores);

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  // What Decode returns for each token before the after-BOS rule: the piece,
  // or its raw byte for "<0xNN>".
  std::vector<std::string> decoded_;
  absl::flat_hash_map<std::string, int32_t> ids_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_LLAMA2C_TOKENIZER_H_
