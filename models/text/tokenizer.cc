#include "models/text/tokenizer.h"

#include "models/text/utf8.h"

namespace kiln::models {

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids,
                                              bool skip_special_tokens) const {
  absl::StatusOr<std::string> bytes = DecodeBytes(ids, skip_special_tokens);
  if (!bytes.ok()) return bytes.status();
  return ToValidUtf8(*bytes);
}

}  // namespace kiln::models
