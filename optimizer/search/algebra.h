// The value algebras the interpreters run in: finite-field elements (the
// verifier) and f32 (the floating-point check). Both read constants and
// elementwise ops the same way, so a region and a candidate evaluated in one
// algebra are compared like for like.
#ifndef KILN_OPTIMIZER_SEARCH_ALGEBRA_H_
#define KILN_OPTIMIZER_SEARCH_ALGEBRA_H_

#include <cstdint>

#include "optimizer/search/finite_field.h"
#include "tensor/dtype.h"
#include "tensor/op.h"

namespace kiln::search {

class FieldAlgebra {
 public:
  using Value = FieldElement;
  explicit FieldAlgebra(const Field& field) : f_(field) {}

  Value Zero() const { return {0, 0}; }
  // Integers are themselves and reciprocals of integers their inverses (1/n
  // from a mean must agree with dividing by n); other values are fixed
  // random elements.
  Value Constant(double value) const;
  Value Unary(OpKind op, Value x) const;
  Value Binary(OpKind op, Value a, Value b) const;
  Value Add(Value a, Value b) const { return f_.Add(a, b); }
  Value Mul(Value a, Value b) const { return f_.Mul(a, b); }
  Value Round(DType, Value x) const { return x; }  // exact arithmetic has no rounding
  bool Equal(Value a, Value b) const { return a == b; }

 private:
  const Field& f_;
};

class FloatAlgebra {
 public:
  using Value = float;
  Value Zero() const { return 0; }
  Value Constant(double value) const { return static_cast<float>(value); }
  Value Unary(OpKind op, Value x) const;
  Value Binary(OpKind op, Value a, Value b) const;
  Value Add(Value a, Value b) const { return a + b; }
  Value Mul(Value a, Value b) const { return a * b; }
  // Rounds to a 16-bit float as a cast would.
  Value Round(DType dtype, Value x) const;
};

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_ALGEBRA_H_
