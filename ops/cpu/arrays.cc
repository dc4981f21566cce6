#include "ops/cpu/arrays.h"

namespace kiln::cpu {

ArrayShape ToArrayShape(absl::Span<const int64_t> sizes) {
  return ArrayShape(sizes.begin(), sizes.end());
}

}  // namespace kiln::cpu
