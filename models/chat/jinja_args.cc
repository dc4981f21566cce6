#include "models/chat/jinja_args.h"

#include "absl/strings/str_cat.h"

namespace kiln::models::jinja {

ArgBinder::ArgBinder(absl::string_view what, CallArgs& args,
                     std::initializer_list<absl::string_view> names)
    : what_(what), names_(names), bound_(names.size(), nullptr) {
  if (args.positional.size() > names_.size()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(what_, " takes at most ", names_.size(),
                                                      " arguments (", args.positional.size(),
                                                      " given)"));
    return;
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, " got an unexpected keyword argument '", key, "'"));
      return;
    }
    if (bound_[i] != nullptr) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, " got multiple values for argument '", key, "'"));
      return;
    }
    bound_[i] = &value;
  }
}

absl::Status ArgBinder::Require(size_t count) const {
  for (size_t i = 0; i < count && i < names_.size(); ++i) {
    if (bound_[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(what_, " missing required argument '", names_[i], "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> IntArg(const Value& v, absl::string_view what) {
  if (v.is_integral()) return v.int_value();
  if (v.is_undefined()) return absl::InvalidArgumentError(v.undefined_message());
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": '", TypeName(v), "' object cannot be interpreted as an integer"));
}

absl::StatusOr<std::string> StrArg(const Value& v, absl::string_view what) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) return absl::InvalidArgumentError(v.undefined_message());
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be str, not ", TypeName(v)));
}

absl::Status NoArgs(const CallArgs& args, absl::string_view what) {
  if (args.positional.empty() && args.keyword.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " takes no arguments"));
}

}  // namespace kiln::models::jinja
