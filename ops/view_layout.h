// The layout a view op gives its input's data, on any device: views share
// storage and only change sizes, strides and offset.
#ifndef KILN_OPS_VIEW_LAYOUT_H_
#define KILN_OPS_VIEW_LAYOUT_H_

#include <optional>

#include "absl/status/statusor.h"
#include "tensor/dim.h"
#include "tensor/node.h"
#include "tensor/storage.h"

namespace kiln {

// Strides that let `sizes` view the elements of (old_sizes, old_strides) in
// row-major order, or nullopt when that needs a copy.
std::optional<Extents> ReshapeStrides(const Extents& old_sizes, const Extents& old_strides,
                                      const Extents& sizes);

// The data of view node `view` (reshape, permute, slice, expand) over its
// input's `input`, with concrete output `sizes`. nullopt: a reshape that
// needs a copy. OutOfRange for a slice outside the input under `bindings`.
absl::StatusOr<std::optional<TensorData>> ViewLayout(const Node& view, const TensorData& input,
                                                     const Extents& sizes,
                                                     const Bindings& bindings);

}  // namespace kiln

#endif  // KILN_OPS_VIEW_LAYOUT_H_
