// Shape and dtype rules of the ops: pure functions from input metadata to
// output metadata or a Status naming the op and the shapes.
#ifndef KILN_OPS_RULES_H_
#define KILN_OPS_RULES_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "tensor/op.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace kiln::rules {

// dtype classes an op accepts.
absl::Status RequireSameDType(absl::string_view op, const Tensor& a, const Tensor& b);
absl::Status RequireFloating(absl::string_view op, const Tensor& t);
absl::Status RequireNumeric(absl::string_view op, const Tensor& t);  // anything but bool
absl::Status RequireIndex(absl::string_view op, const Tensor& t);    // i32 or i64

// NumPy broadcasting, decided from structure: dims broadcast when equal or
// when one of them is the concrete size 1.
absl::StatusOr<Shape> BroadcastShapes(absl::string_view op, const Shape& a, const Shape& b);

// Normalized, sorted, unique axes; an empty `axes` means every axis.
absl::StatusOr<ReduceAttrs> ReduceAxes(absl::string_view op, const Shape& in,
                                       absl::Span<const int> axes, bool keepdim);
Shape ReducedShape(const Shape& in, const ReduceAttrs& attrs);

// [..., M, K] x [..., K, N] -> [broadcast(...), M, N]; both of rank >= 2.
absl::StatusOr<Shape> MatmulShape(const Shape& a, const Shape& b);

// Resolves at most one -1 in `requested`, and checks the element count is
// unchanged (symbolic dims must match as factors).
absl::StatusOr<Shape> ReshapeShape(const Shape& in, const Shape& requested);

absl::StatusOr<PermuteAttrs> Permutation(absl::string_view op, int rank,
                                         absl::Span<const int> perm);
Shape PermutedShape(const Shape& in, const PermuteAttrs& attrs);

// Broadcasts `in` to `target` (rank >= in's; -1 keeps the input's dim).
absl::StatusOr<Shape> ExpandShape(const Shape& in, const Shape& target);

// Inputs of equal rank, equal except along `axis`.
absl::StatusOr<Shape> ConcatShape(absl::Span<const Tensor> inputs, int axis);

}  // namespace kiln::rules

#endif  // KILN_OPS_RULES_H_
