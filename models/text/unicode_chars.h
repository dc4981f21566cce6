// Per-character Unicode questions the tokenizer.json components ask, answered
// as Rust's char methods (which tokenizers calls) answer them.
#ifndef KILN_MODELS_TEXT_UNICODE_CHARS_H_
#define KILN_MODELS_TEXT_UNICODE_CHARS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace kiln::models {

// The code point starting at bytes[i] and its length in *length; -1 with
// *length = 1 where bytes[i] starts no well-formed character.
int32_t DecodeUtf8At(absl::string_view bytes, size_t i, size_t* length);

bool IsValidUtf8(absl::string_view bytes);

// char::is_whitespace: the White_Space property.
bool IsWhitespace(int32_t cp);
// char::is_numeric: general category N (Nd, Nl, No).
bool IsNumeric(int32_t cp);
// tokenizers' is_punc: ASCII punctuation or general category P.
bool IsPunctuation(int32_t cp);

// char::to_lowercase of one code point, appended as UTF-8.
void AppendLowercase(int32_t cp, std::string* out);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_UNICODE_CHARS_H_
