// Splits a template into tokens exactly as jinja2's lexer does with
// trim_blocks and lstrip_blocks on: the text between tags (with `-`/`+`
// whitespace control and both trims applied), then the tokens inside each
// `{{ }}` / `{% %}`. Comments vanish and raw blocks become text.
#ifndef KILN_MODELS_CHAT_JINJA_LEXER_H_
#define KILN_MODELS_CHAT_JINJA_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::models::jinja {

enum class TokenType : uint8_t {
  kData,  // text outside tags
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,  // value: the unescaped text
  kInteger,
  kFloat,
  kOperator,  // value: the operator's spelling ("+", "//", "(", ...)
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  size_t offset = 0;  // into the normalized source
};

// Maps offsets of the normalized source to 1-based lines and columns
// (columns count code points).
class SourceMap {
 public:
  explicit SourceMap(absl::string_view source);
  int Line(size_t offset) const;
  int Column(size_t offset) const;
  // "line L, column C"
  std::string Describe(size_t offset) const;

 private:
  absl::string_view source_;
  std::vector<size_t> line_starts_;
};

// What jinja2 does to a source before lexing: \r\n and \r become \n, and one
// trailing newline is dropped (keep_trailing_newline=False).
std::string NormalizeSource(absl::string_view source);

// Tokenizes a normalized source; the last token is kEof. InvalidArgument
// naming the line and column for what jinja2's lexer rejects (an unknown
// character, an unterminated comment or raw block, unbalanced brackets, a
// bad string escape).
absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view source);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_LEXER_H_
