// What the evaluator delegates: Python's operators, jinja2's sandboxed
// attribute and item lookup, iteration, and the tables of filters, tests,
// methods and globals. Errors are plain messages (Python's wording where it
// helps); the renderer adds the line.
#ifndef KILN_MODELS_CHAT_JINJA_BUILTINS_H_
#define KILN_MODELS_CHAT_JINJA_BUILTINS_H_

#include <optional>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja_ast.h"
#include "models/chat/jinja_context.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

// Containers nesting deeper than this are refused (ResourceExhausted).
inline constexpr int kMaxValueDepth = 256;

// --- jinja_ops.cc: operators, lookup, iteration ---

// The items a for loop visits: a list's items, a dict's keys, a string's
// characters, nothing for Undefined; marks an iterator consumed.
absl::StatusOr<std::vector<Value>> Iterate(const Value& v);
// Python's `item in container`.
absl::StatusOr<bool> Contains(const Value& container, const Value& item);
absl::StatusOr<Value> BinaryOperation(CallContext& ctx, BinaryOp op, const Value& a,
                                      const Value& b);
absl::StatusOr<Value> Negate(const Value& v);
// `obj.name` and `obj[key]` with ImmutableSandboxedEnvironment's rules:
// attribute first then item for `.`, item first then attribute for `[]`,
// Undefined when neither exists, an "unsafe" Undefined for methods that
// would mutate.
Value GetAttr(const Value& obj, absl::string_view name);
Value GetItem(const Value& obj, const Value& key);
// obj[start:stop:step]; any of them may be None. Undefined where Python
// raises TypeError (jinja2 turns those into Undefined).
absl::StatusOr<Value> GetSlice(CallContext& ctx, const Value& obj, const Value& start,
                               const Value& stop, const Value& step);
// Python's len(); nullopt for values without one.
std::optional<int64_t> Length(const Value& v);
// jinja2's message for a missing attribute or item.
Value MissingAttribute(const Value& obj, const Value& name);

// --- jinja_methods.cc: methods of str, dict and list ---

// Whether `obj.name` is a method of obj's Python type; sets *mutating for
// the ones the immutable sandbox blocks (list.append, dict.pop, ...).
bool IsMethod(const Value& obj, absl::string_view name, bool* mutating);
Value BoundMethod(const Value& obj, absl::string_view name);
absl::StatusOr<Value> CallMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                 CallArgs args);

// --- jinja_filters*.cc, jinja_tests.cc, jinja_globals.cc ---

using FilterFn = absl::StatusOr<Value> (*)(CallContext& ctx, const Value& input, CallArgs& args);
using TestFn = absl::StatusOr<bool> (*)(CallContext& ctx, const Value& input, CallArgs& args);

// Null for names kiln does not have. IsKnownJinjaFilter/Test tell jinja2's
// other names (Unimplemented) from typos (InvalidArgument).
FilterFn FindFilter(absl::string_view name);
TestFn FindTest(absl::string_view name);
bool IsKnownJinjaFilter(absl::string_view name);
bool IsKnownJinjaTest(absl::string_view name);
// range, dict, namespace, cycler, joiner, raise_exception, strftime_now.
std::optional<Value> FindGlobal(absl::string_view name);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_BUILTINS_H_
