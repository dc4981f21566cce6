// 16-bit floating-point storage types. kiln computes in f32 and rounds to
// these on store (round to nearest even, NaN stays NaN, overflow gives inf).
#ifndef KILN_TENSOR_HALF_H_
#define KILN_TENSOR_HALF_H_

#include <bit>
#include <cstdint>

namespace kiln {

// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;

  static Half FromFloat(float value);
  float ToFloat() const;
  friend bool operator==(Half a, Half b) { return a.bits == b.bits; }
};

// bfloat16: the upper half of an f32.
struct BFloat16 {
  uint16_t bits = 0;

  static BFloat16 FromFloat(float value);
  float ToFloat() const;
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

// The conversions are inline: the CPU kernels and the verifier's
// floating-point check call them once per element (a call each cost the
// float check of causal prefill, in bf16, a tenth of its time).

namespace half_internal {

constexpr uint32_t kF32Infinity = 0x7f800000u;
constexpr uint32_t kF32ExponentBias = 127;
constexpr uint32_t kF16ExponentBias = 15;

}  // namespace half_internal

inline Half Half::FromFloat(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  bits &= 0x7fffffffu;
  uint32_t out;
  // Magnitudes at or above 2^16 overflow (those in [65520, 65536) overflow
  // through the rounding below).
  constexpr uint32_t kOverflow = (half_internal::kF32ExponentBias + 16) << 23;
  // Below 2^-14 the result is an f16 subnormal (or zero).
  constexpr uint32_t kMinNormal = (half_internal::kF32ExponentBias - 14) << 23;
  if (bits >= kOverflow) {
    out = bits > half_internal::kF32Infinity ? 0x7e00u | ((bits >> 13) & 0x3ffu) : 0x7c00u;
  } else if (bits < kMinNormal) {
    // Adding 0.5 aligns the subnormal's ulp (2^-24) with the f32 ulp, so the
    // f32 adder performs round-to-nearest-even for us.
    constexpr uint32_t kMagic = (half_internal::kF32ExponentBias - 1) << 23;  // 0.5f
    const float shifted = std::bit_cast<float>(bits) + std::bit_cast<float>(kMagic);
    out = std::bit_cast<uint32_t>(shifted) - kMagic;
  } else {
    const uint32_t mantissa_odd = (bits >> 13) & 1u;
    bits += ((half_internal::kF16ExponentBias - half_internal::kF32ExponentBias) << 23) + 0xfffu + mantissa_odd;
    out = bits >> 13;
  }
  return Half{static_cast<uint16_t>(out | sign)};
}

inline float Half::ToFloat() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) {
    return std::bit_cast<float>(sign | half_internal::kF32Infinity | (mantissa << 13));
  }
  return std::bit_cast<float>(
      sign | ((exponent + half_internal::kF32ExponentBias - half_internal::kF16ExponentBias) << 23) | (mantissa << 13));
}

inline BFloat16 BFloat16::FromFloat(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > half_internal::kF32Infinity) {
    return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x40u)};  // quiet NaN
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((bits + rounding) >> 16)};
}

inline float BFloat16::ToFloat() const {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace kiln

#endif  // KILN_TENSOR_HALF_H_
