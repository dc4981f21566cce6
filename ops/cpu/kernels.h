// The CPU reference kernels, one family per file. Each computes one node
// from its (already computed) inputs into a new value with sizes `sizes`.
#ifndef KILN_OPS_CPU_KERNELS_H_
#define KILN_OPS_CPU_KERNELS_H_

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/dim.h"
#include "tensor/node.h"
#include "tensor/storage.h"

namespace kiln::cpu {

using Inputs = absl::Span<const TensorData* const>;

// The scalar definitions of the floating-point elementwise ops (NaN for an
// op that is not one); the optimizer's interpreters use them too.
float UnaryFloat(OpKind op, float x);
float BinaryFloat(OpKind op, float a, float b);

// The dtypes the values are stored in. A 16-bit float that is not a result
// the caller sees is kept in f32 between ops (see CpuExecutor), so these can
// differ from the nodes' dtypes, which still decide how values are computed
// and rounded (casts and sources round to the node's dtype).
struct Types {
  DType out = DType::kF32;
  absl::InlinedVector<DType, 4> in;
};

// constant, iota, random
absl::StatusOr<TensorData> RunSource(const Node& node, const Types& types, const Extents& sizes,
                                     const Bindings& bindings);
// unary, binary, cast, where
absl::StatusOr<TensorData> RunElementwise(const Node& node, const Types& types, Inputs inputs,
                                          const Extents& sizes);
absl::StatusOr<TensorData> RunReduce(const Node& node, const Types& types, const TensorData& input,
                                     const Extents& sizes);
absl::StatusOr<TensorData> RunMatmul(const Node& node, const Types& types, const TensorData& a,
                                     const TensorData& b, const Extents& sizes);
// reshape, permute, slice, expand: views where possible
absl::StatusOr<TensorData> RunView(const Node& node, const Types& types, const TensorData& input,
                                   const Extents& sizes, const Bindings& bindings);
// contiguous, concat, index_select, slice_update; their data inputs are
// stored as types.out. `overwrite_dst`: the first input of slice_update may
// be updated in place.
absl::StatusOr<TensorData> RunMovement(const Node& node, const Types& types, Inputs inputs,
                                       const Extents& sizes, const Bindings& bindings,
                                       bool overwrite_dst);
// dequantize: u8 rows of blocks to values of the node's dtype.
absl::StatusOr<TensorData> RunDequantize(const Node& node, const Types& types, const TensorData& packed,
                                         const Extents& sizes);

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_KERNELS_H_
