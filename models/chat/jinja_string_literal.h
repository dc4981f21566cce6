// The value of a template string literal, as jinja2 computes it: Python's
// "unicode_escape" decoding of the text between the quotes (\n, \t, \\, \',
// \xhh, \uhhhh, \Uhhhhhhhh, octal, backslash-newline; unknown escapes such
// as \d stay as written).
#ifndef KILN_MODELS_CHAT_JINJA_STRING_LITERAL_H_
#define KILN_MODELS_CHAT_JINJA_STRING_LITERAL_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace kiln::models::jinja {

// InvalidArgument with Python's reason ("truncated \xXX escape") for a bad
// escape; also for \N{...} names and escapes that make a lone surrogate,
// which kiln does not support.
absl::StatusOr<std::string> UnescapeStringLiteral(absl::string_view raw);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_STRING_LITERAL_H_
