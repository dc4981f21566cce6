// The value algebras the interpreters run in: finite-field elements (the
// verifier) and f32 (the floating-point check). Both read constants and
// elementwise ops the same way, so a region and a candidate evaluated in one
// algebra are compared like for like.
//
// Stabilized exponentials (a softmax's exp(x - max), TileOp::kStableExp):
// softmax does not change when a row is shifted by any m, so the finite
// field treats the stabilizing max as a value the program may choose
// freely. The region's shift is 0 (exp(x) exactly); a candidate's shift is
// a fresh random element for each row and loop step (Shift). A candidate
// then passes only if its output does not depend on those values: when the
// region's output is normalized (shift-invariant) and every accumulator
// the shift reaches is rescaled by exp(m_before - m_after) at each step. One
// that drops a rescale adds terms taken at different shifts and fails. The
// f32 algebra uses the real max (what the kernels compute).
#ifndef KILN_OPTIMIZER_SEARCH_ALGEBRA_H_
#define KILN_OPTIMIZER_SEARCH_ALGEBRA_H_

#include <cstdint>
#include <limits>

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
  // The sum of a[i * sa] * b[i * sb] for i < n (a matmul's element).
  Value Dot(const Value* a, int64_t sa, const Value* b, int64_t sb, int64_t n) const {
    return f_.Dot(a, sa, b, sb, n);
  }
  Value Round(DType, Value x) const { return x; }  // exact arithmetic has no rounding
  bool Equal(Value a, Value b) const { return a == b; }
  // Stabilized exponentials (see above).
  Value Maximum(Value a, Value b) const { return f_.Opaque(OpKind::kMaximum, a, b); }
  Value RegionShift(Value) const { return Zero(); }
  Value NoShift() const { return Zero(); }
  Value Shift(Value, Value, uint64_t site) const { return f_.Arbitrary(site); }
  Value ShiftedExp(Value x, Value shift) const { return f_.Exp(f_.Sub(x, shift)); }
  Value Rescale(Value before, Value after) const { return f_.Exp(f_.Sub(before, after)); }

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
  // The sum of a[i * sa] * b[i * sb] for i < n, added in order from 0.
  Value Dot(const Value* a, int64_t sa, const Value* b, int64_t sb, int64_t n) const {
    Value acc = 0;
    for (int64_t i = 0; i < n; ++i) acc = Add(acc, Mul(a[i * sa], b[i * sb]));
    return acc;
  }
  // Rounds to a 16-bit float as a cast would.
  Value Round(DType dtype, Value x) const;
  // Stabilized exponentials: the running max, as the kernels keep it. A
  // row with no finite element yet keeps -inf; its exponentials are 0 and
  // its rescale 1.
  Value Maximum(Value a, Value b) const { return a > b ? a : b; }
  Value RegionShift(Value row_max) const { return row_max; }
  Value NoShift() const { return -std::numeric_limits<float>::infinity(); }
  Value Shift(Value before, Value tile_max, uint64_t) const { return Maximum(before, tile_max); }
  Value ShiftedExp(Value x, Value shift) const;
  Value Rescale(Value before, Value after) const;
};

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_ALGEBRA_H_
