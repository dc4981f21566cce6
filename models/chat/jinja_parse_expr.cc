// Expressions, following jinja2's parser method by method so that precedence
// and the odd corners (tests binding tighter than arithmetic, a left-
// associative **, adjacent string literals joining) come out the same.
#include <optional>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_parser_impl.h"

namespace kiln::models::jinja {
namespace {

ExprPtr MakeExpr(ExprKind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

bool CanAssign(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kName:
      return e.name != "true" && e.name != "false" && e.name != "none" && e.name != "True" &&
             e.name != "False" && e.name != "None";
    case ExprKind::kNsRef:
      return true;
    case ExprKind::kTuple:
      for (const ExprPtr& item : e.args) {
        if (!CanAssign(*item)) return false;
      }
      return true;
    default:
      return false;
  }
}

const char* NodeName(ExprKind kind) {
  switch (kind) {
    case ExprKind::kConst:
      return "const";
    case ExprKind::kGetAttr:
      return "getattr";
    case ExprKind::kGetItem:
      return "getitem";
    case ExprKind::kCall:
      return "call";
    case ExprKind::kList:
      return "list";
    case ExprKind::kDict:
      return "dict";
    default:
      return "expression";
  }
}

}  // namespace

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  if (absl::Status s = Enter(); !s.ok()) return s;
  Nested nested{this};
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

absl::StatusOr<ExprPtr> Parser::ParseCondExpr() {
  absl::StatusOr<ExprPtr> expr1 = ParseOr();
  if (!expr1.ok()) return expr1;
  ExprPtr node = *std::move(expr1);
  while (IsName("if")) {
    const size_t offset = Cur().offset;
    Next();
    absl::StatusOr<ExprPtr> test = ParseOr();
    if (!test.ok()) return test;
    ExprPtr otherwise;
    if (SkipName("else")) {
      if (absl::Status s = Enter(); !s.ok()) return s;
      Nested nested{this};
      absl::StatusOr<ExprPtr> e = ParseCondExpr();
      if (!e.ok()) return e;
      otherwise = *std::move(e);
    }
    ExprPtr cond = MakeExpr(ExprKind::kCondExpr, offset);
    cond->args.push_back(std::move(node));
    cond->args.push_back(*std::move(test));
    cond->args.push_back(std::move(otherwise));
    node = std::move(cond);
  }
  return node;
}

// `operand (keyword operand)*`, folded to the left into `kind` nodes.
absl::StatusOr<ExprPtr> Parser::ParseLeftAssociative(
    absl::string_view keyword, ExprKind kind, absl::StatusOr<ExprPtr> (Parser::*operand)()) {
  absl::StatusOr<ExprPtr> left = (this->*operand)();
  if (!left.ok()) return left;
  ExprPtr node = *std::move(left);
  while (IsName(keyword)) {
    const size_t offset = Cur().offset;
    Next();
    absl::StatusOr<ExprPtr> right = (this->*operand)();
    if (!right.ok()) return right;
    ExprPtr e = MakeExpr(kind, offset);
    e->args.push_back(std::move(node));
    e->args.push_back(*std::move(right));
    node = std::move(e);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  return ParseLeftAssociative("or", ExprKind::kOr, &Parser::ParseAnd);
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  return ParseLeftAssociative("and", ExprKind::kAnd, &Parser::ParseNot);
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  if (absl::Status s = Enter(); !s.ok()) return s;
  Nested nested{this};
  const size_t offset = Cur().offset;
  Next();
  absl::StatusOr<ExprPtr> operand = ParseNot();
  if (!operand.ok()) return operand;
  ExprPtr e = MakeExpr(ExprKind::kNot, offset);
  e->args.push_back(*std::move(operand));
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  const size_t offset = Cur().offset;
  absl::StatusOr<ExprPtr> first = ParseMath1();
  if (!first.ok()) return first;
  ExprPtr node = MakeExpr(ExprKind::kCompare, offset);
  node->args.push_back(*std::move(first));
  static constexpr std::pair<absl::string_view, CompareOp> kOps[] = {
      {"==", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<", CompareOp::kLt},
      {"<=", CompareOp::kLe}, {">", CompareOp::kGt}, {">=", CompareOp::kGe},
  };
  while (true) {
    std::optional<CompareOp> op;
    for (const auto& [spelling, o] : kOps) {
      if (IsOp(spelling)) op = o;
    }
    if (op) {
      Next();
    } else if (IsName("in")) {
      Next();
      op = CompareOp::kIn;
    } else if (IsName("not") && IsName(Look(), "in")) {
      Next();
      Next();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    absl::StatusOr<ExprPtr> operand = ParseMath1();
    if (!operand.ok()) return operand;
    node->compare_ops.push_back(*op);
    node->args.push_back(*std::move(operand));
  }
  if (node->compare_ops.empty()) return std::move(node->args[0]);
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  absl::StatusOr<ExprPtr> left = ParseConcat();
  if (!left.ok()) return left;
  ExprPtr node = *std::move(left);
  while (IsOp("+") || IsOp("-")) {
    const BinaryOp op = IsOp("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    const size_t offset = Cur().offset;
    Next();
    absl::StatusOr<ExprPtr> right = ParseConcat();
    if (!right.ok()) return right;
    ExprPtr e = MakeExpr(ExprKind::kBinary, offset);
    e->op = op;
    e->args.push_back(std::move(node));
    e->args.push_back(*std::move(right));
    node = std::move(e);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  const size_t offset = Cur().offset;
  absl::StatusOr<ExprPtr> first = ParseMath2();
  if (!first.ok()) return first;
  if (!IsOp("~")) return first;
  ExprPtr node = MakeExpr(ExprKind::kConcat, offset);
  node->args.push_back(*std::move(first));
  while (SkipOp("~")) {
    absl::StatusOr<ExprPtr> next = ParseMath2();
    if (!next.ok()) return next;
    node->args.push_back(*std::move(next));
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  absl::StatusOr<ExprPtr> left = ParsePow();
  if (!left.ok()) return left;
  ExprPtr node = *std::move(left);
  while (true) {
    BinaryOp op;
    if (IsOp("*")) {
      op = BinaryOp::kMul;
    } else if (IsOp("/")) {
      op = BinaryOp::kDiv;
    } else if (IsOp("//")) {
      op = BinaryOp::kFloorDiv;
    } else if (IsOp("%")) {
      op = BinaryOp::kMod;
    } else {
      break;
    }
    const size_t offset = Cur().offset;
    Next();
    absl::StatusOr<ExprPtr> right = ParsePow();
    if (!right.ok()) return right;
    ExprPtr e = MakeExpr(ExprKind::kBinary, offset);
    e->op = op;
    e->args.push_back(std::move(node));
    e->args.push_back(*std::move(right));
    node = std::move(e);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  absl::StatusOr<ExprPtr> left = ParseUnary(true);
  if (!left.ok()) return left;
  ExprPtr node = *std::move(left);
  while (IsOp("**")) {
    const size_t offset = Cur().offset;
    Next();
    absl::StatusOr<ExprPtr> right = ParseUnary(true);
    if (!right.ok()) return right;
    ExprPtr e = MakeExpr(ExprKind::kBinary, offset);
    e->op = BinaryOp::kPow;
    e->args.push_back(std::move(node));
    e->args.push_back(*std::move(right));
    node = std::move(e);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  const size_t offset = Cur().offset;
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    if (absl::Status s = Enter(); !s.ok()) return s;
    Nested nested{this};
    const ExprKind kind = IsOp("-") ? ExprKind::kNeg : ExprKind::kPos;
    Next();
    absl::StatusOr<ExprPtr> operand = ParseUnary(false);
    if (!operand.ok()) return operand;
    node = MakeExpr(kind, offset);
    node->args.push_back(*std::move(operand));
  } else {
    absl::StatusOr<ExprPtr> primary = ParsePrimary(false);
    if (!primary.ok()) return primary;
    node = *std::move(primary);
  }
  absl::StatusOr<ExprPtr> postfix = ParsePostfix(std::move(node));
  if (!postfix.ok() || !with_filter) return postfix;
  return ParseFilterExpr(*std::move(postfix));
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary(bool with_namespace) {
  const Token& token = Cur();
  const size_t offset = token.offset;
  switch (token.type) {
    case TokenType::kName: {
      const std::string name = token.value;
      Next();
      if (name == "true" || name == "True" || name == "false" || name == "False") {
        ExprPtr e = MakeExpr(ExprKind::kConst, offset);
        e->value = Value::Bool(name == "true" || name == "True");
        return e;
      }
      if (name == "none" || name == "None") {
        ExprPtr e = MakeExpr(ExprKind::kConst, offset);
        e->value = Value::None();
        return e;
      }
      if (with_namespace && IsOp(".")) {
        Next();
        absl::StatusOr<std::string> attr = ExpectName();
        if (!attr.ok()) return attr.status();
        ExprPtr e = MakeExpr(ExprKind::kNsRef, offset);
        e->name = name;
        e->attr = *std::move(attr);
        return e;
      }
      ExprPtr e = MakeExpr(ExprKind::kName, offset);
      e->name = name;
      return e;
    }
    case TokenType::kString: {
      std::string text;
      while (Cur().type == TokenType::kString) {
        text += Cur().value;
        Next();
      }
      ExprPtr e = MakeExpr(ExprKind::kConst, offset);
      e->value = Value::String(std::move(text));
      return e;
    }
    case TokenType::kInteger:
    case TokenType::kFloat: {
      ExprPtr e = MakeExpr(ExprKind::kConst, offset);
      e->value = token.type == TokenType::kInteger ? Value::Int(token.int_value)
                                                   : Value::Float(token.float_value);
      Next();
      return e;
    }
    default:
      break;
  }
  if (IsOp("(")) {
    Next();
    absl::StatusOr<ExprPtr> inner = ParseTuple(false, true, {}, true);
    if (!inner.ok()) return inner;
    if (absl::Status s = ExpectOp(")"); !s.ok()) return s;
    return inner;
  }
  if (IsOp("[")) return ParseList();
  if (IsOp("{")) return ParseDict();
  return Fail(offset, absl::StrCat("unexpected '", Describe(token), "'"));
}

bool Parser::IsTupleEnd(const std::vector<absl::string_view>& extra_end_names) const {
  const Token& t = Cur();
  if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || IsOp(")")) return true;
  for (absl::string_view name : extra_end_names) {
    if (IsName(name)) return true;
  }
  return false;
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool simplified, bool with_condexpr,
                                           const std::vector<absl::string_view>& extra_end_names,
                                           bool explicit_parentheses, bool with_namespace) {
  size_t offset = Cur().offset;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
    }
    if (IsTupleEnd(extra_end_names)) break;
    absl::StatusOr<ExprPtr> item =
        simplified ? ParsePrimary(with_namespace) : ParseExpression(with_condexpr);
    if (!item.ok()) return item;
    args.push_back(*std::move(item));
    if (!IsOp(",")) break;
    is_tuple = true;
    offset = Cur().offset;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parentheses) {
      return Fail(Cur().offset, absl::StrCat("Expected an expression, got '", Describe(Cur()), "'"));
    }
  }
  ExprPtr e = MakeExpr(ExprKind::kTuple, offset);
  e->args = std::move(args);
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseList() {
  ExprPtr e = MakeExpr(ExprKind::kList, Cur().offset);
  if (absl::Status s = ExpectOp("["); !s.ok()) return s;
  while (!IsOp("]")) {
    if (!e->args.empty()) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
    }
    if (IsOp("]")) break;
    absl::StatusOr<ExprPtr> item = ParseExpression();
    if (!item.ok()) return item;
    e->args.push_back(*std::move(item));
  }
  if (absl::Status s = ExpectOp("]"); !s.ok()) return s;
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseDict() {
  ExprPtr e = MakeExpr(ExprKind::kDict, Cur().offset);
  if (absl::Status s = ExpectOp("{"); !s.ok()) return s;
  while (!IsOp("}")) {
    if (!e->args.empty()) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
    }
    if (IsOp("}")) break;
    absl::StatusOr<ExprPtr> key = ParseExpression();
    if (!key.ok()) return key;
    if (absl::Status s = ExpectOp(":"); !s.ok()) return s;
    absl::StatusOr<ExprPtr> value = ParseExpression();
    if (!value.ok()) return value;
    e->args.push_back(*std::move(key));
    e->args.push_back(*std::move(value));
  }
  if (absl::Status s = ExpectOp("}"); !s.ok()) return s;
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    absl::StatusOr<ExprPtr> next;
    if (IsOp(".") || IsOp("[")) {
      next = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr call = MakeExpr(ExprKind::kCall, Cur().offset);
      call->args.push_back(std::move(node));
      if (absl::Status s = ParseCallArgs(&call->call); !s.ok()) return s;
      next = std::move(call);
    } else {
      return node;
    }
    if (!next.ok()) return next;
    node = *std::move(next);
  }
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    absl::StatusOr<ExprPtr> next;
    if (IsOp("|")) {
      next = ParseFilter(std::move(node), false);
    } else if (IsName("is")) {
      next = ParseTest(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr call = MakeExpr(ExprKind::kCall, Cur().offset);
      call->args.push_back(std::move(node));
      if (absl::Status s = ParseCallArgs(&call->call); !s.ok()) return s;
      next = std::move(call);
    } else {
      return node;
    }
    if (!next.ok()) return next;
    node = *std::move(next);
  }
}

absl::StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const size_t offset = Cur().offset;
  if (SkipOp(".")) {
    const Token& attr = Cur();
    if (attr.type == TokenType::kName) {
      ExprPtr e = MakeExpr(ExprKind::kGetAttr, offset);
      e->args.push_back(std::move(node));
      e->attr = attr.value;
      Next();
      return e;
    }
    if (attr.type != TokenType::kInteger) return Fail(attr.offset, "expected name or number");
    ExprPtr index = MakeExpr(ExprKind::kConst, attr.offset);
    index->value = Value::Int(attr.int_value);
    Next();
    ExprPtr e = MakeExpr(ExprKind::kGetItem, offset);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(index));
    return e;
  }
  if (absl::Status s = ExpectOp("["); !s.ok()) return s;
  std::vector<ExprPtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
    }
    absl::StatusOr<ExprPtr> arg = ParseSubscribed();
    if (!arg.ok()) return arg;
    args.push_back(*std::move(arg));
  }
  if (absl::Status s = ExpectOp("]"); !s.ok()) return s;
  ExprPtr e = MakeExpr(ExprKind::kGetItem, offset);
  e->args.push_back(std::move(node));
  if (args.size() == 1) {
    e->args.push_back(std::move(args[0]));
  } else {
    ExprPtr tuple = MakeExpr(ExprKind::kTuple, offset);
    tuple->args = std::move(args);
    e->args.push_back(std::move(tuple));
  }
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseSubscribed() {
  const size_t offset = Cur().offset;
  std::vector<ExprPtr> parts;
  if (SkipOp(":")) {
    parts.push_back(nullptr);
  } else {
    absl::StatusOr<ExprPtr> node = ParseExpression();
    if (!node.ok()) return node;
    if (!IsOp(":")) return node;
    Next();
    parts.push_back(*std::move(node));
  }
  const auto at_end = [&] { return IsOp("]") || IsOp(","); };
  if (IsOp(":") || at_end()) {
    parts.push_back(nullptr);
  } else {
    absl::StatusOr<ExprPtr> stop = ParseExpression();
    if (!stop.ok()) return stop;
    parts.push_back(*std::move(stop));
  }
  if (SkipOp(":") && !at_end()) {
    absl::StatusOr<ExprPtr> step = ParseExpression();
    if (!step.ok()) return step;
    parts.push_back(*std::move(step));
  } else {
    parts.push_back(nullptr);
  }
  ExprPtr e = MakeExpr(ExprKind::kSlice, offset);
  e->args = std::move(parts);
  return e;
}

absl::Status Parser::ParseCallArgs(CallExprs* call) {
  const size_t offset = Cur().offset;
  if (absl::Status s = ExpectOp("("); !s.ok()) return s;
  const auto ensure = [&](bool ok) {
    return ok ? absl::OkStatus() : Fail(offset, "invalid syntax for function call expression");
  };
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
      if (IsOp(")")) break;
    }
    if (IsOp("*")) {
      if (absl::Status s = ensure(!call->star_args && !call->star_kwargs); !s.ok()) return s;
      Next();
      absl::StatusOr<ExprPtr> e = ParseExpression();
      if (!e.ok()) return e.status();
      call->star_args = *std::move(e);
    } else if (IsOp("**")) {
      if (absl::Status s = ensure(!call->star_kwargs); !s.ok()) return s;
      Next();
      absl::StatusOr<ExprPtr> e = ParseExpression();
      if (!e.ok()) return e.status();
      call->star_kwargs = *std::move(e);
    } else if (Cur().type == TokenType::kName && IsOp(Look(), "=")) {
      if (absl::Status s = ensure(!call->star_kwargs); !s.ok()) return s;
      std::string key = Cur().value;
      Next();
      Next();
      absl::StatusOr<ExprPtr> e = ParseExpression();
      if (!e.ok()) return e.status();
      call->keyword.emplace_back(std::move(key), *std::move(e));
    } else {
      if (absl::Status s = ensure(!call->star_args && !call->star_kwargs && call->keyword.empty());
          !s.ok()) {
        return s;
      }
      absl::StatusOr<ExprPtr> e = ParseExpression();
      if (!e.ok()) return e.status();
      call->positional.push_back(*std::move(e));
    }
    require_comma = true;
  }
  return ExpectOp(")");
}

