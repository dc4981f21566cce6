// The interface every tokenizer kiln reads implements: llama2.c's
// tokenizer.bin, Hugging Face tokenizer.json, SentencePiece tokenizer.model
// and the vocabularies GGUF files carry. Ids are int32 in [0, vocab_size()).
#ifndef KILN_MODELS_TEXT_TOKENIZER_H_
#define KILN_MODELS_TEXT_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kiln::models {

struct EncodeOptions {
  // What the tokenizer itself adds around a text: SentencePiece's BOS, a
  // tokenizer.json post-processor's template. transformers' `tokenizer(text)`
  // adds them; its chat templates (which write BOS themselves) do not.
  bool add_special_tokens = true;
  // Text spelling a special or added token ("<|eot_id|>") becomes that token,
  // as in transformers by default. Off, such text is tokenized as plain text.
  bool parse_special = true;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // InvalidArgument when the text cannot be tokenized with this vocabulary
  // (a needed byte token is missing, say).
  virtual absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                                      const EncodeOptions& options) const = 0;

  // The bytes the tokens stand for, joined by the tokenizer's decoder rules
  // (byte-level mapping, SentencePiece's leading space, ...). May end inside a
  // UTF-8 character, and may hold invalid UTF-8 where the tokens do.
  // InvalidArgument for an id outside [0, vocab_size()).
  virtual absl::StatusOr<std::string> DecodeBytes(absl::Span<const int32_t> ids,
                                                  bool skip_special_tokens) const = 0;

  // DecodeBytes with invalid UTF-8 replaced by U+FFFD, as transformers'
  // decode() returns it.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special_tokens = false) const;

  virtual int vocab_size() const = 0;
  // The id of a token spelled `text` exactly (special tokens included), or -1.
  virtual int32_t TokenId(absl::string_view text) const = 0;
  // The token's stored spelling (byte-level or SentencePiece form); "" for an
  // id outside the vocabulary.
  virtual std::string TokenText(int32_t id) const = 0;
  // Control tokens: skipped by skip_special_tokens.
  virtual bool IsSpecial(int32_t id) const = 0;
  // One line for `kiln info` and logs: the format and the vocabulary size.
  virtual std::string Describe() const = 0;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_TOKENIZER_H_
