// Elementwise ops. Binary ops broadcast like NumPy and need equal dtypes
// (kiln never promotes silently; cast() first). A double operand becomes a
// scalar of the tensor's dtype.
#ifndef KILN_OPS_ELEMENTWISE_H_
#define KILN_OPS_ELEMENTWISE_H_

#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace kiln {

// Unary. Transcendental ops need a floating dtype; neg, abs, square and relu
// also take integers.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor recip(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor gelu(const Tensor& x);  // exact: x * Phi(x), with erf
Tensor relu(const Tensor& x);

// The elementwise op `op` names, for code that replays ops by kind (the
// optimizer's floating-point check); an error tensor for any other op.
Tensor apply_unary(OpKind op, const Tensor& x);
Tensor apply_binary(OpKind op, const Tensor& a, const Tensor& b);

// Binary arithmetic. Integer division truncates toward zero; dividing by an
// integer zero fails at realize with InvalidArgument. maximum/minimum
// propagate NaN.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);  // floating only
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// Comparisons: bool results.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// cond ? a : b, all three broadcast; cond is bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Conversion by the rules in tensor/convert.h.
Tensor cast(const Tensor& x, DType dtype);

// The same ops with a scalar operand.
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
Tensor where(const Tensor& cond, const Tensor& a, double b);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);

}  // namespace kiln

#endif  // KILN_OPS_ELEMENTWISE_H_
