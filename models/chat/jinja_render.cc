// Statements: output, control flow, assignment, macros and blocks.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_renderer.h"

namespace kiln::models::jinja {
namespace {

// How deep evaluation may nest (expressions within expressions, macro
// calls within them), well inside any thread's stack.
constexpr int kMaxRenderNesting = 600;

// jinja2's LoopContext: the `loop` variable.
class LoopObject final : public Object {
 public:
  explicit LoopObject(std::vector<Value> items) : items_(std::move(items)) {}

  void set_index0(size_t i) { index0_ = i; }
  // After the loop: drop what changed() kept, so no value keeps the loop
  // (and itself) alive.
  void End() {
    ended_ = true;
    last_changed_.clear();
  }

  std::string TypeName() const override { return "LoopContext"; }
  std::string Repr() const override {
    return absl::StrCat("<LoopContext ", index0_ + 1, "/", items_.size(), ">");
  }

  Value GetAttr(absl::string_view name, const Value& self) const override {
    const auto n = static_cast<int64_t>(items_.size());
    const auto i = static_cast<int64_t>(index0_);
    if (name == "index") return Value::Int(i + 1);
    if (name == "index0") return Value::Int(i);
    if (name == "revindex") return Value::Int(n - i);
    if (name == "revindex0") return Value::Int(n - i - 1);
    if (name == "first") return Value::Bool(i == 0);
    if (name == "last") return Value::Bool(i + 1 >= n);
    if (name == "length") return Value::Int(n);
    if (name == "depth") return Value::Int(1);
    if (name == "depth0") return Value::Int(0);
    if (name == "previtem") {
      return i == 0 ? Value::Undefined("there is no previous item") : items_[index0_ - 1];
    }
    if (name == "nextitem") {
      return i + 1 >= n ? Value::Undefined("there is no next item") : items_[index0_ + 1];
    }
    if (name == "cycle" || name == "changed") return BoundMethod(self, name);
    return Value::Undefined(
        absl::StrCat("'jinja2.runtime.LoopContext object' has no attribute '", name, "'"));
  }

  absl::StatusOr<Value> CallMethod(absl::string_view name, CallContext&, CallArgs args) override {
    if (!args.keyword.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("loop.", name, "() takes no keyword arguments"));
    }
    if (name == "cycle") {
      if (args.positional.empty()) return absl::InvalidArgumentError("no items for cycling given");
      return args.positional[index0_ % args.positional.size()];
    }
    const bool changed = !has_changed_ || !Equals(Value::Tuple(last_changed_), Value::Tuple(args.positional));
    if (changed && !ended_) {
      last_changed_ = std::move(args.positional);
      has_changed_ = true;
    }
    return Value::Bool(changed);
  }

 private:
  std::vector<Value> items_;
  size_t index0_ = 0;
  std::vector<Value> last_changed_;
  bool has_changed_ = false;
  bool ended_ = false;
};

class MacroValue final : public Callable {
 public:
  MacroValue(Renderer* renderer, const Stmt* macro, Scope* scope)
      : renderer_(renderer), macro_(macro), scope_(scope) {}
  std::string Repr() const override { return absl::StrCat("<Macro '", macro_->name, "'>"); }
  std::string TypeName() const override { return "Macro"; }
  absl::StatusOr<Value> Call(CallContext&, CallArgs args) const override {
    return renderer_->InvokeMacro(*macro_, scope_, std::move(args));
  }

 private:
  Renderer* renderer_;
  const Stmt* macro_;
  Scope* scope_;
};

}  // namespace

