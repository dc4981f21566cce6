#include "ops/elementwise.h"

#include "absl/strings/str_cat.h"
#include "ops/creation.h"
#include "ops/record.h"
#include "ops/rules.h"

namespace kiln {

using ops_internal::CheckInputs;
using ops_internal::Record;

namespace {

// Ops that also accept integer inputs.
bool AcceptsIntegers(OpKind op) {
  return op == OpKind::kNeg || op == OpKind::kAbs || op == OpKind::kSquare ||
         op == OpKind::kRelu;
}

Tensor Unary(OpKind op, const Tensor& x) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs(OpName(op), {&x}));
  KILN_RETURN_IF_ERROR_TENSOR(AcceptsIntegers(op) ? rules::RequireNumeric(OpName(op), x)
                                                  : rules::RequireFloating(OpName(op), x));
  return Record(op, NoAttrs{}, {x}, x.dtype(), x.shape());
}

Tensor Binary(OpKind op, const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs(OpName(op), {&a, &b}));
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType(OpName(op), a, b));
  if (op == OpKind::kPow) {
    KILN_RETURN_IF_ERROR_TENSOR(rules::RequireFloating(OpName(op), a));
  } else if (IsArithmetic(op)) {
    KILN_RETURN_IF_ERROR_TENSOR(rules::RequireNumeric(OpName(op), a));
  }
  absl::StatusOr<Shape> shape = rules::BroadcastShapes(OpName(op), a.shape(), b.shape());
  if (!shape.ok()) return Tensor::Error(shape.status());
  const DType dtype = IsComparison(op) ? DType::kBool : a.dtype();
  return Record(op, NoAttrs{}, {a, b}, dtype, *std::move(shape));
}

}  // namespace

Tensor apply_unary(OpKind op, const Tensor& x) {
  if (!IsUnary(op)) return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(OpName(op), " is not unary")));
  return Unary(op, x);
}

Tensor apply_binary(OpKind op, const Tensor& a, const Tensor& b) {
  if (!IsBinary(op)) return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(OpName(op), " is not binary")));
  return Binary(op, a, b);
}

namespace {

// A scalar operand with the dtype and device of `like`; errors name `op`.
Tensor ScalarFor(absl::string_view op, double value, const Tensor& like) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs(op, {&like}));
  Tensor s = scalar(value, like.dtype(), like.device());
  if (!s.ok()) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat(op, ": ", s.status().message(), " (the dtype of ",
                     ops_internal::Describe(like), ")")));
  }
  return s;
}

Tensor BinaryScalar(OpKind op, const Tensor& a, double b) {
  return Binary(op, a, ScalarFor(OpName(op), b, a));
}

Tensor ScalarBinary(OpKind op, double a, const Tensor& b) {
  return Binary(op, ScalarFor(OpName(op), a, b), b);
}

}  // namespace

#define KILN_DEFINE_UNARY(e, name) \
  Tensor name(const Tensor& x) { return Unary(OpKind::k##e, x); }
#define KILN_DEFINE_BINARY(e, name) \
  Tensor name(const Tensor& a, const Tensor& b) { return Binary(OpKind::k##e, a, b); }
KILN_UNARY_OPS(KILN_DEFINE_UNARY)
KILN_ARITHMETIC_OPS(KILN_DEFINE_BINARY)
KILN_COMPARISON_OPS(KILN_DEFINE_BINARY)
#undef KILN_DEFINE_UNARY
#undef KILN_DEFINE_BINARY

Tensor add(const Tensor& a, double b) { return BinaryScalar(OpKind::kAdd, a, b); }
Tensor sub(const Tensor& a, double b) { return BinaryScalar(OpKind::kSub, a, b); }
Tensor mul(const Tensor& a, double b) { return BinaryScalar(OpKind::kMul, a, b); }
Tensor div(const Tensor& a, double b) { return BinaryScalar(OpKind::kDiv, a, b); }
Tensor pow(const Tensor& a, double exponent) { return BinaryScalar(OpKind::kPow, a, exponent); }
Tensor maximum(const Tensor& a, double b) { return BinaryScalar(OpKind::kMaximum, a, b); }
Tensor minimum(const Tensor& a, double b) { return BinaryScalar(OpKind::kMinimum, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("where", {&cond, &a, &b}));
  if (cond.dtype() != DType::kBool) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "where: the condition must be bool, got ", ops_internal::Describe(cond))));
  }
  KILN_RETURN_IF_ERROR_TENSOR(rules::RequireSameDType("where", a, b));
  absl::StatusOr<Shape> ab = rules::BroadcastShapes("where", a.shape(), b.shape());
  if (!ab.ok()) return Tensor::Error(ab.status());
  absl::StatusOr<Shape> shape = rules::BroadcastShapes("where", cond.shape(), *ab);
  if (!shape.ok()) return Tensor::Error(shape.status());
  return Record(OpKind::kWhere, NoAttrs{}, {cond, a, b}, a.dtype(), *std::move(shape));
}

Tensor where(const Tensor& cond, const Tensor& a, double b) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("where", {&cond, &a}));
  return where(cond, a, ScalarFor("where", b, a));
}

Tensor cast(const Tensor& x, DType dtype) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("cast", {&x}));
  if (x.dtype() == dtype) return x;
  return Record(OpKind::kCast, NoAttrs{}, {x}, dtype, x.shape());
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }

Tensor operator+(double a, const Tensor& b) { return ScalarBinary(OpKind::kAdd, a, b); }
Tensor operator-(double a, const Tensor& b) { return ScalarBinary(OpKind::kSub, a, b); }
Tensor operator*(double a, const Tensor& b) { return ScalarBinary(OpKind::kMul, a, b); }
Tensor operator/(double a, const Tensor& b) { return ScalarBinary(OpKind::kDiv, a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }

}  // namespace kiln
