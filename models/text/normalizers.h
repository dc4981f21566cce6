// tokenizer.json's "normalizer": rewrites each piece of text (between added
// tokens) before it is split into words.
#ifndef KILN_MODELS_TEXT_NORMALIZERS_H_
#define KILN_MODELS_TEXT_NORMALIZERS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/text/json_node.h"

namespace kiln::models {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8 and stays so. InvalidArgument when the result
  // would be unreasonably long (Replaces that grow the text, chained).
  // *dropped_start (if given) tells whether characters at the start were
  // deleted, so the result no longer starts where the text did.
  absl::Status Normalize(std::string* text, bool* dropped_start = nullptr) const;

  struct State {
    size_t limit;  // the most bytes the result may have
    bool dropped_start = false;
  };
  virtual absl::Status Apply(std::string* text, State* state) const = 0;
};

// Sequences nest; deeper than this is refused rather than recursed into.
inline constexpr int kMaxComponentDepth = 16;

// nullptr for a null normalizer. Unimplemented naming the path and type for a
// type kiln lacks (BertNormalizer, Precompiled, ...), InvalidArgument for a
// malformed one.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const JsonNode& node, int depth = 0);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_NORMALIZERS_H_
