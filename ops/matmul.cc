#include "ops/matmul.h"

#include "absl/strings/str_cat.h"
#include "ops/movement.h"
#include "ops/record.h"
#include "ops/rules.h"

namespace kiln {

Tensor matmul(const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR_TENSOR(ops_internal::CheckInputs("matmul", {&a, &b}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType("matmul", a, b));
  if (a.dtype() == DType::kBool || a.dtype() == DType::kU8) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "matmul: needs f32, f16, bf16, i32 or i64 inputs, got ", ops_internal::Describe(a))));
  }
  if (a.rank() == 0 || b.rank() == 0) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("matmul: inputs need rank >= 1, got ", ops_internal::Describe(a), " and ",
                     ops_internal::Describe(b))));
  }
  // Vectors become matrices for the product and lose that axis after it.
  const bool a_vector = a.rank() == 1;
  const bool b_vector = b.rank() == 1;
  const Tensor a2 = a_vector ? unsqueeze(a, 0) : a;
  const Tensor b2 = b_vector ? unsqueeze(b, 1) : b;
  absl::StatusOr<Shape> shape = rules::MatmulShape(a2.shape(), b2.shape());
  if (!shape.ok()) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat(shape.status().message(), " (operands ", ops_internal::Describe(a), " and ",
                     ops_internal::Describe(b), ")")));
  }
  Tensor out = ops_internal::Record(OpKind::kMatmul, NoAttrs{}, {a2, b2}, a.dtype(), *shape);
  if (b_vector) out = squeeze(out, -1);
  if (a_vector) out = squeeze(out, -2 + (b_vector ? 1 : 0));
  return out;
}

}  // namespace kiln
