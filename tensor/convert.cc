#include "tensor/convert.h"

#include <cmath>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/check.h"

namespace kiln {
namespace {

template <typename T>
constexpr bool kIsFloatStorage =
    std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
double LoadFloat(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return v.ToFloat();
  }
}

// Rounds to f32 by round-to-odd: an inexact value is truncated toward zero
// and its last mantissa bit set. Rounding that again to f16 or bf16 (at least
// two bits fewer) gives the same result as rounding the exact value once.
float RoundToOddFloat(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

float RoundToOddFloat(int64_t v) {
  float f = static_cast<float>(v);
  const __int128 back = static_cast<__int128>(static_cast<double>(f));
  if (back == v) return f;
  if ((back < 0 ? -back : back) > (v < 0 ? -static_cast<__int128>(v) : v)) {
    f = std::nextafter(f, 0.0f);
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <typename To>
To StoreFromDouble(double v) {
  if constexpr (std::is_same_v<To, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To::FromFloat(RoundToOddFloat(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != 0;
  } else {
    return static_cast<To>(SaturatingFloatToInt64(
        v, std::numeric_limits<To>::min(), std::numeric_limits<To>::max()));
  }
}

template <typename To>
To StoreFromInt(int64_t v) {
  if constexpr (std::is_same_v<To, float>) {
    return static_cast<float>(v);
  } else if constexpr (kIsFloatStorage<To>) {
    return To::FromFloat(RoundToOddFloat(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != 0;
  } else {
    return static_cast<To>(v);  // modular in C++20
  }
}

template <typename From, typename To>
void ConvertTyped(const From* src, To* dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (kIsFloatStorage<From>) {
      dst[i] = StoreFromDouble<To>(LoadFloat(src[i]));
    } else {
      dst[i] = StoreFromInt<To>(static_cast<int64_t>(src[i]));
    }
  }
}

template <typename From>
void ConvertFrom(const From* src, DType to, void* dst, int64_t count) {
  switch (to) {
#define KILN_CONVERT_TO(e, name, type)                              \
  case DType::e:                                                    \
    ConvertTyped<From, type>(src, static_cast<type*>(dst), count); \
    return;
    KILN_DTYPES(KILN_CONVERT_TO)
#undef KILN_CONVERT_TO
  }
  KILN_UNREACHABLE("unknown DType value");
}

}  // namespace

int64_t SaturatingFloatToInt64(double value, int64_t min_value, int64_t max_value) {
  if (std::isnan(value)) return 0;
  const double t = std::trunc(value);
  // Compare in double: max_value as double may round up (2^63), hence >=.
  if (t >= static_cast<double>(max_value)) return max_value;
  if (t <= static_cast<double>(min_value)) return min_value;
  return static_cast<int64_t>(t);
}

void ConvertElements(DType from, const void* src, DType to, void* dst, int64_t count) {
  if (count <= 0) return;
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(count) * DTypeSize(from));
    return;
  }
  switch (from) {
#define KILN_CONVERT_FROM(e, name, type)                                    \
  case DType::e:                                                            \
    ConvertFrom<type>(static_cast<const type*>(src), to, dst, count); \
    return;
    KILN_DTYPES(KILN_CONVERT_FROM)
#undef KILN_CONVERT_FROM
  }
  KILN_UNREACHABLE("unknown DType value");
}

void ConvertFromDouble(const double* src, DType to, void* dst, int64_t count) {
  switch (to) {
#define KILN_CONVERT_DOUBLE(e, name, type)                                     \
  case DType::e:                                                               \
    for (int64_t i = 0; i < count; ++i) {                                      \
      static_cast<type*>(dst)[i] = StoreFromDouble<type>(src[i]);              \
    }                                                                          \
    return;
    KILN_DTYPES(KILN_CONVERT_DOUBLE)
#undef KILN_CONVERT_DOUBLE
  }
  KILN_UNREACHABLE("unknown DType value");
}

}  // namespace kiln
