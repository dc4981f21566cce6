// The evaluator: executes a parsed template against a context. Statements
// are in jinja_render.cc, expressions in jinja_eval.cc. Internal.
//
// Scoping follows jinja2: a for loop's body (each iteration), a macro call,
// a block set, a filter block, a with block and a generation block each get
// a new scope; `if` does not. Name lookup walks the scopes outward, then the
// context, then the globals. A macro sees the scope it was defined in, as it
// is when the macro runs.
#ifndef KILN_MODELS_CHAT_JINJA_RENDERER_H_
#define KILN_MODELS_CHAT_JINJA_RENDERER_H_

#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja.h"
#include "models/chat/jinja_ast.h"
#include "models/chat/jinja_context.h"
#include "models/chat/jinja_lexer.h"

namespace kiln::models::jinja {

class Scope : public std::enable_shared_from_this<Scope> {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* Find(absl::string_view name) const;
  void Set(absl::string_view name, Value value);

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Renderer final : public CallContext {
 public:
  Renderer(const SourceMap& map, const Dict& context, const RenderOptions& options)
      : map_(map), context_(context), options_(options) {}

  absl::StatusOr<std::string> Render(const Body& body);

  // Runs a macro (or a call block's caller) defined in `defining`.
  absl::StatusOr<Value> InvokeMacro(const Stmt& macro, Scope* defining, CallArgs args);

  // CallContext
  absl::Status Charge(size_t units) override;
  absl::Status CheckSize(size_t bytes) override;
  size_t max_value_bytes() const override { return options_.max_output_bytes; }
  int64_t max_range() const override { return options_.max_range; }
  absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input, CallArgs args) override;
  absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input, CallArgs args) override;
  absl::StatusOr<Value> Call(const Value& callee, CallArgs args) override;
  Namespace* NewNamespace() override;
  absl::Time Now() override { return options_.now ? options_.now() : absl::Now(); }
  absl::TimeZone time_zone() const override { return options_.time_zone; }

 private:
  // Statements.
  absl::StatusOr<Flow> ExecBody(const Body& body, const ScopePtr& scope, std::string* out);
  absl::StatusOr<Flow> Exec(const Stmt& s, const ScopePtr& scope, std::string* out);
  absl::StatusOr<Flow> ExecFor(const Stmt& s, const ScopePtr& scope, std::string* out);
  absl::Status ExecSetBlock(const Stmt& s, const ScopePtr& scope);
  absl::Status ExecCallBlock(const Stmt& s, const ScopePtr& scope, std::string* out);
  absl::Status ExecFilterBlock(const Stmt& s, const ScopePtr& scope, std::string* out);
  void DefineMacro(const Stmt& s, const ScopePtr& scope);
  absl::Status Assign(const Expr& target, const Value& value, const ScopePtr& scope);
  absl::Status Append(std::string* out, absl::string_view text);
  // Renders `body` in a new scope under `scope` into a string.
  absl::StatusOr<std::string> Capture(const Body& body, const ScopePtr& scope);

  // Expressions.
  absl::StatusOr<Value> Eval(const Expr& e, const ScopePtr& scope);
  absl::StatusOr<Value> EvalInner(const Expr& e, const ScopePtr& scope);
  absl::StatusOr<CallArgs> EvalCallArgs(const CallExprs& call, const ScopePtr& scope);
  absl::StatusOr<Value> EvalCompare(const Expr& e, const ScopePtr& scope);
  absl::StatusOr<Value> EvalGetItem(const Expr& e, const ScopePtr& scope);
  absl::StatusOr<Value> EvalCall(const Expr& e, const ScopePtr& scope);
  // A filter chain; a null innermost operand stands for `input`.
  absl::StatusOr<Value> EvalFilter(const Expr& e, const ScopePtr& scope, const Value* input);
  absl::StatusOr<Value> EvalCollection(const Expr& e, const ScopePtr& scope);
  Value Lookup(absl::string_view name, const Scope& scope) const;

  // "jinja: line N: " before a builtin's message; raise_exception's
  // FailedPrecondition and already located messages pass as they are.
  absl::Status Located(const absl::Status& status, size_t offset) const;
  absl::Status Nest(size_t offset);  // one more level of evaluation, or an error

  const SourceMap& map_;
  const Dict& context_;
  const RenderOptions& options_;
  int64_t work_ = 0;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  int nesting_ = 0;
  // Owned here so that values only point at them: no cycles, no deep
  // destructor recursion. Scopes that define macros stay alive for the
  // macros to run in.
  std::vector<std::unique_ptr<Namespace>> namespaces_;
  std::vector<ScopePtr> macro_scopes_;
};

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_RENDERER_H_
