// kiln device tile library: the scalar ops, with the CPU reference's
// semantics (precise math functions, NaN-propagating max/min, wrapping
// integer arithmetic, truncating integer division).
#pragma once

#include "kiln/types.cuh"

namespace kiln {

// ---- unary, float
__device__ __forceinline__ float op_neg(float x) { return -x; }
__device__ __forceinline__ float op_abs(float x) { return fabsf(x); }
__device__ __forceinline__ float op_exp(float x) { return expf(x); }
__device__ __forceinline__ float op_log(float x) { return logf(x); }
__device__ __forceinline__ float op_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float op_rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ float op_recip(float x) { return 1.0f / x; }
__device__ __forceinline__ float op_square(float x) { return x * x; }
__device__ __forceinline__ float op_sin(float x) { return sinf(x); }
__device__ __forceinline__ float op_cos(float x) { return cosf(x); }
__device__ __forceinline__ float op_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float op_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float op_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float op_relu(float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }

// ---- unary, integer (two's complement, wrapping)
__device__ __forceinline__ i64 op_neg(i64 x) { return static_cast<i64>(0ULL - static_cast<unsigned long long>(x)); }
__device__ __forceinline__ i64 op_abs(i64 x) { return x < 0 ? op_neg(x) : x; }
__device__ __forceinline__ i64 op_square(i64 x) {
  return static_cast<i64>(static_cast<unsigned long long>(x) * static_cast<unsigned long long>(x));
}
__device__ __forceinline__ i64 op_relu(i64 x) { return x > 0 ? x : 0; }

// ---- binary, float
__device__ __forceinline__ float op_add(float a, float b) { return a + b; }
__device__ __forceinline__ float op_sub(float a, float b) { return a - b; }
__device__ __forceinline__ float op_mul(float a, float b) { return a * b; }
__device__ __forceinline__ float op_div(float a, float b) { return a / b; }
__device__ __forceinline__ float op_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ float op_maximum(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float op_minimum(float a, float b) { return (a != a || a < b) ? a : b; }

// ---- binary, integer
__device__ __forceinline__ i64 op_add(i64 a, i64 b) {
  return static_cast<i64>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ i64 op_sub(i64 a, i64 b) {
  return static_cast<i64>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
__device__ __forceinline__ i64 op_mul(i64 a, i64 b) {
  return static_cast<i64>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
// Division by zero reports an error and yields 0 (the CPU refuses it).
__device__ __forceinline__ i64 op_div(i64 a, i64 b, int* error) {
  if (b == 0) {
    report(error, kDivisionByZero);
    return 0;
  }
  if (a == (-9223372036854775807LL - 1) && b == -1) return a;
  return a / b;
}
__device__ __forceinline__ i64 op_maximum(i64 a, i64 b) { return a > b ? a : b; }
__device__ __forceinline__ i64 op_minimum(i64 a, i64 b) { return a < b ? a : b; }

// ---- comparisons (bool results as 0/1)
template <typename T> __device__ __forceinline__ i64 op_eq(T a, T b) { return a == b; }
template <typename T> __device__ __forceinline__ i64 op_ne(T a, T b) { return a != b; }
template <typename T> __device__ __forceinline__ i64 op_lt(T a, T b) { return a < b; }
template <typename T> __device__ __forceinline__ i64 op_le(T a, T b) { return a <= b; }
template <typename T> __device__ __forceinline__ i64 op_gt(T a, T b) { return a > b; }
template <typename T> __device__ __forceinline__ i64 op_ge(T a, T b) { return a >= b; }

// ---- online softmax (the stable exps of graph-defined blocks): shifts are
// row maxes; a row with no finite element yet has shift -inf.
__device__ __forceinline__ float no_shift() { return __int_as_float(0xff800000); }
// exp(x - shift); exp(x) while the row has no shift (masked scores give 0).
// The hardware's exp2 (__expf, 2 instructions, not expf's 8): the argument
// is at most 0, so the result is within 2 + 1.2 |x - shift| ulp (6e-6
// relative at x - shift = -80, where the result is 2e-35); attention's
// steps take one per score.
__device__ __forceinline__ float stable_exp(float x, float shift) {
  return __expf(x - (shift == no_shift() ? 0.0f : shift));
}
// The same exps in base 2, for the flash path's steps: a row's shift is
// taken to log2 units once (shift_log2, 0 while the row has none), then
// each score costs one FFMA and the hardware's exp2, where stable_exp
// takes a compare, a subtraction, a multiplication and the exp2. The
// argument differs from stable_exp's by the rounding of shift * log2(e):
// at most 6e-8 |shift| relative in the result (1e-5 at |shift| = 100).
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float log2_shift(float shift) { return shift == no_shift() ? 0.0f : shift * kLog2e; }
// The hardware's 2^x (ex2.approx: 2 ulp; -inf gives 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float stable_exp_log2(float x, float shift_log2) {
  return exp2_approx(fmaf(x, kLog2e, -shift_log2));
}
// What a sum taken at shift `before` is multiplied by to be at `after`
// (before <= after): the hardware's exp2, where expf took 11 instructions,
// twice a flash step; the argument's rounding moves it by at most
// 6e-8 |before - after| relative.
__device__ __forceinline__ float shift_rescale(float before, float after) {
  return after == no_shift() || before == after ? 1.0f : exp2_approx((before - after) * kLog2e);
}
// A split block's partial sum, taken at `part`, brought to the combined shift.
__device__ __forceinline__ float split_factor(float part, float combined) {
  return part == no_shift() ? 0.0f : expf(part - combined);
}

}  // namespace kiln
