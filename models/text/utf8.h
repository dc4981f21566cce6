// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#ifndef KILN_MODELS_TEXT_UTF8_H_
#define KILN_MODELS_TEXT_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace kiln::models {

// `bytes` with every ill-formed subsequence replaced by U+FFFD, one per
// maximal subpart (the Unicode recommendation, which Python's "replace" and
// Rust's from_utf8_lossy follow).
std::string ToValidUtf8(absl::string_view bytes);

// The length of the longest prefix of `bytes` after which no character is cut
// off: a trailing, still possibly valid, incomplete sequence is left out.
// Ill-formed bytes count as complete (they can never become valid).
size_t CompleteUtf8Prefix(absl::string_view bytes);

// Appends code point `cp` (at most 0x10FFFF) as UTF-8.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_UTF8_H_
