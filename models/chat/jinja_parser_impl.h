// The parser's class, shared by its statement half (jinja_parser.cc) and its
// expression half (jinja_parse_expr.cc). Internal to the engine.
#ifndef KILN_MODELS_CHAT_JINJA_PARSER_IMPL_H_
#define KILN_MODELS_CHAT_JINJA_PARSER_IMPL_H_

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja_ast.h"
#include "models/chat/jinja_lexer.h"

namespace kiln::models::jinja {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const SourceMap& map) : tokens_(tokens), map_(map) {}

  absl::StatusOr<Body> ParseTemplate();

  // Expressions (jinja_parse_expr.cc), named after jinja2's parse_* methods.
  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr = true);
  absl::StatusOr<ExprPtr> ParseTuple(bool simplified = false, bool with_condexpr = true,
                                     const std::vector<absl::string_view>& extra_end_names = {},
                                     bool explicit_parentheses = false, bool with_namespace = false);
  absl::StatusOr<ExprPtr> ParseAssignTarget(bool with_tuple = true, bool name_only = false,
                                            const std::vector<absl::string_view>& extra_end_names = {},
                                            bool with_namespace = false);
  // A filter chain; `node` is null in filter blocks and `{% set x | f %}`.
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node, bool start_inline);

 private:
  // Leaves one nesting level when it goes out of scope.
  struct Nested {
    Parser* parser;
    ~Nested() { --parser->depth_; }
  };

  // Tokens.
  const Token& Cur() const { return tokens_[pos_]; }
  const Token& Look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void Next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsName(absl::string_view name) const { return IsName(Cur(), name); }
  static bool IsName(const Token& t, absl::string_view name) {
    return t.type == TokenType::kName && t.value == name;
  }
  bool IsOp(absl::string_view op) const { return IsOp(Cur(), op); }
  static bool IsOp(const Token& t, absl::string_view op) {
    return t.type == TokenType::kOperator && t.value == op;
  }
  bool SkipName(absl::string_view name);
  bool SkipOp(absl::string_view op);
  static std::string Describe(const Token& t);
  absl::Status Fail(size_t offset, absl::string_view message) const;
  absl::Status Unexpected(absl::string_view expected) const;
  absl::Status ExpectOp(absl::string_view op);
  absl::Status ExpectType(TokenType type);
  absl::StatusOr<std::string> ExpectName();
  absl::Status ExpectNamed(absl::string_view name);
  // One more nesting level (paired with a Nested), or an error past
  // kMaxParseNesting.
  absl::Status Enter();

  // Expression levels, from the loosest binding to the tightest.
  absl::StatusOr<ExprPtr> ParseCondExpr();
  absl::StatusOr<ExprPtr> ParseLeftAssociative(absl::string_view keyword, ExprKind kind,
                                               absl::StatusOr<ExprPtr> (Parser::*operand)());
  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();
  absl::StatusOr<ExprPtr> ParseNot();
  absl::StatusOr<ExprPtr> ParseCompare();
  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> ParsePrimary(bool with_namespace);
  absl::StatusOr<ExprPtr> ParseList();
  absl::StatusOr<ExprPtr> ParseDict();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscribed();
  absl::StatusOr<ExprPtr> ParseTest(ExprPtr node);
  absl::Status ParseCallArgs(CallExprs* call);
  bool IsTupleEnd(const std::vector<absl::string_view>& extra_end_names) const;

  // Statements (jinja_parser.cc).
  absl::Status Subparse(const std::vector<absl::string_view>& end_names, Body* body);
  absl::Status ParseStatements(const std::vector<absl::string_view>& end_names, bool drop_needle,
                               Body* body);
  absl::Status ParseStatement(Body* body);
  absl::StatusOr<StmtPtr> ParseFor();
  absl::StatusOr<StmtPtr> ParseIf();
  absl::StatusOr<StmtPtr> ParseSet();
  absl::StatusOr<StmtPtr> ParseMacro();
  absl::StatusOr<StmtPtr> ParseCallBlock();
  absl::StatusOr<StmtPtr> ParseFilterBlock();
  absl::StatusOr<StmtPtr> ParseWith();
  absl::Status ParseSignature(Stmt* macro);
  absl::Status FailEof(const std::vector<absl::string_view>& end_names) const;
  absl::Status FailUnknownTag(const Token& tag) const;

  const std::vector<Token>& tokens_;
  const SourceMap& map_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for {% break %}: loops around, not counting macros
  std::vector<std::vector<absl::string_view>> end_stack_;
  std::vector<std::string> tag_stack_;
};

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_PARSER_IMPL_H_
