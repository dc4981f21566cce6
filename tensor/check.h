// Always-on checks for broken internal invariants. These are never used for
// input a caller can get wrong: that returns an absl::Status instead.
#ifndef KILN_TENSOR_CHECK_H_
#define KILN_TENSOR_CHECK_H_

#include "absl/strings/string_view.h"

namespace kiln::internal {

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              absl::string_view message);

}  // namespace kiln::internal

// KILN_CHECK(cond, "message"): aborts with file, line, condition and message.
#define KILN_CHECK(cond, message)                                        \
  do {                                                                   \
    if (!(cond)) [[unlikely]] {                                          \
      ::kiln::internal::CheckFailed(__FILE__, __LINE__, #cond, message); \
    }                                                                    \
  } while (false)

// Marks code that a valid program never reaches (the end of a switch over
// every enumerator).
#define KILN_UNREACHABLE(message) \
  ::kiln::internal::CheckFailed(__FILE__, __LINE__, "unreachable", message)

#endif  // KILN_TENSOR_CHECK_H_
