#include "tensor/check.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::internal {

void CheckFailed(const char* file, int line, const char* condition,
                 absl::string_view message) {
  std::fprintf(stderr, "kiln: internal invariant broken at %s:%d: %s: %.*s\n",
               file, line, condition, static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kiln::internal
