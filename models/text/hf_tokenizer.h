// A Hugging Face tokenizer.json (BPE models: Llama 3, Qwen2/3, GPT-2 and the
// SentencePiece-style files of Llama 2, Mistral, TinyLlama), encoding and
// decoding as the Rust tokenizers library (0.23) does, id for id.
//
// Encode runs tokenizers' pipeline: added tokens are cut out of the raw text,
// the rest normalized, normalized added tokens cut out of that, the pieces
// pre-tokenized into words, each word merged by the BPE model, and the
// post-processor's template (add_special_tokens) put around the ids.
// parse_special=false is tokenizers' encode_special_tokens (transformers'
// split_special_tokens=True): special added tokens are then not matched and
// their text is tokenized like any other; non-special added tokens still are.
// truncation and padding are ignored, as transformers ignores them unless a
// call asks for them.
//
// Where kiln parts from tokenizers on purpose: an id outside the vocabulary is
// an error (tokenizers skips it); a byte-fallback run that ends the ids inside
// a character keeps its bytes (see DecodeBytes); a file that leaves out a
// field tokenizers requires but kiln can default (a template's "pair", an
// added token's flags, ByteLevel's options) still loads. Regex classes follow
// Oniguruma's (tokenizers' engine) in PCRE2's Unicode tables, normalization
// utf8proc's, so characters newer than those tables may differ.
#ifndef KILN_MODELS_TEXT_HF_TOKENIZER_H_
#define KILN_MODELS_TEXT_HF_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/text/added_vocabulary.h"
#include "models/text/bpe.h"
#include "models/text/decoders.h"
#include "models/text/normalizers.h"
#include "models/text/post_processors.h"
#include "models/text/pre_tokenizers.h"
#include "models/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace kiln::models {

class HfTokenizer : public Tokenizer {
 public:
  // Reads a tokenizer.json file. NotFound when it cannot be read,
  // InvalidArgument naming the file and the JSON path for anything malformed,
  // Unimplemented naming the path and type for a component kiln lacks.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> Load(const std::string& path);
  // The same from a parsed (or synthesized) tokenizer.json object; `source`
  // names it in errors.
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> FromJson(const nlohmann::json& root,
                                                               const std::string& source);

  // InvalidArgument for text that is not valid UTF-8 (tokenizers takes only
  // strings), or when a hostile file's regex or normalizer gives up.
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              const EncodeOptions& options) const override;
  // Ids the vocabulary leaves unused (holes) decode to nothing, as in
  // tokenizers. Byte-fallback runs that are not UTF-8 become one U+FFFD per
  // byte as in tokenizers, except a run ending the ids inside a character,
  // whose bytes are kept (Decode then shows one U+FFFD for it).
  absl::StatusOr<std::string> DecodeBytes(absl::Span<const int32_t> ids,
                                          bool skip_special_tokens) const override;

  int vocab_size() const override { return id_limit_; }
  int32_t TokenId(absl::string_view text) const override;
  // An added token's content as the file spells it (decoding starts from
  // its normalized form where the token is normalized: see AddedToken).
  std::string TokenText(int32_t id) const override;
  // Whether skip_special_tokens drops the id.
  bool IsSpecial(int32_t id) const override;
  std::string Describe() const override;

 private:
  HfTokenizer() = default;
  // The token strings of the ids, in order (added tokens' contents first).
  absl::StatusOr<std::vector<std::string>> TokenStrings(absl::Span<const int32_t> ids,
                                                        bool skip_special) const;

  std::string source_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<AddedVocabulary> added_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  int32_t id_limit_ = 0;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_HF_TOKENIZER_H_
