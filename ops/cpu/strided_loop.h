// Iterating an N-d index space over several strided operands at once, in
// row-major order, as runs along the innermost axis. Axes are merged where
// every operand's layout allows it, so dense operands become one long run.
#ifndef KILN_OPS_CPU_STRIDED_LOOP_H_
#define KILN_OPS_CPU_STRIDED_LOOP_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"
#include "tensor/shape.h"

namespace kiln::cpu {

// Strides of an operand of `sizes`/`strides` broadcast (NumPy rules) to
// `target`: missing leading axes and size-1 axes get stride 0.
Extents BroadcastStrides(absl::Span<const int64_t> sizes, absl::Span<const int64_t> strides,
                         absl::Span<const int64_t> target);

// Calls visit(offsets, count, steps) for each run: `offsets[k]` is operand k's
// element offset at the run's start, `steps[k]` its stride along the run.
template <size_t N, typename Visit>
void ForEachRun(absl::Span<const int64_t> sizes, const std::array<Extents, N>& strides,
                Visit&& visit) {
  // Merge axes: axis i folds into the next inner kept axis when, for every
  // operand, stepping i equals stepping that axis through its whole extent.
  Extents dims;
  std::array<Extents, N> st;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 0) return;
    if (sizes[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; merge && k < N; ++k) {
      merge = strides[k][i] == st[k].back() * dims.back();
    }
    if (merge) {
      dims.back() *= sizes[i];
    } else {
      dims.push_back(sizes[i]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][i]);
    }
  }
  // dims/st are innermost first from here on.
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> steps{};
  if (dims.empty()) {
    visit(offsets, int64_t{1}, steps);
    return;
  }
  for (size_t k = 0; k < N; ++k) steps[k] = st[k][0];
  const int outer = static_cast<int>(dims.size()) - 1;
  Extents index(outer + 1, 0);
  while (true) {
    visit(offsets, dims[0], steps);
    int axis = 1;
    for (; axis <= outer; ++axis) {
      for (size_t k = 0; k < N; ++k) offsets[k] += st[k][axis];
      if (++index[axis] < dims[axis]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= st[k][axis] * dims[axis];
      index[axis] = 0;
    }
    if (axis > outer) return;
  }
}

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_STRIDED_LOOP_H_
