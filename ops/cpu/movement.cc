// Data-movement reference kernels: views (no copy where the layout allows
// it), contiguous, concat, index_select and slice_update.
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"

namespace kiln::cpu {
namespace {

// Strides that let `sizes` view the same elements as (old_sizes, old_strides),
// or nullopt when the old layout cannot be walked that way without a copy.
std::optional<Extents> ReshapeStrides(const Extents& old_sizes, const Extents& old_strides,
                                      const Extents& sizes) {
  if (NumElements(sizes) == 0) return ContiguousStrides(sizes);
  Extents od, os;
  for (size_t i = 0; i < old_sizes.size(); ++i) {
    if (old_sizes[i] == 1) continue;
    od.push_back(old_sizes[i]);
    os.push_back(old_strides[i]);
  }
  Extents strides(sizes.size(), 1);
  size_t oi = 0, ni = 0;
  while (ni < sizes.size() && oi < od.size()) {
    if (sizes[ni] == 1) {
      ++ni;
      continue;
    }
    // Grow a chunk of old and new dims until their element counts agree.
    size_t oj = oi + 1, nj = ni + 1;
    int64_t np = sizes[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= sizes.size()) return std::nullopt;
        np *= sizes[nj++];
      } else {
        if (oj >= od.size()) return std::nullopt;
        op *= od[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    }
    strides[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) strides[k - 1] = strides[k] * sizes[k];
    ni = nj;
    oi = oj;
  }
  return strides;
}

absl::StatusOr<TensorData> DenseCopy(const TensorData& in, DType dtype) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, in.sizes);
  if (!out.ok()) return out.status();
  CopyView(in, *out, DTypeSize(dtype));
  return out;
}

absl::StatusOr<TensorData> Reshape(const Node& node, const TensorData& in, const Extents& sizes) {
  TensorData out = in;
  std::optional<Extents> strides = ReshapeStrides(in.sizes, in.strides, sizes);
  if (!strides) {
    absl::StatusOr<TensorData> dense = DenseCopy(in, node.dtype);
    if (!dense.ok()) return dense.status();
    out = *std::move(dense);
    strides = ContiguousStrides(sizes);
  }
  out.sizes = sizes;
  out.strides = *strides;
  return out;
}

absl::StatusOr<TensorData> IndexSelect(const Node& node, const TensorData& x,
                                       const TensorData& index, const Extents& sizes) {
  const int axis = std::get<AxisAttrs>(node.attrs).axis;
  const xt::xarray<int64_t> ids = Load<int64_t>(index, node.inputs[1]->dtype);
  const int64_t limit = x.sizes[axis];
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids.data()[j] < 0 || ids.data()[j] >= limit) {
      return absl::OutOfRangeError(absl::StrCat(
          "index_select: index ", ids.data()[j], " is out of range [0, ", limit, ") for axis ",
          axis, " of ", DTypeName(node.dtype), node.inputs[0]->shape.ToString()));
    }
  }
  absl::StatusOr<TensorData> out = AllocateHostTensor(node.dtype, sizes);
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
    CopyView(src, dst, DTypeSize(node.dtype));
  }
  return out;
}

absl::StatusOr<TensorData> SliceUpdate(const Node& node, const TensorData& dst,
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
    absl::StatusOr<TensorData> copy = DenseCopy(dst, node.dtype);
    if (!copy.ok()) return copy.status();
    out = *std::move(copy);
  }
  TensorData block = out;
  block.sizes = src.sizes;
  block.offset += *start * out.strides[attrs.axis];
  CopyView(src, block, DTypeSize(node.dtype));
  return out;
}

}  // namespace

absl::StatusOr<TensorData> RunView(const Node& node, const TensorData& input,
                                   const Extents& sizes, const Bindings& bindings) {
  TensorData out = input;
  switch (node.op) {
    case OpKind::kReshape:
      return Reshape(node, input, sizes);
    case OpKind::kPermute: {
      const auto& perm = std::get<PermuteAttrs>(node.attrs).perm;
      for (size_t i = 0; i < perm.size(); ++i) out.strides[i] = input.strides[perm[i]];
      break;
    }
    case OpKind::kSlice: {
      const auto& ranges = std::get<SliceAttrs>(node.attrs).ranges;
      for (size_t i = 0; i < ranges.size(); ++i) {
        absl::StatusOr<int64_t> start = ranges[i].start.Evaluate(bindings);
        if (!start.ok()) return start.status();
        const int64_t last = *start + (sizes[i] - 1) * ranges[i].step;
        if (sizes[i] > 0 && (*start < 0 || last >= input.sizes[i])) {
          return absl::OutOfRangeError(absl::StrCat("slice: elements ", *start, " to ", last,
                                                    " are outside axis ", i, " of size ",
                                                    input.sizes[i]));
        }
        out.offset += *start * input.strides[i];
        out.strides[i] = input.strides[i] * ranges[i].step;
      }
      break;
    }
    case OpKind::kExpand: {
      const size_t lead = sizes.size() - input.sizes.size();
      out.strides.assign(sizes.size(), 0);
      for (size_t i = 0; i < input.sizes.size(); ++i) {
        out.strides[lead + i] = input.sizes[i] == sizes[lead + i] ? input.strides[i] : 0;
      }
      break;
    }
    default:
      return absl::InternalError(absl::StrCat("RunView: unexpected op ", OpName(node.op)));
  }
  out.sizes = sizes;
  return out;
}

absl::StatusOr<TensorData> RunMovement(const Node& node, Inputs inputs, const Extents& sizes,
                                       const Bindings& bindings, bool overwrite_dst) {
  switch (node.op) {
    case OpKind::kContiguous:
      if (inputs[0]->is_contiguous()) return *inputs[0];
      return DenseCopy(*inputs[0], node.dtype);
    case OpKind::kConcat: {
      const int axis = std::get<AxisAttrs>(node.attrs).axis;
      absl::StatusOr<TensorData> out = AllocateHostTensor(node.dtype, sizes);
      if (!out.ok()) return out.status();
      TensorData part = *out;
      for (const TensorData* in : inputs) {
        part.sizes = in->sizes;
        CopyView(*in, part, DTypeSize(node.dtype));
        part.offset += in->sizes[axis] * out->strides[axis];
      }
      return out;
    }
    case OpKind::kIndexSelect:
      return IndexSelect(node, *inputs[0], *inputs[1], sizes);
    case OpKind::kSliceUpdate:
      return SliceUpdate(node, *inputs[0], *inputs[1], bindings, overwrite_dst);
    default:
      return absl::InternalError(absl::StrCat("RunMovement: unexpected op ", OpName(node.op)));
  }
}

}  // namespace kiln::cpu
