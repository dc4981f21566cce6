// A Jinja template engine for chat templates, exact to jinja2 as
// transformers configures it for apply_chat_template:
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]) plus transformers' `tojson` filter (Python's
// json.dumps, no HTML escaping), `raise_exception` and `strftime_now`
// globals and `{% generation %}` block. Values follow Python semantics
// (jinja_value.h).
//
// Supported: text, {{ }}, {% %}, {# #}, `-`/`+` whitespace control, raw
// blocks; if/elif/else, for (else, `if` filtering, unpacking, loop.*),
// set (expression, block, namespace attributes, unpacking), macro (defaults,
// keyword arguments, varargs/kwargs, caller), call blocks, filter blocks,
// with, print, break/continue, generation. Not supported: include, extends,
// block, import, from, autoescape, recursive loops, i18n, `do`.
//
// Errors (absl::Status codes):
//   InvalidArgument      syntax errors ("jinja: line 3, column 7: ..."),
//                        errors while rendering ("jinja: line 3: 'dict
//                        object' has no attribute 'x'"), bad context values;
//   FailedPrecondition   raise_exception(msg): the message, verbatim;
//   Unimplemented        a jinja2 feature kiln lacks ("jinja: filter
//                        'xmlattr' is not supported (line 3)");
//   ResourceExhausted    a limit of TemplateLimits / RenderOptions.
#ifndef KILN_MODELS_CHAT_JINJA_H_
#define KILN_MODELS_CHAT_JINJA_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

// Templates larger than this are refused before lexing.
inline constexpr size_t kMaxTemplateBytes = size_t{4} << 20;

struct RenderOptions {
  // The clock and zone strftime_now() reads (transformers uses local time).
  std::function<absl::Time()> now = [] { return absl::Now(); };
  absl::TimeZone time_zone = absl::LocalTimeZone();

  // Limits, so that no template can hang or exhaust memory. The output and
  // every string or list the template builds stay under max_output_bytes.
  size_t max_output_bytes = size_t{32} << 20;
  // Loop iterations, all loops together.
  int64_t max_loop_iterations = 10'000'000;
  // Work units: one per expression evaluated or item visited, one per 16
  // bytes copied.
  int64_t max_work = 500'000'000;
  // Nested macro calls.
  int max_call_depth = 100;
  // range() lengths; jinja2's sandbox allows 100000.
  int64_t max_range = 100'000;
};

class Template {
 public:
  // Lexes and parses; a syntax error is InvalidArgument naming line and
  // column and what was expected.
  static absl::StatusOr<Template> Parse(absl::string_view source);

  // Renders with `context`'s entries (a dict) as the template's variables;
  // the globals range, dict, namespace, cycler, joiner, raise_exception and
  // strftime_now are always there (context entries shadow them).
  absl::StatusOr<std::string> Render(const Value& context, const RenderOptions& options) const;

  struct Impl;

 private:
  explicit Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_H_
