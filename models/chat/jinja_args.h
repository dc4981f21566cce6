// Binds a builtin's arguments the way Python binds a signature: positional
// first, then keywords by name; too many, unknown or repeated ones are
// errors. Also the coercions builtins need (an int argument, a str one).
#ifndef KILN_MODELS_CHAT_JINJA_ARGS_H_
#define KILN_MODELS_CHAT_JINJA_ARGS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

class ArgBinder {
 public:
  // `what` names the callee in messages ("filter 'join'").
  ArgBinder(absl::string_view what, CallArgs& args, std::initializer_list<absl::string_view> names);

  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  bool has(size_t i) const { return i < bound_.size() && bound_[i] != nullptr; }
  // The argument, or `fallback` when not given.
  const Value& get(size_t i, const Value& fallback) const { return has(i) ? *bound_[i] : fallback; }
  const Value& operator[](size_t i) const { return *bound_[i]; }

  // Required arguments: an error naming the first one missing.
  absl::Status Require(size_t count) const;

 private:
  std::string what_;
  std::vector<absl::string_view> names_;
  std::vector<const Value*> bound_;
  absl::Status status_;
};

// `name` of `what` as an int (bools count, as in Python).
absl::StatusOr<int64_t> IntArg(const Value& v, absl::string_view what);
// Python's `str` check: TypeError naming the type otherwise.
absl::StatusOr<std::string> StrArg(const Value& v, absl::string_view what);
// No arguments at all.
absl::Status NoArgs(const CallArgs& args, absl::string_view what);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_ARGS_H_
