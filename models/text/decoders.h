// tokenizer.json's "decoder": turns the tokens' strings back into text
// (tokenizers' Decoder::decode_chain, each step a list of strings to a list).
// Strings here are bytes: a byte-level or byte-fallback token that stops
// inside a character leaves a partial UTF-8 sequence for the caller to keep
// or replace.
#ifndef KILN_MODELS_TEXT_DECODERS_H_
#define KILN_MODELS_TEXT_DECODERS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/text/json_node.h"

namespace kiln::models {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // `tokens` are the strings of the ids, in order, the last one the end of
  // the decoded sequence. InvalidArgument rather than a total longer than
  // `limit` bytes (Replaces that grow the text, chained).
  virtual absl::Status DecodeChain(std::vector<std::string>* tokens, size_t limit) const = 0;
};

// nullptr for a null decoder; Unimplemented naming the path and type for a
// type kiln lacks (WordPiece, CTC, ...), InvalidArgument for a malformed one.
absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const JsonNode& node, int depth = 0);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_DECODERS_H_
