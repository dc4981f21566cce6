// Python's json.dumps over template values, for the `tojson` filter that
// transformers installs: json.dumps(x, ensure_ascii, indent, separators,
// sort_keys) with Python's exact spelling of floats, escapes and layout.
#ifndef KILN_MODELS_CHAT_JINJA_JSON_H_
#define KILN_MODELS_CHAT_JINJA_JSON_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

struct JsonDumpsOptions {
  bool ensure_ascii = false;
  // The per-level indent; nullopt puts everything on one line.
  std::optional<std::string> indent;
  // Python's defaults are ", " and ": ", and "," when an indent is given.
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// InvalidArgument (Python's TypeError) for values JSON cannot hold
// (Undefined, namespaces, callables, generators, non-scalar keys);
// ResourceExhausted once the text would pass `max_bytes`.
absl::StatusOr<std::string> JsonDumps(const Value& v, const JsonDumpsOptions& options,
                                      size_t max_bytes);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_JSON_H_
