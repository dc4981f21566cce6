#include "ops/movement.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "ops/record.h"
#include "ops/rules.h"

namespace kiln {

using ops_internal::CheckInputs;
using ops_internal::Describe;
using ops_internal::Record;

Tensor reshape(const Tensor& x, const Shape& shape) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("reshape", {&x}));
  absl::StatusOr<Shape> out = rules::ReshapeShape(x.shape(), shape);
  if (!out.ok()) return Tensor::Error(out.status());
  if (*out == x.shape()) return x;
  return Record(OpKind::kReshape, NoAttrs{}, {x}, x.dtype(), *std::move(out));
}

Tensor permute(const Tensor& x, absl::Span<const int> perm) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("permute", {&x}));
  absl::StatusOr<PermuteAttrs> attrs = rules::Permutation("permute", x.rank(), perm);
  if (!attrs.ok()) return Tensor::Error(attrs.status());
  bool identity = true;
  for (int i = 0; i < x.rank(); ++i) identity &= attrs->perm[i] == i;
  if (identity) return x;
  Shape shape = rules::PermutedShape(x.shape(), *attrs);
  return Record(OpKind::kPermute, *std::move(attrs), {x}, x.dtype(), std::move(shape));
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("transpose", {&x}));
  absl::StatusOr<int> a = NormalizeAxis(axis0, x.rank(), "transpose");
  if (!a.ok()) return Tensor::Error(a.status());
  absl::StatusOr<int> b = NormalizeAxis(axis1, x.rank(), "transpose");
  if (!b.ok()) return Tensor::Error(b.status());
  std::vector<int> perm(x.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[*a], perm[*b]);
  return permute(x, perm);
}

namespace {

// Resolves a slice bound: negative concrete values count from the end.
absl::StatusOr<Dim> SliceBound(const Dim& bound, const Dim& size, absl::string_view which,
                               const Tensor& x, int axis) {
  Dim resolved = bound;
  if (bound.is_concrete() && bound.value() < 0) {
    if (!size.is_concrete()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice: negative ", which, " ", bound.value(), " on the symbolic axis ", axis, " of ",
          Describe(x), "; use an explicit bound"));
    }
    resolved = Dim(size.value() + bound.value());
  }
  if (absl::Status s = resolved.Validate(absl::StrCat("slice ", which)); !s.ok()) {
    return absl::OutOfRangeError(absl::StrCat("slice: ", which, " ", bound.ToString(),
                                              " is out of range for axis ", axis, " of ",
                                              Describe(x), " (", s.message(), ")"));
  }
  // Every binding of the symbols must keep the bound inside the axis.
  if ((size - resolved).min_value() < 0) {
    return absl::OutOfRangeError(absl::StrCat("slice: ", which, " ", bound.ToString(),
                                              " is out of range for axis ", axis, " of ",
                                              Describe(x), " (size ", size.ToString(), ")"));
  }
  return resolved;
}

}  // namespace

Tensor slice(const Tensor& x, int axis, const Dim& start, const Dim& stop, int64_t step) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("slice", {&x}));
  absl::StatusOr<int> a = NormalizeAxis(axis, x.rank(), "slice");
  if (!a.ok()) return Tensor::Error(a.status());
  if (step < 1) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("slice: step must be >= 1, got ", step)));
  }
  const Dim& size = x.shape()[*a];
  absl::StatusOr<Dim> lo = SliceBound(start, size, "start", x, *a);
  if (!lo.ok()) return Tensor::Error(lo.status());
  absl::StatusOr<Dim> hi = SliceBound(stop, size, "stop", x, *a);
  if (!hi.ok()) return Tensor::Error(hi.status());
  const Dim extent = *hi - *lo;
  if (extent.min_value() < 0) {
    return Tensor::Error(absl::OutOfRangeError(absl::StrCat(
        "slice: stop ", hi->ToString(), " can be below start ", lo->ToString(), " on axis ",
        *a, " of ", Describe(x))));
  }
  Dim length;
  if (step == 1) {
    length = extent;
  } else if (extent.is_concrete()) {
    length = Dim((extent.value() + step - 1) / step);
  } else {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "slice: a step of ", step, " needs a concrete extent, got ", extent.ToString())));
  }
  Shape shape = x.shape();
  shape[*a] = length;
  if (shape == x.shape() && *lo == Dim(0)) return x;
  SliceAttrs attrs;
  for (int i = 0; i < x.rank(); ++i) {
    attrs.ranges.push_back(i == *a ? SliceAttrs::Range{*lo, step} : SliceAttrs::Range{0, 1});
  }
  return Record(OpKind::kSlice, std::move(attrs), {x}, x.dtype(), std::move(shape));
}

