// Matrix products.
#ifndef KILN_OPS_MATMUL_H_
#define KILN_OPS_MATMUL_H_

#include "tensor/tensor.h"

namespace kiln {

// NumPy matmul: [..., M, K] x [..., K, N] -> [..., M, N] with the batch dims
// broadcast; a 1-d operand is a vector (its axis is added, then removed).
// Floating inputs accumulate in f32; i32 and i64 accumulate with wrap-around.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace kiln

#endif  // KILN_OPS_MATMUL_H_
