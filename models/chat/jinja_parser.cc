// Statements and the token helpers; expressions are in jinja_parse_expr.cc.
#include "models/chat/jinja_parser.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/chat/jinja_parser_impl.h"

namespace kiln::models::jinja {
namespace {

StmtPtr MakeStmt(StmtKind kind, size_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->offset = offset;
  return s;
}

// jinja2 tags that need a template loader or an autoescaping environment.
bool IsUnsupportedJinjaTag(absl::string_view name) {
  return name == "block" || name == "extends" || name == "include" || name == "import" ||
         name == "from" || name == "autoescape";
}

void VisitExprNames(const Expr* e, const std::function<void(const std::string&)>& fn) {
  if (e == nullptr) return;
  if (e->kind == ExprKind::kName) fn(e->name);
  for (const ExprPtr& a : e->args) VisitExprNames(a.get(), fn);
  for (const ExprPtr& a : e->call.positional) VisitExprNames(a.get(), fn);
  for (const auto& [k, a] : e->call.keyword) VisitExprNames(a.get(), fn);
  VisitExprNames(e->call.star_args.get(), fn);
  VisitExprNames(e->call.star_kwargs.get(), fn);
}

// Every name a body reads, nested blocks included: jinja2 decides from this
// whether a macro takes extra arguments (varargs, kwargs) and a caller.
void VisitBodyNames(const Body& body, const std::function<void(const std::string&)>& fn) {
  for (const StmtPtr& s : body) {
    VisitExprNames(s->expr.get(), fn);
    VisitExprNames(s->cond.get(), fn);
    VisitExprNames(s->filter.get(), fn);
    for (const MacroParam& p : s->params) VisitExprNames(p.default_value.get(), fn);
    for (const auto& [t, v] : s->assignments) VisitExprNames(v.get(), fn);
    VisitBodyNames(s->body, fn);
    VisitBodyNames(s->else_body, fn);
  }
}

void MarkSpecialNames(Stmt* macro) {
  VisitBodyNames(macro->body, [&](const std::string& name) {
    if (name == "varargs") macro->uses_varargs = true;
    if (name == "kwargs") macro->uses_kwargs = true;
    if (name == "caller") macro->uses_caller = true;
  });
}

}  // namespace

bool Parser::SkipName(absl::string_view name) {
  if (!IsName(name)) return false;
  Next();
  return true;
}

bool Parser::SkipOp(absl::string_view op) {
  if (!IsOp(op)) return false;
  Next();
  return true;
}

std::string Parser::Describe(const Token& t) {
  switch (t.type) {
    case TokenType::kName:
    case TokenType::kOperator:
      return t.value;
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kData:
      return "template data / text";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kEof:
      return "end of template";
  }
  return "?";
}

absl::Status Parser::Fail(size_t offset, absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat("jinja: ", map_.Describe(offset), ": ", message));
}

absl::Status Parser::Unexpected(absl::string_view expected) const {
  if (Cur().type == TokenType::kEof) {
    return Fail(Cur().offset, absl::StrCat("unexpected end of template, expected '", expected, "'"));
  }
  return Fail(Cur().offset,
              absl::StrCat("expected token '", expected, "', got '", Describe(Cur()), "'"));
}

absl::Status Parser::ExpectOp(absl::string_view op) {
  if (!SkipOp(op)) return Unexpected(op);
  return absl::OkStatus();
}

absl::Status Parser::ExpectType(TokenType type) {
  if (Cur().type != type) {
    Token t;
    t.type = type;
    return Unexpected(Describe(t));
  }
  Next();
  return absl::OkStatus();
}

absl::StatusOr<std::string> Parser::ExpectName() {
  if (Cur().type != TokenType::kName) return Unexpected("name");
  std::string name = Cur().value;
  Next();
  return name;
}

absl::Status Parser::ExpectNamed(absl::string_view name) {
  if (!SkipName(name)) return Unexpected(name);
  return absl::OkStatus();
}

absl::Status Parser::Enter() {
  if (++depth_ > kMaxParseNesting) {
    --depth_;
    return Fail(Cur().offset,
                absl::StrCat("the template nests deeper than ", kMaxParseNesting, " levels"));
  }
  return absl::OkStatus();
}

