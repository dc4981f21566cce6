// Python's str methods for templates (`message.content.split('</think>')`),
// counting by code point as Python does.
#ifndef KILN_MODELS_CHAT_JINJA_STR_METHODS_H_
#define KILN_MODELS_CHAT_JINJA_STR_METHODS_H_

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "models/chat/jinja_context.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

// Whether Python's str has a method of this name (kiln implements most;
// the rest are Unimplemented when called).
bool IsStrMethod(absl::string_view name);
absl::StatusOr<Value> CallStrMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                    CallArgs& args);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_STR_METHODS_H_
