// The parsed template: expressions and statements, shaped like jinja2's
// nodes. Each node keeps the source offset it came from, for messages.
#ifndef KILN_MODELS_CHAT_JINJA_AST_H_
#define KILN_MODELS_CHAT_JINJA_AST_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kConst,    // value
  kName,     // name
  kNsRef,    // name.attr as an assignment target; name, attr
  kGetAttr,  // args[0].attr
  kGetItem,  // args[0][args[1]]
  kSlice,    // args = {start, stop, step}, each may be null
  kCall,     // args[0](call)
  kFilter,   // args[0] | name(call); args[0] is null in filter blocks
  kTest,     // args[0] is [not] name(call)
  kNeg,
  kPos,
  kNot,
  kBinary,   // args[0] op args[1]
  kConcat,   // args joined with ~
  kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...
  kAnd,
  kOr,
  kCondExpr,  // args = {then, test, else (may be null)}
  kList,
  kTuple,
  kDict,  // args = {key0, value0, key1, value1, ...}
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct CallExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // *args
  ExprPtr star_kwargs;  // **kwargs
};

struct Expr {
  ExprKind kind;
  size_t offset = 0;
  Value value;
  std::string name;
  std::string attr;
  BinaryOp op = BinaryOp::kAdd;
  bool negated = false;  // kTest: "is not"
  std::vector<ExprPtr> args;
  std::vector<CompareOp> compare_ops;
  CallExprs call;
};

enum class StmtKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // expr; body; else_body (an elif is an If inside else_body)
  kFor,          // target in expr [if cond]; body; else_body
  kSet,          // target = expr
  kSetBlock,     // target = body, through the filter chain `filter` (may be null)
  kMacro,        // name(params) body
  kCallBlock,    // {% call expr %} body: body becomes `caller`
  kFilterBlock,  // body through `filter`
  kWith,         // with targets = values: body
  kBreak,
  kContinue,
  kGeneration,  // transformers' {% generation %}: renders its body
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind;
  size_t offset = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr cond;
  ExprPtr filter;  // a kFilter chain whose innermost operand is null
  Body body;
  Body else_body;
  // kMacro; also the call block's caller(params).
  std::string name;
  std::vector<MacroParam> params;
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
  // kWith
  std::vector<std::pair<ExprPtr, ExprPtr>> assignments;
};

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_AST_H_
