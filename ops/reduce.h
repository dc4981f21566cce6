// Reductions over axes. An empty axis list reduces every axis. Floating
// inputs accumulate in f32 or wider; integer sums wrap around.
#ifndef KILN_OPS_REDUCE_H_
#define KILN_OPS_REDUCE_H_

#include "absl/types/span.h"
#include "tensor/tensor.h"

namespace kiln {

Tensor sum(const Tensor& x, absl::Span<const int> axes = {}, bool keepdim = false);
// NaN propagates; reducing an empty axis is an error.
Tensor max(const Tensor& x, absl::Span<const int> axes = {}, bool keepdim = false);
// Floating only; the mean of an empty axis is NaN.
Tensor mean(const Tensor& x, absl::Span<const int> axes = {}, bool keepdim = false);

inline Tensor sum(const Tensor& x, int axis, bool keepdim = false) {
  return sum(x, absl::Span<const int>(&axis, 1), keepdim);
}
inline Tensor max(const Tensor& x, int axis, bool keepdim = false) {
  return max(x, absl::Span<const int>(&axis, 1), keepdim);
}
inline Tensor mean(const Tensor& x, int axis, bool keepdim = false) {
  return mean(x, absl::Span<const int>(&axis, 1), keepdim);
}

}  // namespace kiln

#endif  // KILN_OPS_REDUCE_H_