Tensor expand(const Tensor& x, const Shape& shape) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("expand", {&x}));
  absl::StatusOr<Shape> out = rules::ExpandShape(x.shape(), shape);
  if (!out.ok()) return Tensor::Error(out.status());
  if (*out == x.shape()) return x;
  return Record(OpKind::kExpand, NoAttrs{}, {x}, x.dtype(), *std::move(out));
}

Tensor squeeze(const Tensor& x, int axis) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("squeeze", {&x}));
  absl::StatusOr<int> a = NormalizeAxis(axis, x.rank(), "squeeze");
  if (!a.ok()) return Tensor::Error(a.status());
  if (!(x.shape()[*a] == Dim(1))) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "squeeze: axis ", axis, " of ", Describe(x), " has size ", x.shape()[*a].ToString(),
        ", not 1")));
  }
  Shape shape = x.shape();
  shape.erase(*a);
  return reshape(x, shape);
}

Tensor unsqueeze(const Tensor& x, int axis) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("unsqueeze", {&x}));
  absl::StatusOr<int> a = NormalizeAxis(axis, x.rank() + 1, "unsqueeze");
  if (!a.ok()) return Tensor::Error(a.status());
  Shape shape = x.shape();
  shape.insert(*a, Dim(1));
  return Record(OpKind::kReshape, NoAttrs{}, {x}, x.dtype(), std::move(shape));
}

Tensor contiguous(const Tensor& x) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("contiguous", {&x}));
  return Record(OpKind::kContiguous, NoAttrs{}, {x}, x.dtype(), x.shape());
}

Tensor concat(absl::Span<const Tensor> inputs, int axis) {
  std::vector<Tensor> list(inputs.begin(), inputs.end());
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("concat", list));
  absl::StatusOr<Shape> shape = rules::ConcatShape(inputs, axis);
  if (!shape.ok()) return Tensor::Error(shape.status());
  if (list.size() == 1) return list.front();
  const int a = *NormalizeAxis(axis, list.front().rank(), "concat");
  const DType dtype = list.front().dtype();
  return Record(OpKind::kConcat, AxisAttrs{a}, std::move(list), dtype, *std::move(shape));
}

Tensor index_select(const Tensor& x, int axis, const Tensor& index) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("index_select", {&x, &index}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireIndex("index_select", index));
  absl::StatusOr<int> a = NormalizeAxis(axis, x.rank(), "index_select");
  if (!a.ok()) return Tensor::Error(a.status());
  Shape shape;
  for (int i = 0; i < *a; ++i) shape.push_back(x.shape()[i]);
  for (const Dim& d : index.shape()) shape.push_back(d);
  for (int i = *a + 1; i < x.rank(); ++i) shape.push_back(x.shape()[i]);
  return Record(OpKind::kIndexSelect, AxisAttrs{*a}, {x, index}, x.dtype(), std::move(shape));
}

Tensor slice_update(const Tensor& dst, const Tensor& src, int axis, const Dim& start) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("slice_update", {&dst, &src}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType("slice_update", dst, src));
  absl::StatusOr<int> a = NormalizeAxis(axis, dst.rank(), "slice_update");
  if (!a.ok()) return Tensor::Error(a.status());
  bool compatible = src.rank() == dst.rank();
  for (int i = 0; compatible && i < dst.rank(); ++i) {
    if (i != *a && !(src.shape()[i] == dst.shape()[i])) compatible = false;
  }
  if (!compatible) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("slice_update: ", Describe(src), " does not fit ", Describe(dst),
                     " outside axis ", axis)));
  }
  KILN_RETURN_IF_ERROR_TENSOR(start.Validate("slice_update start"));
  // Every binding of the symbols must keep the block inside dst.
  const Dim end = start + src.shape()[*a];
  if ((dst.shape()[*a] - end).min_value() < 0) {
    return Tensor::Error(absl::OutOfRangeError(absl::StrCat(
        "slice_update: block [", start.ToString(), ", ", end.ToString(), ") of ", Describe(src),
        " does not fit axis ", *a, " of ", Describe(dst))));
  }
  return Record(OpKind::kSliceUpdate, SliceUpdateAttrs{*a, start}, {dst, src}, dst.dtype(),
                dst.shape());
}

Tensor to(const Tensor& x, Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("to", {&x}));
  if (x.device() == device) return x;
  return ops_internal::RecordOnDevice(OpKind::kToDevice, {x}, x.dtype(), x.shape(), device);
}

}  // namespace kiln
