// Moving values between kiln's strided storage and dense xtensor arrays in a
// compute type: float for floating dtypes (f16/bf16 widen exactly), int64_t
// for integers and bool.
#ifndef KILN_OPS_CPU_ARRAYS_H_
#define KILN_OPS_CPU_ARRAYS_H_

#include <cstdint>
#include <type_traits>

#include <xtensor/xarray.hpp>

#include "absl/status/statusor.h"
#include "tensor/convert.h"
#include "tensor/dtype.h"
#include "tensor/storage.h"

namespace kiln::cpu {

template <typename C>
constexpr DType kComputeDType = std::is_same_v<C, float>   ? DType::kF32
                                : std::is_same_v<C, bool>  ? DType::kBool
                                                           : DType::kI64;

using ArrayShape = std::vector<size_t>;
ArrayShape ToArrayShape(absl::Span<const int64_t> sizes);

// Element values of `data` (of `dtype`) as a dense array of C.
template <typename C>
xt::xarray<C> Load(const TensorData& data, DType dtype) {
  xt::xarray<C> out(ToArrayShape(data.sizes));
  const int64_t n = data.num_elements();
  if (n == 0) return out;
  if (dtype == kComputeDType<C>) {
    CopyStridedToDense(data, sizeof(C), out.data());
    return out;
  }
  std::vector<char> dense(static_cast<size_t>(n) * DTypeSize(dtype));
  CopyStridedToDense(data, DTypeSize(dtype), dense.data());
  ConvertElements(dtype, dense.data(), kComputeDType<C>, out.data(), n);
  return out;
}

// A new dense tensor of `dtype` holding `array` (converted).
template <typename C>
absl::StatusOr<TensorData> Store(const xt::xarray<C>& array, DType dtype) {
  Extents sizes(array.shape().begin(), array.shape().end());
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, sizes);
  if (!out.ok()) return out.status();
  ConvertElements(kComputeDType<C>, array.data(), dtype, out->storage->data(),
                  static_cast<int64_t>(array.size()));
  return out;
}

// True when the node's dtype computes in float, false for int64_t.
inline bool ComputesInFloat(DType dtype) { return IsFloating(dtype); }

}  // namespace kiln::cpu

#endif  // KILN_OPS_CPU_ARRAYS_H_
