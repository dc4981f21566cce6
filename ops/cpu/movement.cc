// Data-movement reference kernels: views (no copy where the layout allows
// it), contiguous, concat, index_select and slice_update.
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"
#include "ops/view_layout.h"

namespace kiln::cpu {
namespace {

absl::StatusOr<TensorData> DenseCopy(const TensorData& in, DType dtype) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, in.sizes);
  if (!out.ok()) return out.status();
  CopyView(in, *out, DTypeSize(dtype));
  return out;
}

absl::StatusOr<TensorData> IndexSelect(const Node& node, const Types& types, const TensorData& x,
                                       const TensorData& index, const Extents& sizes) {
  const int axis = std::get<AxisAttrs>(node.attrs).axis;
  const DType dtype = types.out;
  const xt::xarray<int64_t> ids = Load<int64_t>(index, types.in[1]);
  const int64_t limit = x.sizes[axis];
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids.data()[j] < 0 || ids.data()[j] >= limit) {
      return absl::OutOfRangeError(absl::StrCat(
          "index_select: index ", ids.data()[j], " is out of range [0, ", limit, ") for axis ",
          axis, " of ", DTypeName(node.dtype), node.inputs[0]->shape.ToString()));
    }
  }
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, sizes);
  if (!out.ok()) return out.status();
  // Per index: the slice of x at that position, into its place in out.
  TensorData src = x;
  src.sizes.erase(src.sizes.begin() + axis);
  src.strides.erase(src.strides.begin() + axis);
  const int index_rank = static_cast<int>(index.sizes.size());
  TensorData dst = *out;
  dst.sizes = src.sizes;
  dst.strides.erase(dst.strides.begin() + axis, dst.strides.begin() + axis + index_rank);
  int64_t block = 1;
  for (size_t i = axis + 1; i < x.sizes.size(); ++i) block *= x.sizes[i];
  for (size_t j = 0; j < ids.size(); ++j) {
    src.offset = x.offset + ids.data()[j] * x.strides[axis];
    dst.offset = static_cast<int64_t>(j) * block;
    CopyView(src, dst, DTypeSize(dtype));
  }
  return out;
}

absl::StatusOr<TensorData> SliceUpdate(const Node& node, DType dtype, const TensorData& dst,
                                       const TensorData& src, const Bindings& bindings,
                                       bool overwrite_dst) {
  const auto& attrs = std::get<SliceUpdateAttrs>(node.attrs);
  absl::StatusOr<int64_t> start = attrs.start.Evaluate(bindings);
  if (!start.ok()) return start.status();
  if (*start < 0 || *start + src.sizes[attrs.axis] > dst.sizes[attrs.axis]) {
    return absl::OutOfRangeError(absl::StrCat(
        "slice_update: block [", *start, ", ", *start + src.sizes[attrs.axis], ") is outside axis ",
        attrs.axis, " of size ", dst.sizes[attrs.axis]));
  }
  TensorData out = dst;
  if (!overwrite_dst) {
    absl::StatusOr<TensorData> copy = DenseCopy(dst, dtype);
    if (!copy.ok()) return copy.status();
    out = *std::move(copy);
  }
  TensorData block = out;
  block.sizes = src.sizes;
  block.offset += *start * out.strides[attrs.axis];
  CopyView(src, block, DTypeSize(dtype));
  return out;
}

}  // namespace

absl::StatusOr<TensorData> RunView(const Node& node, const Types& types, const TensorData& input,
                                   const Extents& sizes, const Bindings& bindings) {
  absl::StatusOr<std::optional<TensorData>> view = ViewLayout(node, input, sizes, bindings);
  if (!view.ok()) return view.status();
  if (view->has_value()) return **view;
  // A reshape the input's layout cannot express: view a dense copy instead.
  absl::StatusOr<TensorData> dense = DenseCopy(input, types.in[0]);
  if (!dense.ok()) return dense.status();
  dense->sizes = sizes;
  dense->strides = ContiguousStrides(sizes);
  return dense;
}

absl::StatusOr<TensorData> RunMovement(const Node& node, const Types& types, Inputs inputs,
                                       const Extents& sizes, const Bindings& bindings,
                                       bool overwrite_dst) {
  switch (node.op) {
    case OpKind::kContiguous:
      if (inputs[0]->is_contiguous()) return *inputs[0];
      return DenseCopy(*inputs[0], types.out);
    case OpKind::kConcat: {
      const int axis = std::get<AxisAttrs>(node.attrs).axis;
      absl::StatusOr<TensorData> out = AllocateHostTensor(types.out, sizes);
      if (!out.ok()) return out.status();
      TensorData part = *out;
      for (const TensorData* in : inputs) {
        part.sizes = in->sizes;
        CopyView(*in, part, DTypeSize(types.out));
        part.offset += in->sizes[axis] * out->strides[axis];
      }
      return out;
    }
    case OpKind::kIndexSelect:
      return IndexSelect(node, types, *inputs[0], *inputs[1], sizes);
    case OpKind::kSliceUpdate:
      return SliceUpdate(node, types.out, *inputs[0], *inputs[1], bindings, overwrite_dst);
    default:
      return absl::InternalError(absl::StrCat("RunMovement: unexpected op ", OpName(node.op)));
  }
}

}  // namespace kiln::cpu
