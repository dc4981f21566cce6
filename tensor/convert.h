// Element conversion between dtypes: the one definition of what a cast does.
//
//   float -> float: rounded to nearest even; NaN stays NaN.
//   float -> integer: truncated toward zero, saturated to the target's range,
//                     NaN becomes 0 (no undefined behaviour for any input).
//   integer -> integer: two's-complement wrap-around (modular), as in C++20.
//   integer -> float: rounded to nearest.
//   any -> bool: value != 0.  bool -> any: 0 or 1.
#ifndef KILN_TENSOR_CONVERT_H_
#define KILN_TENSOR_CONVERT_H_

#include <cstdint>

#include "tensor/dtype.h"

namespace kiln {

void ConvertElements(DType from, const void* src, DType to, void* dst, int64_t count);
// The same rules from double values (used for constants and generated data),
// so that each element is rounded once.
void ConvertFromDouble(const double* src, DType to, void* dst, int64_t count);

// Scalar forms of the rules above.
int64_t SaturatingFloatToInt64(double value, int64_t min_value, int64_t max_value);

}  // namespace kiln

#endif  // KILN_TENSOR_CONVERT_H_
