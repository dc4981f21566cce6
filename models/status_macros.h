// Early return for the loaders' many StatusOr reads.
#ifndef KILN_MODELS_STATUS_MACROS_H_
#define KILN_MODELS_STATUS_MACROS_H_

#include <utility>

// lhs = the value of `expr` (an absl::StatusOr), or return its status.
#define KILN_ASSIGN(lhs, expr)                          \
  do {                                                  \
    auto _kiln_value = (expr);                          \
    if (!_kiln_value.ok()) return _kiln_value.status(); \
    lhs = *std::move(_kiln_value);                      \
  } while (false)

#endif  // KILN_MODELS_STATUS_MACROS_H_
