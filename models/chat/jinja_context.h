// What filters, tests, methods and globals may ask of the render that calls
// them: its budgets, other filters and tests (map('upper'), select('odd')),
// calling template values, new namespaces, and the clock.
#ifndef KILN_MODELS_CHAT_JINJA_CONTEXT_H_
#define KILN_MODELS_CHAT_JINJA_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {

class CallContext {
 public:
  virtual ~CallContext() = default;

  // Counts `units` of work (one per item visited, one per 16 bytes built);
  // ResourceExhausted once the render's budget is spent.
  virtual absl::Status Charge(size_t units) = 0;
  // ResourceExhausted when a string or list of `bytes` would pass the
  // render's size limit; charges the work of building it otherwise.
  virtual absl::Status CheckSize(size_t bytes) = 0;
  virtual size_t max_value_bytes() const = 0;
  // The longest range() allowed (jinja2's sandbox allows 100000).
  virtual int64_t max_range() const = 0;

  virtual absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input,
                                            CallArgs args) = 0;
  virtual absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input,
                                         CallArgs args) = 0;
  virtual absl::StatusOr<Value> Call(const Value& callee, CallArgs args) = 0;
  // A namespace owned by this render.
  virtual Namespace* NewNamespace() = 0;

  virtual absl::Time Now() = 0;
  virtual absl::TimeZone time_zone() const = 0;
};

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_CONTEXT_H_
