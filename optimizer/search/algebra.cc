#include "optimizer/search/algebra.h"

#include <cmath>

#include "ops/cpu/kernels.h"
#include "tensor/half.h"

namespace kiln::search {
namespace {

// Whether `v` is an integer small enough to be one in the field too.
bool SmallInteger(double v) { return std::abs(v) < 9.0e15 && v == std::floor(v); }

}  // namespace

FieldAlgebra::Value FieldAlgebra::Constant(double value) const {
  if (SmallInteger(value)) return f_.Integer(static_cast<int64_t>(value));
  if (value != 0) {
    const double inverse = std::round(1.0 / value);
    if (SmallInteger(inverse) && std::abs(1.0 / inverse - value) <= 1e-12 * std::abs(value)) {
      return f_.Div(f_.Integer(1), f_.Integer(static_cast<int64_t>(inverse)));
    }
  }
  return f_.Constant(value);
}

FieldAlgebra::Value FieldAlgebra::Unary(OpKind op, Value x) const {
  switch (op) {
    case OpKind::kNeg: return f_.Neg(x);
    case OpKind::kSquare: return f_.Mul(x, x);
    case OpKind::kRecip: return f_.Div(f_.Integer(1), x);
    case OpKind::kExp: return f_.Exp(x);
    default: return f_.Opaque(op, x);
  }
}

FieldAlgebra::Value FieldAlgebra::Binary(OpKind op, Value a, Value b) const {
  switch (op) {
    case OpKind::kAdd: return f_.Add(a, b);
    case OpKind::kSub: return f_.Sub(a, b);
    case OpKind::kMul: return f_.Mul(a, b);
    case OpKind::kDiv: return f_.Div(a, b);
    default: return f_.Opaque(op, a, b);
  }
}

FloatAlgebra::Value FloatAlgebra::Unary(OpKind op, Value x) const { return cpu::UnaryFloat(op, x); }

FloatAlgebra::Value FloatAlgebra::Binary(OpKind op, Value a, Value b) const {
  return cpu::BinaryFloat(op, a, b);
}

FloatAlgebra::Value FloatAlgebra::ShiftedExp(Value x, Value shift) const {
  return std::isinf(shift) && shift < 0 ? std::exp(x) : std::exp(x - shift);
}

FloatAlgebra::Value FloatAlgebra::Rescale(Value before, Value after) const {
  return std::isinf(after) && after < 0 ? 1.0f : std::exp(before - after);
}

FloatAlgebra::Value FloatAlgebra::Round(DType dtype, Value x) const {
  switch (dtype) {
    case DType::kF16: return Half::FromFloat(x).ToFloat();
    case DType::kBF16: return BFloat16::FromFloat(x).ToFloat();
    default: return x;
  }
}

}  // namespace kiln::search
