// Builds the statement tree from tokens with jinja2's grammar and operator
// precedence (jinja2/parser.py), including the extensions transformers
// enables: loop controls ({% break %}, {% continue %}) and its
// {% generation %} block.
#ifndef KILN_MODELS_CHAT_JINJA_PARSER_H_
#define KILN_MODELS_CHAT_JINJA_PARSER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja_ast.h"
#include "models/chat/jinja_lexer.h"

namespace kiln::models::jinja {

// Nesting the parser accepts (expressions within expressions, blocks within
// blocks); deeper templates are InvalidArgument, so parsing and rendering
// cannot exhaust the stack.
inline constexpr int kMaxParseNesting = 100;

// InvalidArgument naming line and column for a syntax error; Unimplemented
// for jinja2 tags kiln does not support (include, extends, block, import,
// from, autoescape).
absl::StatusOr<Body> ParseTokens(const std::vector<Token>& tokens, const SourceMap& map);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_PARSER_H_