absl::Status Parser::FailEof(const std::vector<absl::string_view>& end_names) const {
  std::vector<std::string> quoted;
  for (absl::string_view n : end_names) quoted.push_back(absl::StrCat("'", n, "'"));
  std::string message = "Unexpected end of template.";
  if (!quoted.empty()) {
    absl::StrAppend(&message, " Jinja was looking for the following tags: ",
                    absl::StrJoin(quoted, " or "), ".");
  }
  if (!tag_stack_.empty()) {
    absl::StrAppend(&message, " The innermost block that needs to be closed is '",
                    tag_stack_.back(), "'.");
  }
  return Fail(Cur().offset, message);
}

absl::Status Parser::FailUnknownTag(const Token& tag) const {
  std::string message = absl::StrCat("Encountered unknown tag '", tag.value, "'.");
  if (!end_stack_.empty()) {
    std::vector<std::string> quoted;
    for (absl::string_view n : end_stack_.back()) quoted.push_back(absl::StrCat("'", n, "'"));
    absl::StrAppend(&message, " Jinja was looking for the following tags: ",
                    absl::StrJoin(quoted, " or "), ".");
  }
  if (!tag_stack_.empty()) {
    absl::StrAppend(&message, " The innermost block that needs to be closed is '",
                    tag_stack_.back(), "'.");
  }
  return Fail(tag.offset, message);
}

absl::StatusOr<Body> Parser::ParseTemplate() {
  Body body;
  if (absl::Status s = Subparse({}, &body); !s.ok()) return s;
  return body;
}

