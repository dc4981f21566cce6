// Python's view of text for the template engine: strings are UTF-8 bytes
// here, but Python indexes, measures, strips and cases them by code point,
// so every such operation goes through these helpers.
//
// Bytes that are not valid UTF-8 decode to U+DC80 + byte (Python's
// "surrogateescape"), and encode back to the same byte, so no input is ever
// rejected or altered by a round trip.
#ifndef KILN_MODELS_CHAT_JINJA_UNICODE_H_
#define KILN_MODELS_CHAT_JINJA_UNICODE_H_

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

namespace kiln::models::jinja {

// Decodes one code point at `*pos` and advances it (at least one byte).
char32_t NextCodePoint(absl::string_view s, size_t* pos);
std::u32string Decode(absl::string_view s);
void AppendCodePoint(char32_t cp, std::string* out);
std::string Encode(std::u32string_view cps);

bool IsAscii(absl::string_view s);
// len(s) in Python.
size_t CodePointCount(absl::string_view s);

// Python's str predicates, per character.
bool IsSpace(char32_t c);      // str.isspace
bool IsPrintable(char32_t c);  // str.isprintable (decides repr's escapes)
bool IsAlpha(char32_t c);
bool IsDecimal(char32_t c);  // isdecimal / isdigit (the Nd category)
bool IsNumeric(char32_t c);  // Nd, Nl, No
bool IsAlnum(char32_t c);
bool IsWordChar(char32_t c);  // the re module's \w
bool IsUpper(char32_t c);
bool IsLower(char32_t c);
bool IsCased(char32_t c);
char32_t ToUpper(char32_t c);
char32_t ToLower(char32_t c);
char32_t ToTitle(char32_t c);

// Python's str methods that do not need a template value.
std::string Upper(absl::string_view s);
std::string Lower(absl::string_view s);
std::string Capitalize(absl::string_view s);  // first upper, rest lower
std::string SwapCase(absl::string_view s);
std::string PyTitle(absl::string_view s);  // str.title
// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string Strip(absl::string_view s, const std::string* chars, bool left, bool right);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_UNICODE_H_
