// Data movement: views (no copy), and the ops that build new layouts.
#ifndef KILN_OPS_MOVEMENT_H_
#define KILN_OPS_MOVEMENT_H_

#include <vector>

#include "absl/types/span.h"
#include "tensor/dim.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace kiln {

// Same elements, new shape; one dim may be -1 (inferred). A view when the
// input's layout allows it, a copy otherwise.
Tensor reshape(const Tensor& x, const Shape& shape);
// Output axis i is input axis perm[i]. A view.
Tensor permute(const Tensor& x, absl::Span<const int> perm);
Tensor transpose(const Tensor& x, int axis0, int axis1);
// Elements start, start + step, ... below stop along `axis`. A view. Negative
// concrete start/stop count from the end; out-of-range bounds are an error
// (OutOfRange), as is step < 1. Symbolic bounds are checked against their
// upper bounds.
Tensor slice(const Tensor& x, int axis, const Dim& start, const Dim& stop, int64_t step = 1);
// Broadcasts size-1 dims (and new leading dims) to `shape`; -1 keeps a dim.
// A view (stride 0).
Tensor expand(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x, int axis);    // drops a size-1 axis
Tensor unsqueeze(const Tensor& x, int axis);  // inserts a size-1 axis

// A dense row-major copy (or the input itself when already dense).
Tensor contiguous(const Tensor& x);
Tensor concat(absl::Span<const Tensor> inputs, int axis);
// Gathers along `axis`: out = x[..., index[j...], ...], with x's axis replaced
// by the index's shape (an embedding lookup is index_select(table, 0, ids)).
// An index outside [0, size) fails at realize with OutOfRange.
Tensor index_select(const Tensor& x, int axis, const Tensor& index);
// `dst` with the block [start, start + src.size(axis)) along `axis` replaced
// by `src` (a KV-cache write). Realized in place when nothing else can see
// dst's old value; otherwise dst is copied first.
Tensor slice_update(const Tensor& dst, const Tensor& src, int axis, const Dim& start);

// The same values on `device` (the tensor itself when it is already there).
// Realizing copies them once; a realized result stays on the device, so
// weights moved once are used in place by every later trace.
Tensor to(const Tensor& x, Device device);

}  // namespace kiln

#endif  // KILN_OPS_MOVEMENT_H_