absl::Status Parser::Subparse(const std::vector<absl::string_view>& end_names, Body* body) {
  if (!end_names.empty()) end_stack_.push_back(end_names);
  struct PopEnd {
    Parser* p;
    bool active;
    ~PopEnd() {
      if (active) p->end_stack_.pop_back();
    }
  } pop_end{this, !end_names.empty()};
  while (Cur().type != TokenType::kEof) {
    const Token& token = Cur();
    if (token.type == TokenType::kData) {
      StmtPtr text = MakeStmt(StmtKind::kText, token.offset);
      text->text = token.value;
      body->push_back(std::move(text));
      Next();
    } else if (token.type == TokenType::kVariableBegin) {
      Next();
      StmtPtr out = MakeStmt(StmtKind::kOutput, token.offset);
      absl::StatusOr<ExprPtr> e = ParseTuple(false, true);
      if (!e.ok()) return e.status();
      out->expr = *std::move(e);
      if (absl::Status s = ExpectType(TokenType::kVariableEnd); !s.ok()) return s;
      body->push_back(std::move(out));
    } else if (token.type == TokenType::kBlockBegin) {
      Next();
      for (absl::string_view name : end_names) {
        if (IsName(name)) return absl::OkStatus();
      }
      if (absl::Status s = ParseStatement(body); !s.ok()) return s;
      if (absl::Status s = ExpectType(TokenType::kBlockEnd); !s.ok()) return s;
    } else {
      return Fail(token.offset, absl::StrCat("unexpected '", Describe(token), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseStatements(const std::vector<absl::string_view>& end_names,
                                     bool drop_needle, Body* body) {
  SkipOp(":");
  if (absl::Status s = ExpectType(TokenType::kBlockEnd); !s.ok()) return s;
  if (absl::Status s = Subparse(end_names, body); !s.ok()) return s;
  if (Cur().type == TokenType::kEof) return FailEof(end_names);
  if (drop_needle) Next();
  return absl::OkStatus();
}

absl::Status Parser::ParseStatement(Body* body) {
  const Token& token = Cur();
  if (token.type != TokenType::kName) return Fail(token.offset, "tag name expected");
  if (absl::Status s = Enter(); !s.ok()) return s;
  Nested nested{this};
  const std::string tag = token.value;
  const size_t offset = token.offset;
  if (IsUnsupportedJinjaTag(tag)) {
    return absl::UnimplementedError(
        absl::StrCat("jinja: tag '", tag, "' is not supported (", map_.Describe(offset), ")"));
  }
  tag_stack_.push_back(tag);
  struct PopTag {
    Parser* p;
    ~PopTag() { p->tag_stack_.pop_back(); }
  } pop_tag{this};
  absl::StatusOr<StmtPtr> stmt;
  if (tag == "for") {
    stmt = ParseFor();
  } else if (tag == "if") {
    stmt = ParseIf();
  } else if (tag == "set") {
    stmt = ParseSet();
  } else if (tag == "macro") {
    stmt = ParseMacro();
  } else if (tag == "call") {
    stmt = ParseCallBlock();
  } else if (tag == "filter") {
    stmt = ParseFilterBlock();
  } else if (tag == "with") {
    stmt = ParseWith();
  } else if (tag == "print") {
    Next();
    bool first = true;
    while (Cur().type != TokenType::kBlockEnd) {
      if (!first) {
        if (absl::Status s = ExpectOp(","); !s.ok()) return s;
      }
      first = false;
      StmtPtr out = MakeStmt(StmtKind::kOutput, Cur().offset);
      absl::StatusOr<ExprPtr> e = ParseExpression();
      if (!e.ok()) return e.status();
      out->expr = *std::move(e);
      body->push_back(std::move(out));
    }
    return absl::OkStatus();
  } else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return Fail(offset, absl::StrCat("'", tag, "' outside of a for loop"));
    Next();
    stmt = MakeStmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, offset);
  } else if (tag == "generation") {
    Next();
    // transformers makes this a call block: its body is a function, which
    // loop controls cannot leave.
    StmtPtr s = MakeStmt(StmtKind::kGeneration, offset);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    absl::Status st = ParseStatements({"endgeneration"}, true, &s->body);
    loop_depth_ = saved_loops;
    if (!st.ok()) return st;
    stmt = std::move(s);
  } else {
    tag_stack_.pop_back();
    absl::Status error = FailUnknownTag(token);
    tag_stack_.push_back(tag);
    return error;
  }
  if (!stmt.ok()) return stmt.status();
  body->push_back(*std::move(stmt));
  return absl::OkStatus();
}

absl::StatusOr<StmtPtr> Parser::ParseFor() {
  StmtPtr s = MakeStmt(StmtKind::kFor, Cur().offset);
  Next();
  absl::StatusOr<ExprPtr> target = ParseAssignTarget(true, false, {"in"});
  if (!target.ok()) return target.status();
  s->target = *std::move(target);
  if (absl::Status st = ExpectNamed("in"); !st.ok()) return st;
  absl::StatusOr<ExprPtr> iter = ParseTuple(false, false, {"recursive"});
  if (!iter.ok()) return iter.status();
  s->expr = *std::move(iter);
  if (SkipName("if")) {
    absl::StatusOr<ExprPtr> cond = ParseExpression();
    if (!cond.ok()) return cond.status();
    s->cond = *std::move(cond);
  }
  if (IsName("recursive")) {
    return absl::UnimplementedError(
        absl::StrCat("jinja: recursive loops are not supported (", map_.Describe(Cur().offset), ")"));
  }
  ++loop_depth_;
  absl::Status st = ParseStatements({"endfor", "else"}, false, &s->body);
  --loop_depth_;
  if (!st.ok()) return st;
  const bool has_else = IsName("else");
  Next();
  if (has_else) {
    if (absl::Status e = ParseStatements({"endfor"}, true, &s->else_body); !e.ok()) return e;
  }
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseIf() {
  StmtPtr result = MakeStmt(StmtKind::kIf, Cur().offset);
  Next();
  Stmt* node = result.get();
  while (true) {
    absl::StatusOr<ExprPtr> test = ParseTuple(false, false);
    if (!test.ok()) return test.status();
    node->expr = *std::move(test);
    if (absl::Status s = ParseStatements({"elif", "else", "endif"}, false, &node->body); !s.ok())
      return s;
    const Token& token = Cur();
    Next();
    if (IsName(token, "elif")) {
      StmtPtr elif = MakeStmt(StmtKind::kIf, token.offset);
      Stmt* next = elif.get();
      node->else_body.push_back(std::move(elif));
      node = next;
      continue;
    }
    if (IsName(token, "else")) {
      if (absl::Status s = ParseStatements({"endif"}, true, &node->else_body); !s.ok()) return s;
    }
    return result;
  }
}

absl::StatusOr<StmtPtr> Parser::ParseSet() {
  const size_t offset = Cur().offset;
  Next();
  absl::StatusOr<ExprPtr> target = ParseAssignTarget(true, false, {}, true);
  if (!target.ok()) return target.status();
  if (SkipOp("=")) {
    StmtPtr s = MakeStmt(StmtKind::kSet, offset);
    s->target = *std::move(target);
    absl::StatusOr<ExprPtr> value = ParseTuple();
    if (!value.ok()) return value.status();
    s->expr = *std::move(value);
    return s;
  }
  StmtPtr s = MakeStmt(StmtKind::kSetBlock, offset);
  s->target = *std::move(target);
  absl::StatusOr<ExprPtr> filter = ParseFilter(nullptr, false);
  if (!filter.ok()) return filter.status();
  s->filter = *std::move(filter);
  if (absl::Status st = ParseStatements({"endset"}, true, &s->body); !st.ok()) return st;
  return s;
}

absl::Status Parser::ParseSignature(Stmt* macro) {
  if (absl::Status s = ExpectOp("("); !s.ok()) return s;
  bool has_default = false;
  while (!IsOp(")")) {
    if (!macro->params.empty()) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
    }
    absl::StatusOr<ExprPtr> arg = ParseAssignTarget(true, true);
    if (!arg.ok()) return arg.status();
    MacroParam param;
    param.name = (*arg)->name;
    if (SkipOp("=")) {
      absl::StatusOr<ExprPtr> value = ParseExpression();
      if (!value.ok()) return value.status();
      param.default_value = *std::move(value);
      has_default = true;
    } else if (has_default) {
      return Fail(Cur().offset, "non-default argument follows default argument");
    }
    macro->params.push_back(std::move(param));
  }
  return ExpectOp(")");
}

absl::StatusOr<StmtPtr> Parser::ParseMacro() {
  StmtPtr s = MakeStmt(StmtKind::kMacro, Cur().offset);
  Next();
  absl::StatusOr<ExprPtr> name = ParseAssignTarget(true, true);
  if (!name.ok()) return name.status();
  s->name = (*name)->name;
  if (absl::Status st = ParseSignature(s.get()); !st.ok()) return st;
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  absl::Status st = ParseStatements({"endmacro"}, true, &s->body);
  loop_depth_ = saved_loops;
  if (!st.ok()) return st;
  MarkSpecialNames(s.get());
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseCallBlock() {
  StmtPtr s = MakeStmt(StmtKind::kCallBlock, Cur().offset);
  Next();
  if (IsOp("(")) {
    if (absl::Status st = ParseSignature(s.get()); !st.ok()) return st;
  }
  absl::StatusOr<ExprPtr> call = ParseExpression();
  if (!call.ok()) return call.status();
  if ((*call)->kind != ExprKind::kCall) return Fail(s->offset, "expected call");
  s->expr = *std::move(call);
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  absl::Status st = ParseStatements({"endcall"}, true, &s->body);
  loop_depth_ = saved_loops;
  if (!st.ok()) return st;
  s->name = "caller";
  MarkSpecialNames(s.get());
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseFilterBlock() {
  StmtPtr s = MakeStmt(StmtKind::kFilterBlock, Cur().offset);
  Next();
  absl::StatusOr<ExprPtr> filter = ParseFilter(nullptr, true);
  if (!filter.ok()) return filter.status();
  s->filter = *std::move(filter);
  if (absl::Status st = ParseStatements({"endfilter"}, true, &s->body); !st.ok()) return st;
  return s;
}

absl::StatusOr<StmtPtr> Parser::ParseWith() {
  StmtPtr s = MakeStmt(StmtKind::kWith, Cur().offset);
  Next();
  while (Cur().type != TokenType::kBlockEnd) {
    if (!s->assignments.empty()) {
      if (absl::Status st = ExpectOp(","); !st.ok()) return st;
    }
    absl::StatusOr<ExprPtr> target = ParseAssignTarget();
    if (!target.ok()) return target.status();
    if (absl::Status st = ExpectOp("="); !st.ok()) return st;
    absl::StatusOr<ExprPtr> value = ParseExpression();
    if (!value.ok()) return value.status();
    s->assignments.emplace_back(*std::move(target), *std::move(value));
  }
  if (absl::Status st = ParseStatements({"endwith"}, true, &s->body); !st.ok()) return st;
  return s;
}

absl::StatusOr<Body> ParseTokens(const std::vector<Token>& tokens, const SourceMap& map) {
  return Parser(tokens, map).ParseTemplate();
}

}  // namespace kiln::models::jinja
