// Python's string formatting, for the few templates that use it: the `%`
// operator (and jinja2's `format` filter, which is `%`), str.format, and
// markupsafe's HTML escaping (the `escape` filter).
#ifndef KILN_MODELS_CHAT_JINJA_FORMAT_H_
#define KILN_MODELS_CHAT_JINJA_FORMAT_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "models/chat/jinja_context.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

// markupsafe.escape: & < > " ' as HTML entities.
std::string HtmlEscape(absl::string_view s);

// `format % args`: args is a tuple (several values), a dict (%(name)s) or a
// single value. Conversions s r a d i u o x X e E f F g G c % with flags,
// width and precision.
absl::StatusOr<Value> PercentFormat(CallContext& ctx, const Value& format, const Value& args);

// str.format: {} {0} {name} fields with attribute/index lookups, !r/!s/!a,
// and format specs ([[fill]align][sign][0][width][,][.precision][type]).
absl::StatusOr<Value> BraceFormat(CallContext& ctx, const Value& format, const CallArgs& args);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_FORMAT_H_
