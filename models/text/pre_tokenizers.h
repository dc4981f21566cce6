// tokenizer.json's "pre_tokenizer": cuts normalized text into the words the
// model tokenizes one at a time.
#ifndef KILN_MODELS_TEXT_PRE_TOKENIZERS_H_
#define KILN_MODELS_TEXT_PRE_TOKENIZERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/text/json_node.h"

namespace kiln::models {

// A piece of the text on its way to ids: an added token already matched
// (token_id >= 0), or text still to be split and tokenized.
struct TextPiece {
  std::string text;
  int32_t token_id = -1;
  // Whether the piece starts where the input starts (tokenizers'
  // offsets_original().0 == 0, which Metaspace's "first" scheme asks). A
  // normalizer that deletes leading characters (Strip, a Replace by nothing)
  // clears it; characters it inserts at the start (Prepend) count as the
  // start, as tokenizers aligns them.
  bool at_input_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits every text piece of `pieces` in place (added tokens are left as
  // they are), dropping empty pieces as tokenizers does.
  virtual absl::Status Apply(std::vector<TextPiece>* pieces) const = 0;
};

// Metaspace's settings, shared by the pre-tokenizer and the decoder.
struct MetaspaceOptions {
  enum class Prepend { kAlways, kFirst, kNever };
  std::string replacement;  // one character, UTF-8
  Prepend prepend = Prepend::kAlways;
  bool split = true;
};
// Reads "replacement", "prepend_scheme" ("always", "first", "never"), "split"
// and the older "add_prefix_space" (false meaning "never").
absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const JsonNode& node);

// nullptr for a null pre_tokenizer; Unimplemented naming the path and type for
// a type kiln lacks, InvalidArgument for a malformed one.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const JsonNode& node, int depth = 0);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_PRE_TOKENIZERS_H_
