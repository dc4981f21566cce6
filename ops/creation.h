// Tensors made from nothing: constants, ranges, seeded random numbers. All
// are lazy; shapes may be symbolic.
#ifndef KILN_OPS_CREATION_H_
#define KILN_OPS_CREATION_H_

#include <cstdint>

#include "tensor/device.h"
#include "tensor/dim.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace kiln {

// A 0-d tensor. `value` must be representable in `dtype` (integers exactly).
Tensor scalar(double value, DType dtype = DType::kF32, Device device = Device::Cpu());

Tensor full(const Shape& shape, double value, DType dtype = DType::kF32,
            Device device = Device::Cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::Cpu());
Tensor ones(const Shape& shape, DType dtype = DType::kF32, Device device = Device::Cpu());
Tensor full_like(const Tensor& like, double value);
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);

// 1-d, `length` elements: start + i * step. `start` may be symbolic (e.g. the
// decode position), so the values follow the bound symbol without a retrace.
Tensor iota(const Dim& length, const Dim& start = 0, double step = 1,
            DType dtype = DType::kI32, Device device = Device::Cpu());

// NumPy's arange: ceil((stop - start) / step) elements from start.
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::kF32,
              Device device = Device::Cpu());

// Counter-based random numbers: the same (shape, seed) gives the same values
// on every device and every run. Uniform draws lie in [low, high) before they
// are rounded to the dtype (rounding may reach high).
Tensor random_uniform(const Shape& shape, uint64_t seed, double low = 0, double high = 1,
                      DType dtype = DType::kF32, Device device = Device::Cpu());
Tensor random_normal(const Shape& shape, uint64_t seed, double mean = 0, double stddev = 1,
                     DType dtype = DType::kF32, Device device = Device::Cpu());

}  // namespace kiln

#endif  // KILN_OPS_CREATION_H_
