// Expressions, and the calls builtins make back into the render.
#include "absl/strings/str_cat.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_renderer.h"

namespace kiln::models::jinja {

Value Renderer::Lookup(absl::string_view name, const Scope& scope) const {
  if (const Value* v = scope.Find(name)) return *v;
  if (const Value* v = context_.Find(name)) return *v;
  if (std::optional<Value> v = FindGlobal(name)) return *std::move(v);
  return Value::Undefined(absl::StrCat("'", name, "' is undefined"));
}

absl::StatusOr<Value> Renderer::ApplyFilter(absl::string_view name, const Value& input, CallArgs args) {
  FilterFn fn = FindFilter(name);
  if (fn == nullptr) {
    if (IsKnownJinjaFilter(name)) {
      return absl::UnimplementedError(absl::StrCat("filter '", name, "' is not supported"));
    }
    return absl::InvalidArgumentError(absl::StrCat("No filter named '", name, "'."));
  }
  return fn(*this, input, args);
}

absl::StatusOr<bool> Renderer::ApplyTest(absl::string_view name, const Value& input, CallArgs args) {
  TestFn fn = FindTest(name);
  if (fn == nullptr) return absl::InvalidArgumentError(absl::StrCat("No test named '", name, "'."));
  return fn(*this, input, args);
}

absl::StatusOr<Value> Renderer::Call(const Value& callee, CallArgs args) {
  if (callee.is_undefined()) return absl::InvalidArgumentError(callee.undefined_message());
  if (!callee.is_callable()) {
    return absl::InvalidArgumentError(absl::StrCat("'", TypeName(callee), "' object is not callable"));
  }
  return callee.callable().Call(*this, std::move(args));
}

Namespace* Renderer::NewNamespace() {
  namespaces_.push_back(std::make_unique<Namespace>());
  return namespaces_.back().get();
}

absl::StatusOr<Value> Renderer::Eval(const Expr& e, const ScopePtr& scope) {
  if (absl::Status s = Nest(e.offset); !s.ok()) return s;
  absl::StatusOr<Value> v = EvalInner(e, scope);
  --nesting_;
  if (v.ok()) {
    if (absl::Status s = Charge(1); !s.ok()) return Located(s, e.offset);
    // Every value a template makes passes here, however it was built.
    if (v->depth() > kMaxValueDepth) {
      return Located(absl::ResourceExhaustedError(absl::StrCat(
                         "a value nests deeper than ", kMaxValueDepth, " levels")),
                     e.offset);
    }
    return v;
  }
  return Located(v.status(), e.offset);
}

absl::StatusOr<CallArgs> Renderer::EvalCallArgs(const CallExprs& call, const ScopePtr& scope) {
  CallArgs args;
  for (const ExprPtr& p : call.positional) {
    absl::StatusOr<Value> v = Eval(*p, scope);
    if (!v.ok()) return v.status();
    args.positional.push_back(*std::move(v));
  }
  if (call.star_args) {
    absl::StatusOr<Value> v = Eval(*call.star_args, scope);
    if (!v.ok()) return v.status();
    absl::StatusOr<std::vector<Value>> items = Iterate(*v);
    if (!items.ok()) return Located(items.status(), call.star_args->offset);
    for (Value& item : *items) args.positional.push_back(std::move(item));
  }
  for (const auto& [name, expr] : call.keyword) {
    absl::StatusOr<Value> v = Eval(*expr, scope);
    if (!v.ok()) return v.status();
    args.keyword.emplace_back(name, *std::move(v));
  }
  if (call.star_kwargs) {
    absl::StatusOr<Value> v = Eval(*call.star_kwargs, scope);
    if (!v.ok()) return v.status();
    if (!v->is_dict()) {
      return Located(absl::InvalidArgumentError(absl::StrCat(
                         "argument after ** must be a mapping, not ", TypeName(*v))),
                     call.star_kwargs->offset);
    }
    for (const auto& [k, value] : v->dict().entries()) {
      if (!k.is_string()) {
        return Located(absl::InvalidArgumentError("keywords must be strings"), call.star_kwargs->offset);
      }
      args.keyword.emplace_back(k.str(), value);
    }
  }
  return args;
}

absl::StatusOr<Value> Renderer::EvalCompare(const Expr& e, const ScopePtr& scope) {
  absl::StatusOr<Value> left = Eval(*e.args[0], scope);
  if (!left.ok()) return left;
  for (size_t i = 0; i < e.compare_ops.size(); ++i) {
    absl::StatusOr<Value> right = Eval(*e.args[i + 1], scope);
    if (!right.ok()) return right;
    bool result = false;
    switch (const CompareOp op = e.compare_ops[i]) {
      case CompareOp::kEq:
        result = Equals(*left, *right);
        break;
      case CompareOp::kNe:
        result = !Equals(*left, *right);
        break;
      case CompareOp::kIn:
      case CompareOp::kNotIn: {
        absl::StatusOr<bool> in = Contains(*right, *left);
        if (!in.ok()) return in.status();
        result = (op == CompareOp::kIn) == *in;
        break;
      }
      default: {
        const char* spelling = op == CompareOp::kLt   ? "<"
                               : op == CompareOp::kLe ? "<="
                               : op == CompareOp::kGt ? ">"
                                                      : ">=";
        absl::StatusOr<int> c = Compare(*left, *right, spelling);
        if (!c.ok()) return c.status();
        if (*c == 2) {
          result = false;  // NaN compares false
        } else {
          result = op == CompareOp::kLt   ? *c < 0
                   : op == CompareOp::kLe ? *c <= 0
                   : op == CompareOp::kGt ? *c > 0
                                          : *c >= 0;
        }
      }
    }
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> Renderer::EvalGetItem(const Expr& e, const ScopePtr& scope) {
  absl::StatusOr<Value> obj = Eval(*e.args[0], scope);
  if (!obj.ok()) return obj;
  const Expr& key_expr = *e.args[1];
  if (key_expr.kind == ExprKind::kSlice) {
    Value parts[3] = {Value::None(), Value::None(), Value::None()};
    for (size_t i = 0; i < 3; ++i) {
      if (!key_expr.args[i]) continue;
      absl::StatusOr<Value> v = Eval(*key_expr.args[i], scope);
      if (!v.ok()) return v;
      parts[i] = *std::move(v);
    }
    if (obj->is_undefined()) return absl::InvalidArgumentError(obj->undefined_message());
    return GetSlice(*this, *obj, parts[0], parts[1], parts[2]);
  }
  absl::StatusOr<Value> key = Eval(key_expr, scope);
  if (!key.ok()) return key;
  if (obj->is_undefined()) return absl::InvalidArgumentError(obj->undefined_message());
  return GetItem(*obj, *key);
}

absl::StatusOr<Value> Renderer::EvalCall(const Expr& e, const ScopePtr& scope) {
  absl::StatusOr<Value> callee = Eval(*e.args[0], scope);
  if (!callee.ok()) return callee;
  absl::StatusOr<CallArgs> args = EvalCallArgs(e.call, scope);
  if (!args.ok()) return args.status();
  return Call(*callee, *std::move(args));
}

absl::StatusOr<Value> Renderer::EvalFilter(const Expr& e, const ScopePtr& scope, const Value* input) {
  absl::StatusOr<Value> base;
  const Expr* operand = e.args[0].get();
  if (operand == nullptr) {
    base = *input;
  } else if (input != nullptr && operand->kind == ExprKind::kFilter) {
    base = EvalFilter(*operand, scope, input);
  } else {
    base = Eval(*operand, scope);
  }
  if (!base.ok()) return base;
  absl::StatusOr<CallArgs> args = EvalCallArgs(e.call, scope);
  if (!args.ok()) return args.status();
  absl::StatusOr<Value> out = ApplyFilter(e.name, *base, *std::move(args));
  if (!out.ok()) return Located(out.status(), e.offset);
  return out;
}

absl::StatusOr<Value> Renderer::EvalCollection(const Expr& e, const ScopePtr& scope) {
  if (e.kind == ExprKind::kDict) {
    Dict dict;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      absl::StatusOr<Value> key = Eval(*e.args[i], scope);
      if (!key.ok()) return key;
      absl::StatusOr<Value> value = Eval(*e.args[i + 1], scope);
      if (!value.ok()) return value;
      if (absl::Status s = CheckHashable(*key); !s.ok()) return s;
      dict.Set(*std::move(key), *std::move(value));
    }
    Value v = Value::FromDict(std::move(dict));
    if (v.depth() > kMaxValueDepth) return absl::ResourceExhaustedError("a dict nests too deeply");
    return v;
  }
  std::vector<Value> items;
  items.reserve(e.args.size());
  for (const ExprPtr& item : e.args) {
    absl::StatusOr<Value> v = Eval(*item, scope);
    if (!v.ok()) return v;
    items.push_back(*std::move(v));
  }
  Value v = Value::List(std::move(items), e.kind == ExprKind::kTuple ? SeqKind::kTuple : SeqKind::kList);
  if (v.depth() > kMaxValueDepth) return absl::ResourceExhaustedError("a list nests too deeply");
  return v;
}

absl::StatusOr<Value> Renderer::EvalInner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return Lookup(e.name, *scope);
    case ExprKind::kNsRef:
    case ExprKind::kSlice:
      return absl::InvalidArgumentError("this expression can only be an assignment target");
    case ExprKind::kGetAttr: {
      absl::StatusOr<Value> obj = Eval(*e.args[0], scope);
      if (!obj.ok()) return obj;
      if (obj->is_undefined()) return absl::InvalidArgumentError(obj->undefined_message());
      return GetAttr(*obj, e.attr);
    }
    case ExprKind::kGetItem:
      return EvalGetItem(e, scope);
    case ExprKind::kCall:
      return EvalCall(e, scope);
    case ExprKind::kFilter:
      return EvalFilter(e, scope, nullptr);
    case ExprKind::kTest: {
      absl::StatusOr<Value> input = Eval(*e.args[0], scope);
      if (!input.ok()) return input;
      absl::StatusOr<CallArgs> args = EvalCallArgs(e.call, scope);
      if (!args.ok()) return args.status();
      absl::StatusOr<bool> r = ApplyTest(e.name, *input, *std::move(args));
      if (!r.ok()) return r.status();
      return Value::Bool(*r != e.negated);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      absl::StatusOr<Value> v = Eval(*e.args[0], scope);
      if (!v.ok()) return v;
      if (e.kind == ExprKind::kNeg) return Negate(*v);
      if (v->is_float()) return v;
      if (v->is_integral()) return Value::Int(v->int_value());
      if (v->is_undefined()) return absl::InvalidArgumentError(v->undefined_message());
      return absl::InvalidArgumentError(
          absl::StrCat("bad operand type for unary +: '", TypeName(*v), "'"));
    }
    case ExprKind::kNot: {
      absl::StatusOr<Value> v = Eval(*e.args[0], scope);
      if (!v.ok()) return v;
      return Value::Bool(!Truthy(*v));
    }
    case ExprKind::kBinary: {
      absl::StatusOr<Value> a = Eval(*e.args[0], scope);
      if (!a.ok()) return a;
      absl::StatusOr<Value> b = Eval(*e.args[1], scope);
      if (!b.ok()) return b;
      return BinaryOperation(*this, e.op, *a, *b);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const ExprPtr& part : e.args) {
        absl::StatusOr<Value> v = Eval(*part, scope);
        if (!v.ok()) return v;
        AppendStr(*v, &out);
        if (absl::Status s = CheckSize(out.size()); !s.ok()) return s;
      }
      return Value::String(std::move(out));
    }
    case ExprKind::kCompare:
      return EvalCompare(e, scope);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      absl::StatusOr<Value> left = Eval(*e.args[0], scope);
      if (!left.ok()) return left;
      if (Truthy(*left) == (e.kind == ExprKind::kOr)) return left;
      return Eval(*e.args[1], scope);
    }
    case ExprKind::kCondExpr: {
      absl::StatusOr<Value> test = Eval(*e.args[1], scope);
      if (!test.ok()) return test;
      if (Truthy(*test)) return Eval(*e.args[0], scope);
      if (e.args[2]) return Eval(*e.args[2], scope);
      return Value::Undefined(absl::StrCat("the inline if-expression on line ", map_.Line(e.offset),
                                           " evaluated to false and no else section was defined."));
    }
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
      return EvalCollection(e, scope);
  }
  return absl::InternalError("unknown expression");
}

}  // namespace kiln::models::jinja
