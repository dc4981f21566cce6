#include "ops/reduce.h"

#include "absl/strings/str_cat.h"
#include "ops/record.h"
#include "ops/rules.h"

namespace kiln {
namespace {

Tensor Reduce(OpKind op, const Tensor& x, absl::Span<const int> axes, bool keepdim) {
  const absl::string_view name = OpName(op);
  KILN_RETURN_IF_ERROR_TENSOR(ops_internal::CheckInputs(name, {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(op == OpKind::kReduceMean ? rules::RequireFloating(name, x)
                                                        : rules::RequireNumeric(name, x));
  absl::StatusOr<ReduceAttrs> attrs = rules::ReduceAxes(name, x.shape(), axes, keepdim);
  if (!attrs.ok()) return Tensor::Error(attrs.status());
  if (op == OpKind::kReduceMax) {
    for (int axis : attrs->axes) {
      if (x.shape()[axis] == Dim(0)) {
        return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
            "max: axis ", axis, " of ", ops_internal::Describe(x), " is empty")));
      }
    }
  }
  Shape shape = rules::ReducedShape(x.shape(), *attrs);
  return ops_internal::Record(op, *std::move(attrs), {x}, x.dtype(), std::move(shape));
}

}  // namespace

Tensor sum(const Tensor& x, absl::Span<const int> axes, bool keepdim) {
  return Reduce(OpKind::kReduceSum, x, axes, keepdim);
}

Tensor max(const Tensor& x, absl::Span<const int> axes, bool keepdim) {
  return Reduce(OpKind::kReduceMax, x, axes, keepdim);
}

Tensor mean(const Tensor& x, absl::Span<const int> axes, bool keepdim) {
  return Reduce(OpKind::kReduceMean, x, axes, keepdim);
}

}  // namespace kiln