absl::StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    const size_t offset = Cur().offset;
    absl::StatusOr<std::string> name = ExpectName();
    if (!name.ok()) return name.status();
    while (SkipOp(".")) {
      absl::StatusOr<std::string> part = ExpectName();
      if (!part.ok()) return part.status();
      *name += "." + *part;
    }
    ExprPtr e = MakeExpr(ExprKind::kFilter, offset);
    e->name = *std::move(name);
    e->args.push_back(std::move(node));
    if (IsOp("(")) {
      if (absl::Status s = ParseCallArgs(&e->call); !s.ok()) return s;
    }
    node = std::move(e);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseTest(ExprPtr node) {
  Next();  // "is"
  const bool negated = SkipName("not");
  const size_t offset = Cur().offset;
  absl::StatusOr<std::string> name = ExpectName();
  if (!name.ok()) return name.status();
  while (SkipOp(".")) {
    absl::StatusOr<std::string> part = ExpectName();
    if (!part.ok()) return part.status();
    *name += "." + *part;
  }
  ExprPtr e = MakeExpr(ExprKind::kTest, offset);
  e->name = *std::move(name);
  e->negated = negated;
  e->args.push_back(std::move(node));
  const TokenType t = Cur().type;
  if (IsOp("(")) {
    if (absl::Status s = ParseCallArgs(&e->call); !s.ok()) return s;
  } else if ((t == TokenType::kName || t == TokenType::kString || t == TokenType::kInteger ||
              t == TokenType::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return Fail(Cur().offset, "You cannot chain multiple tests with is");
    absl::StatusOr<ExprPtr> arg = ParsePrimary(false);
    if (!arg.ok()) return arg;
    absl::StatusOr<ExprPtr> postfix = ParsePostfix(*std::move(arg));
    if (!postfix.ok()) return postfix;
    e->call.positional.push_back(*std::move(postfix));
  }
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseAssignTarget(bool with_tuple, bool name_only,
                                                  const std::vector<absl::string_view>& extra_end_names,
                                                  bool with_namespace) {
  const size_t offset = Cur().offset;
  ExprPtr target;
  if (name_only) {
    absl::StatusOr<std::string> name = ExpectName();
    if (!name.ok()) return name.status();
    target = MakeExpr(ExprKind::kName, offset);
    target->name = *std::move(name);
  } else {
    absl::StatusOr<ExprPtr> e = with_tuple
                                    ? ParseTuple(true, true, extra_end_names, false, with_namespace)
                                    : ParsePrimary(with_namespace);
    if (!e.ok()) return e;
    target = *std::move(e);
  }
  if (!CanAssign(*target)) {
    return Fail(target->offset, absl::StrCat("can't assign to '", NodeName(target->kind), "'"));
  }
  return target;
}

}  // namespace kiln::models::jinja
