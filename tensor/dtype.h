// Element types. KILN_DTYPES is the one list; everything else derives from it.
#ifndef KILN_TENSOR_DTYPE_H_
#define KILN_TENSOR_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>


#include "absl/strings/string_view.h"
#include "tensor/half.h"

namespace kiln {

// X(enumerator, name, C++ storage type)
#define KILN_DTYPES(X)       \
  X(kF32, "f32", float)      \
  X(kF16, "f16", ::kiln::Half)     \
  X(kBF16, "bf16", ::kiln::BFloat16) \
  X(kI32, "i32", int32_t)    \
  X(kI64, "i64", int64_t)    \
  X(kU8, "u8", uint8_t)      \
  X(kBool, "bool", bool)

enum class DType : uint8_t {
#define KILN_DTYPE_ENUM(e, name, type) e,
  KILN_DTYPES(KILN_DTYPE_ENUM)
#undef KILN_DTYPE_ENUM
};

absl::string_view DTypeName(DType dtype);
std::optional<DType> ParseDType(absl::string_view name);
size_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);  // f32, f16, bf16
bool IsInteger(DType dtype);   // i32, i64, u8 (not bool)

// DTypeOf<T>::value: the DType whose storage type is T.
template <typename T>
struct DTypeOf;
#define KILN_DTYPE_OF(e, name, type) \
  template <>                        \
  struct DTypeOf<type> {             \
    static constexpr DType value = DType::e; \
  };
KILN_DTYPES(KILN_DTYPE_OF)
#undef KILN_DTYPE_OF

// Whether every value of `from` is exactly representable in `to`.
bool IsLosslessConversion(DType from, DType to);

}  // namespace kiln

#endif  // KILN_TENSOR_DTYPE_H_
