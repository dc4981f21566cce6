// The CPU reference kernels, one family per file. Each computes one node
// from its (already computed) inputs into a new value with sizes `sizes`.
#ifndef KILN_OPS_CPU_KERNELS_H_
#define KILN_OPS_CPU_KERNELS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/dim.h"
#include "tensor/node.h"
#include "tensor/storage.h"

namespace kiln::cpu {

using Inputs = absl::Span<const TensorData* const>;

// constant, iota, random
absl::StatusOr<TensorData> RunSource(const Node& node, const Extents& sizes,
                                     const Bindings& bindings);
// unary, binary, cast, where
absl::StatusOr<TensorData> RunElementwise(const Node& node, Inputs inputs,
                                          const Extents& sizes);
absl::StatusOr<TensorData> RunReduce(const Node& node, const TensorData& input,
                                     const Extents& sizes);
absl::StatusOr<TensorData> RunMatmul(const Node& node, const TensorData& a,
                                     const TensorData& b, const Extents& sizes);
// reshape, permute, slice, expand: views where possible
absl::StatusOr<TensorData> RunView(const Node& node, const TensorData& input,
                                   const Extents& sizes, const Bindings& bindings);
// contiguous, concat, index_select, slice_update. `overwrite_dst`: the first
// input of slice_update may be updated in place.
absl::StatusOr<TensorData> RunMovement(const Node& node, Inputs inputs, const Extents& sizes,
                                       const Bindings& bindings, bool overwrite_dst);

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_KERNELS_H_
