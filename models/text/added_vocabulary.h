// tokenizer.json's "added_tokens": tokens matched in the text before any
// normalizing or splitting, as tokenizers' AddedVocabulary matches them
// (leftmost-longest, then the single_word, lstrip and rstrip rules).
#ifndef KILN_MODELS_TEXT_ADDED_VOCABULARY_H_
#define KILN_MODELS_TEXT_ADDED_VOCABULARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/text/bpe.h"
#include "models/text/json_node.h"
#include "models/text/normalizers.h"
#include "models/text/pre_tokenizers.h"
#include "models/text/unicode_regex.h"

namespace kiln::models {

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
  // What decoding starts from: the content, or for a normalized token the
  // normalizer's output, as tokenizers 0.23 decodes it (so a special token
  // whose normalized form differs is not skipped by skip_special_tokens).
  std::string decoded;
};

class AddedVocabulary {
 public:
  // Reads the "added_tokens" list (null or missing: none). The ids written in
  // the file are not used: as in tokenizers, a token the model knows takes
  // the model's id and the others, in list order, the ids from the model's
  // number of tokens up (files tokenizers wrote agree with that).
  static absl::StatusOr<std::unique_ptr<AddedVocabulary>> Parse(const JsonNode& list, const BpeModel& model,
                                                                const Normalizer* normalizer);

  // Cuts each text piece at the added tokens it holds: the tokens matched on
  // the raw text (normalized=false) or those matched on normalized text
  // (normalized=true). With parse_special off, special tokens are not
  // matched (tokenizers' encode_special_tokens, transformers'
  // split_special_tokens); other added tokens still are.
  absl::Status Split(std::vector<TextPiece>* pieces, bool normalized, bool parse_special) const;

  // The id given to `content`, or -1.
  int32_t TokenToId(absl::string_view content) const;
  // The token with `id`, or nullptr.
  const AddedToken* Token(int32_t id) const;
  // Whether `content` is a special token's (skipped by skip_special_tokens).
  bool IsSpecialContent(absl::string_view content) const { return special_contents_.contains(content); }
  // Largest id + 1 (0 when empty).
  int32_t id_limit() const { return id_limit_; }
  size_t size() const { return tokens_.size(); }

 private:
  // A byte trie for leftmost-longest matching.
  struct Matcher {
    std::vector<int32_t> terminal;                    // per node: token id or -1
    absl::flat_hash_map<uint64_t, int32_t> children;  // (node << 8 | byte) -> node
    bool first_byte[256] = {};
    void Add(absl::string_view pattern, int32_t id);
    // The longest pattern starting at `at`: its id and length, or id -1.
    std::pair<int32_t, size_t> LongestAt(absl::string_view text, size_t at) const;
    bool empty() const { return terminal.size() <= 1; }
  };

  absl::Status SplitPiece(const TextPiece& piece, const Matcher& matcher, bool parse_special,
                          std::vector<TextPiece>* out) const;
  bool IsWordChar(int32_t cp) const;

  absl::flat_hash_map<std::string, int32_t> id_of_content_;
  absl::flat_hash_map<int32_t, AddedToken> tokens_;
  absl::flat_hash_set<std::string> special_contents_;
  Matcher raw_;
  Matcher normalized_;
  std::unique_ptr<UnicodeRegex> word_char_;  // Rust regex's \w, for single_word
  int32_t id_limit_ = 0;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_ADDED_VOCABULARY_H_