const Value* Scope::Find(absl::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    for (const auto& [k, v] : s->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::Set(absl::string_view name, Value value) {
  for (auto& [k, v] : vars_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(value));
}

absl::Status Renderer::Charge(size_t units) {
  work_ += static_cast<int64_t>(std::min<size_t>(units, size_t{1} << 62));
  if (work_ > options_.max_work) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the template exceeded its work budget (", options_.max_work, " units)"));
  }
  return absl::OkStatus();
}

absl::Status Renderer::CheckSize(size_t bytes) {
  if (bytes > options_.max_output_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a value would exceed the limit of ", options_.max_output_bytes, " bytes"));
  }
  return Charge(bytes / 16);
}

absl::Status Renderer::Append(std::string* out, absl::string_view text) {
  if (out->size() + text.size() > options_.max_output_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the output exceeds the limit of ", options_.max_output_bytes, " bytes"));
  }
  out->append(text.data(), text.size());
  return Charge(text.size() / 16);
}

absl::Status Renderer::Located(const absl::Status& status, size_t offset) const {
  if (status.ok() || status.code() == absl::StatusCode::kFailedPrecondition ||
      status.message().substr(0, 7) == "jinja: ") {
    return status;
  }
  if (status.code() == absl::StatusCode::kUnimplemented) {
    return absl::Status(status.code(), absl::StrCat("jinja: ", status.message(), " (line ",
                                                    map_.Line(offset), ")"));
  }
  return absl::Status(status.code(),
                      absl::StrCat("jinja: line ", map_.Line(offset), ": ", status.message()));
}

absl::Status Renderer::Nest(size_t offset) {
  if (++nesting_ > kMaxRenderNesting) {
    return Located(absl::ResourceExhaustedError(absl::StrCat(
                       "rendering nests deeper than ", kMaxRenderNesting, " levels")),
                   offset);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Renderer::Render(const Body& body) {
  auto root = std::make_shared<Scope>(nullptr);
  std::string out;
  absl::StatusOr<Flow> flow = ExecBody(body, root, &out);
  if (!flow.ok()) return flow.status();
  return out;
}

absl::StatusOr<Flow> Renderer::ExecBody(const Body& body, const ScopePtr& scope, std::string* out) {
  for (const StmtPtr& s : body) {
    absl::StatusOr<Flow> flow = Exec(*s, scope, out);
    if (!flow.ok() || *flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

absl::StatusOr<std::string> Renderer::Capture(const Body& body, const ScopePtr& scope) {
  auto inner = std::make_shared<Scope>(scope);
  std::string out;
  absl::StatusOr<Flow> flow = ExecBody(body, inner, &out);
  if (!flow.ok()) return flow.status();
  return out;
}

absl::StatusOr<Flow> Renderer::Exec(const Stmt& s, const ScopePtr& scope, std::string* out) {
  if (absl::Status st = Nest(s.offset); !st.ok()) return st;
  struct Unnest {
    int* n;
    ~Unnest() { --*n; }
  } unnest{&nesting_};
  absl::Status status;
  switch (s.kind) {
    case StmtKind::kText:
      status = Append(out, s.text);
      break;
    case StmtKind::kOutput: {
      absl::StatusOr<Value> v = Eval(*s.expr, scope);
      if (!v.ok()) return v.status();
      if (v->is_string()) {
        status = Append(out, v->str());
      } else {
        status = Append(out, Str(*v));
      }
      break;
    }
    case StmtKind::kIf: {
      absl::StatusOr<Value> test = Eval(*s.expr, scope);
      if (!test.ok()) return test.status();
      return ExecBody(Truthy(*test) ? s.body : s.else_body, scope, out);
    }
    case StmtKind::kFor:
      return ExecFor(s, scope, out);
    case StmtKind::kSet: {
      absl::StatusOr<Value> v = Eval(*s.expr, scope);
      if (!v.ok()) return v.status();
      status = Assign(*s.target, *v, scope);
      break;
    }
    case StmtKind::kSetBlock:
      status = ExecSetBlock(s, scope);
      break;
    case StmtKind::kMacro:
      DefineMacro(s, scope);
      break;
    case StmtKind::kCallBlock:
      status = ExecCallBlock(s, scope, out);
      break;
    case StmtKind::kFilterBlock:
      status = ExecFilterBlock(s, scope, out);
      break;
    case StmtKind::kWith: {
      auto inner = std::make_shared<Scope>(scope);
      for (const auto& [target, value] : s.assignments) {
        absl::StatusOr<Value> v = Eval(*value, scope);
        if (!v.ok()) return v.status();
        if (absl::Status st = Assign(*target, *v, inner); !st.ok()) return st;
      }
      return ExecBody(s.body, inner, out);
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kGeneration: {
      absl::StatusOr<std::string> text = Capture(s.body, scope);
      if (!text.ok()) return text.status();
      status = Append(out, *text);
      break;
    }
  }
  if (!status.ok()) return Located(status, s.offset);
  return Flow::kNormal;
}

absl::StatusOr<Flow> Renderer::ExecFor(const Stmt& s, const ScopePtr& scope, std::string* out) {
  absl::StatusOr<Value> iterable = Eval(*s.expr, scope);
  if (!iterable.ok()) return iterable.status();
  absl::StatusOr<std::vector<Value>> items = Iterate(*iterable);
  if (!items.ok()) return Located(items.status(), s.expr->offset);
  if (s.cond) {
    std::vector<Value> kept;
    for (const Value& item : *items) {
      auto probe = std::make_shared<Scope>(scope);
      if (absl::Status st = Assign(*s.target, item, probe); !st.ok()) return st;
      absl::StatusOr<Value> keep = Eval(*s.cond, probe);
      if (!keep.ok()) return keep.status();
      if (Truthy(*keep)) kept.push_back(item);
    }
    *items = std::move(kept);
  }
  if (items->empty()) {
    if (s.else_body.empty()) return Flow::kNormal;
    absl::StatusOr<Flow> flow = ExecBody(s.else_body, std::make_shared<Scope>(scope), out);
    if (!flow.ok()) return flow.status();
    return Flow::kNormal;
  }
  auto loop = std::make_shared<LoopObject>(*items);
  const Value loop_value = Value::FromObject(loop);
  absl::Status status;
  for (size_t i = 0; i < items->size(); ++i) {
    if (++iterations_ > options_.max_loop_iterations) {
      status = Located(absl::ResourceExhaustedError(absl::StrCat(
                           "the template ran more than ", options_.max_loop_iterations,
                           " loop iterations")),
                       s.offset);
      break;
    }
    loop->set_index0(i);
    auto iteration = std::make_shared<Scope>(scope);
    iteration->Set("loop", loop_value);
    if (status = Assign(*s.target, (*items)[i], iteration); !status.ok()) break;
    absl::StatusOr<Flow> flow = ExecBody(s.body, iteration, out);
    if (!flow.ok()) {
      status = flow.status();
      break;
    }
    if (*flow == Flow::kBreak) break;
  }
  loop->End();
  if (!status.ok()) return status;
  return Flow::kNormal;
}

absl::Status Renderer::Assign(const Expr& target, const Value& value, const ScopePtr& scope) {
  switch (target.kind) {
    case ExprKind::kName:
      scope->Set(target.name, value);
      return absl::OkStatus();
    case ExprKind::kNsRef: {
      const Value ns = Lookup(target.name, *scope);
      if (!ns.is_namespace()) {
        return Located(absl::InvalidArgumentError("cannot assign attribute on non-namespace object"),
                       target.offset);
      }
      ns.ns()->Set(target.attr, value);
      return absl::OkStatus();
    }
    case ExprKind::kTuple: {
      absl::StatusOr<std::vector<Value>> items = Iterate(value);
      if (!items.ok()) {
        return Located(absl::InvalidArgumentError(absl::StrCat(
                           "cannot unpack non-iterable ", TypeName(value), " object")),
                       target.offset);
      }
      const size_t want = target.args.size();
      if (items->size() != want) {
        return Located(absl::InvalidArgumentError(
                           items->size() < want
                               ? absl::StrCat("not enough values to unpack (expected ", want,
                                              ", got ", items->size(), ")")
                               : absl::StrCat("too many values to unpack (expected ", want, ")")),
                       target.offset);
      }
      for (size_t i = 0; i < want; ++i) {
        if (absl::Status s = Assign(*target.args[i], (*items)[i], scope); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    default:
      return Located(absl::InvalidArgumentError("cannot assign to this expression"), target.offset);
  }
}

absl::Status Renderer::ExecSetBlock(const Stmt& s, const ScopePtr& scope) {
  absl::StatusOr<std::string> text = Capture(s.body, scope);
  if (!text.ok()) return text.status();
  Value value = Value::String(*std::move(text));
  if (s.filter) {
    absl::StatusOr<Value> filtered = EvalFilter(*s.filter, scope, &value);
    if (!filtered.ok()) return filtered.status();
    value = *std::move(filtered);
  }
  return Assign(*s.target, value, scope);
}

absl::Status Renderer::ExecFilterBlock(const Stmt& s, const ScopePtr& scope, std::string* out) {
  absl::StatusOr<std::string> text = Capture(s.body, scope);
  if (!text.ok()) return text.status();
  const Value input = Value::String(*std::move(text));
  absl::StatusOr<Value> filtered = EvalFilter(*s.filter, scope, &input);
  if (!filtered.ok()) return filtered.status();
  return Append(out, Str(*filtered));
}

void Renderer::DefineMacro(const Stmt& s, const ScopePtr& scope) {
  if (macro_scopes_.empty() || macro_scopes_.back() != scope) macro_scopes_.push_back(scope);
  scope->Set(s.name, Value::FromCallable(std::make_shared<MacroValue>(this, &s, scope.get())));
}

absl::Status Renderer::ExecCallBlock(const Stmt& s, const ScopePtr& scope, std::string* out) {
  if (macro_scopes_.empty() || macro_scopes_.back() != scope) macro_scopes_.push_back(scope);
  const Value caller = Value::FromCallable(std::make_shared<MacroValue>(this, &s, scope.get()));
  const Expr& call = *s.expr;
  absl::StatusOr<Value> callee = Eval(*call.args[0], scope);
  if (!callee.ok()) return callee.status();
  absl::StatusOr<CallArgs> args = EvalCallArgs(call.call, scope);
  if (!args.ok()) return args.status();
  args->keyword.emplace_back("caller", caller);
  absl::StatusOr<Value> result = Call(*callee, *std::move(args));
  if (!result.ok()) return Located(result.status(), call.offset);
  return Append(out, Str(*result));
}

absl::StatusOr<Value> Renderer::InvokeMacro(const Stmt& macro, Scope* defining, CallArgs args) {
  if (call_depth_ >= options_.max_call_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("macro calls nest deeper than ", options_.max_call_depth));
  }
  // Every scope is made by make_shared, and macro_scopes_ keeps this one.
  auto scope = std::make_shared<Scope>(defining->shared_from_this());
  const size_t given = args.positional.size();
  const size_t count = macro.params.size();
  bool caller_is_param = false;
  for (size_t i = 0; i < count; ++i) {
    const MacroParam& param = macro.params[i];
    if (param.name == "caller") caller_is_param = true;
    if (i < given) {
      scope->Set(param.name, args.positional[i]);
      continue;
    }
    auto kw = std::find_if(args.keyword.begin(), args.keyword.end(),
                           [&](const auto& p) { return p.first == param.name; });
    if (kw != args.keyword.end()) {
      scope->Set(param.name, std::move(kw->second));
      args.keyword.erase(kw);
    } else if (param.default_value) {
      absl::StatusOr<Value> v = Eval(*param.default_value, scope);
      if (!v.ok()) return v.status();
      scope->Set(param.name, *std::move(v));
    } else {
      scope->Set(param.name,
                 Value::Undefined(absl::StrCat("parameter '", param.name, "' was not provided")));
    }
  }
  if (macro.uses_caller && !caller_is_param) {
    auto kw = std::find_if(args.keyword.begin(), args.keyword.end(),
                           [](const auto& p) { return p.first == "caller"; });
    if (kw != args.keyword.end()) {
      scope->Set("caller", std::move(kw->second));
      args.keyword.erase(kw);
    } else {
      scope->Set("caller", Value::Undefined("No caller defined"));
    }
  }
  if (macro.uses_kwargs) {
    Dict kwargs;
    for (auto& [k, v] : args.keyword) kwargs.Set(Value::String(k), std::move(v));
    scope->Set("kwargs", Value::FromDict(std::move(kwargs)));
  } else if (!args.keyword.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("macro '", macro.name,
                                                   "' takes no keyword argument '",
                                                   args.keyword[0].first, "'"));
  }
  if (macro.uses_varargs) {
    std::vector<Value> extra;
    for (size_t i = count; i < given; ++i) extra.push_back(std::move(args.positional[i]));
    scope->Set("varargs", Value::Tuple(std::move(extra)));
  } else if (given > count) {
    return absl::InvalidArgumentError(absl::StrCat("macro '", macro.name, "' takes not more than ",
                                                   count, " argument(s)"));
  }
  ++call_depth_;
  std::string out;
  absl::StatusOr<Flow> flow = ExecBody(macro.body, scope, &out);
  --call_depth_;
  if (!flow.ok()) return flow.status();
  return Value::String(std::move(out));
}

}  // namespace kiln::models::jinja
