// 16-bit floating-point storage types. kiln computes in f32 and rounds to
// these on store (round to nearest even, NaN stays NaN, overflow gives inf).
#ifndef KILN_TENSOR_HALF_H_
#define KILN_TENSOR_HALF_H_

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

}  // namespace kiln

#endif  // KILN_TENSOR_HALF_H_
