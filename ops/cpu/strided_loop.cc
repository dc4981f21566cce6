#include "ops/cpu/strided_loop.h"

namespace kiln::cpu {

Extents BroadcastStrides(absl::Span<const int64_t> sizes, absl::Span<const int64_t> strides,
                         absl::Span<const int64_t> target) {
  Extents out(target.size(), 0);
  const size_t lead = target.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    out[lead + i] = sizes[i] == 1 ? 0 : strides[i];
  }
  return out;
}

}  // namespace kiln::cpu
