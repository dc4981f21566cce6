#include "tensor/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace kiln {
namespace {

bool IsHalfNaN(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0; }
bool IsBFloat16NaN(uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0; }

float FloatFromBits(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t BitsOf(float f) { return std::bit_cast<uint32_t>(f); }

// An independent reference for f32 -> f16: scale into an integer grid and let
// nearbyint (round to nearest even in the default mode) do the rounding.
uint16_t ReferenceHalfBits(float value) {
  const uint16_t sign = std::signbit(value) ? 0x8000u : 0;
  if (std::isnan(value)) return sign | 0x7e00u;
  const double a = std::fabs(static_cast<double>(value));
  if (a >= 65520.0) return sign | 0x7c00u;
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal grid 2^-24; 1024 units is the smallest normal, encoded 0x0400.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int exp = 0;
  std::frexp(a, &exp);                               // a = f * 2^exp, f in [0.5, 1)
  int e = exp - 1;                                   // a in [2^e, 2^(e+1))
  double m = std::nearbyint(std::ldexp(a, 10 - e));  // in [1024, 2048]
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  if (e + 15 >= 31) return sign | 0x7c00u;
  return sign | static_cast<uint16_t>(((e + 15) << 10) | (static_cast<int>(m) - 1024));
}

TEST(Half, AllBitPatternsRoundTrip) {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const Half h{static_cast<uint16_t>(b)};
    const float f = h.ToFloat();
    const Half back = Half::FromFloat(f);
    if (IsHalfNaN(h.bits)) {
      ASSERT_TRUE(std::isnan(f)) << "bits " << b;
      ASSERT_TRUE(IsHalfNaN(back.bits)) << "bits " << b << " came back as " << back.bits;
      ASSERT_EQ(back.bits & 0x8000u, h.bits & 0x8000u) << "sign of NaN " << b;
    } else {
      ASSERT_EQ(back.bits, h.bits) << "bits " << b << " -> " << f;
    }
  }
}

TEST(Half, ToFloatKnownValues) {
  EXPECT_EQ(Half{0x0000}.ToFloat(), 0.0f);
  EXPECT_EQ(Half{0x3c00}.ToFloat(), 1.0f);
  EXPECT_EQ(Half{0xc000}.ToFloat(), -2.0f);
  EXPECT_EQ(Half{0x3555}.ToFloat(), 0x1.554p-2f);
  EXPECT_EQ(Half{0x7bff}.ToFloat(), 65504.0f);
  EXPECT_EQ(Half{0xfbff}.ToFloat(), -65504.0f);
  EXPECT_EQ(Half{0x0400}.ToFloat(), 0x1p-14f);         // smallest normal
  EXPECT_EQ(Half{0x0001}.ToFloat(), 0x1p-24f);         // smallest subnormal
  EXPECT_EQ(Half{0x03ff}.ToFloat(), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(Half{0x8001}.ToFloat(), -0x1p-24f);
  EXPECT_EQ(Half{0x7c00}.ToFloat(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Half{0xfc00}.ToFloat(), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Half{0x7e00}.ToFloat()));
  EXPECT_TRUE(std::isnan(Half{0x7c01}.ToFloat()));  // signalling NaN
  EXPECT_TRUE(std::isnan(Half{0xfe00}.ToFloat()));
}

TEST(Half, FromFloatKnownValues) {
  EXPECT_EQ(Half::FromFloat(0.0f).bits, 0x0000);
  EXPECT_EQ(Half::FromFloat(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half::FromFloat(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half::FromFloat(0.5f).bits, 0x3800);
  EXPECT_EQ(Half::FromFloat(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half::FromFloat(0x1p-14f).bits, 0x0400);
}

TEST(Half, RoundsTiesToEven) {
  // 1 + 2^-11 is halfway between 1 (even) and 1 + 2^-10 (odd).
  EXPECT_EQ(Half::FromFloat(1.0f + 0x1p-11f).bits, 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(Half::FromFloat(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  // Just off the tie goes to the nearer neighbour.
  EXPECT_EQ(Half::FromFloat(1.0f + 0x1p-11f + 0x1p-20f).bits, 0x3c01);
  EXPECT_EQ(Half::FromFloat(1.0f + 0x1p-11f - 0x1p-20f).bits, 0x3c00);
  // Negative ties mirror positive ones.
  EXPECT_EQ(Half::FromFloat(-(1.0f + 0x1p-11f)).bits, 0xbc00);
  EXPECT_EQ(Half::FromFloat(-(1.0f + 3 * 0x1p-11f)).bits, 0xbc02);
  // A tie that carries into the exponent: halfway between 2 - 2^-10 and 2.
  EXPECT_EQ(Half::FromFloat(2.0f - 0x1p-11f).bits, 0x4000);
  // Integers above 2048 have a spacing of 2: 2049 -> 2048, 2051 -> 2052.
  EXPECT_EQ(Half::FromFloat(2049.0f).ToFloat(), 2048.0f);
  EXPECT_EQ(Half::FromFloat(2051.0f).ToFloat(), 2052.0f);
}

// Every midpoint between two adjacent finite halves (exact in f32), and the
// floats on either side of it.
TEST(Half, RoundsEveryMidpointToEven) {
  for (uint32_t b = 0; b < 0x7bffu; ++b) {
    const float lo = Half{static_cast<uint16_t>(b)}.ToFloat();
    const float hi = Half{static_cast<uint16_t>(b + 1)}.ToFloat();
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2) << "not exact";
    const uint16_t even = (b & 1u) ? static_cast<uint16_t>(b + 1) : static_cast<uint16_t>(b);
    ASSERT_EQ(Half::FromFloat(mid).bits, even) << "midpoint above " << b;
    ASSERT_EQ(Half::FromFloat(-mid).bits, even | 0x8000u) << "negative midpoint above " << b;
    ASSERT_EQ(Half::FromFloat(std::nextafter(mid, 0.0f)).bits, b) << "below midpoint " << b;
    ASSERT_EQ(Half::FromFloat(std::nextafter(mid, 1e9f)).bits, b + 1) << "above midpoint " << b;
  }
}

// A sweep of f32 bit patterns (every 251st, both signs) against the reference.
TEST(Half, MatchesReferenceRoundingOnF32Sweep) {
  for (uint64_t b = 0; b <= 0xffffffffull; b += 251) {
    const float f = FloatFromBits(static_cast<uint32_t>(b));
    const uint16_t got = Half::FromFloat(f).bits;
    const uint16_t want = ReferenceHalfBits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(IsHalfNaN(got)) << std::hex << "f32 bits 0x" << b;
      ASSERT_EQ(got & 0x8000u, want & 0x8000u) << std::hex << "f32 bits 0x" << b;
    } else {
      ASSERT_EQ(got, want) << std::hex << "f32 bits 0x" << b << " (" << f << ")";
    }
  }
}

TEST(Half, Subnormals) {
  EXPECT_EQ(Half::FromFloat(0x1p-24f).bits, 0x0001);
  EXPECT_EQ(Half::FromFloat(3 * 0x1p-24f).bits, 0x0003);
  EXPECT_EQ(Half::FromFloat(1023 * 0x1p-24f).bits, 0x03ff);
  EXPECT_EQ(Half::FromFloat(-0x1p-24f).bits, 0x8001);
  // Ties on the subnormal grid go to even.
  EXPECT_EQ(Half::FromFloat(0x1p-25f).bits, 0x0000);      // 0.5 ulp -> 0
  EXPECT_EQ(Half::FromFloat(3 * 0x1p-25f).bits, 0x0002);  // 1.5 ulp -> 2
  EXPECT_EQ(Half::FromFloat(5 * 0x1p-25f).bits, 0x0002);  // 2.5 ulp -> 2
  // Just above half an ulp rounds up to the smallest subnormal.
  EXPECT_EQ(Half::FromFloat(0x1p-25f + 0x1p-40f).bits, 0x0001);
  // 1023.5 ulps is a tie between 0x03ff (odd) and the smallest normal 0x0400.
  EXPECT_EQ(Half::FromFloat(1023.5f * 0x1p-24f).bits, 0x0400);
  // Far below the grid: signed zero.
  EXPECT_EQ(Half::FromFloat(0x1p-26f).bits, 0x0000);
  EXPECT_EQ(Half::FromFloat(1e-30f).bits, 0x0000);
  EXPECT_EQ(Half::FromFloat(-1e-30f).bits, 0x8000);
  EXPECT_EQ(Half::FromFloat(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
}

TEST(Half, OverflowsToInfinity) {
  EXPECT_EQ(Half::FromFloat(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half::FromFloat(65519.0f).bits, 0x7bff);
  EXPECT_EQ(Half::FromFloat(65519.996f).bits, 0x7bff);
  EXPECT_EQ(Half::FromFloat(65520.0f).bits, 0x7c00);
  EXPECT_EQ(Half::FromFloat(65536.0f).bits, 0x7c00);
  EXPECT_EQ(Half::FromFloat(1e10f).bits, 0x7c00);
  EXPECT_EQ(Half::FromFloat(std::numeric_limits<float>::max()).bits, 0x7c00);
  EXPECT_EQ(Half::FromFloat(-65519.0f).bits, 0xfbff);
  EXPECT_EQ(Half::FromFloat(-65520.0f).bits, 0xfc00);
  EXPECT_EQ(Half::FromFloat(-std::numeric_limits<float>::max()).bits, 0xfc00);
  EXPECT_EQ(Half::FromFloat(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(Half::FromFloat(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
}

TEST(Half, NegativeZero) {
  EXPECT_EQ(Half::FromFloat(-0.0f).bits, 0x8000);
  EXPECT_EQ(Half::FromFloat(0.0f).bits, 0x0000);
  const float f = Half{0x8000}.ToFloat();
  EXPECT_EQ(f, 0.0f);
  EXPECT_TRUE(std::signbit(f));
  EXPECT_FALSE(Half{0x8000} == Half{0x0000});  // compares bits, not values
}

TEST(Half, NaNStaysNaN) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(IsHalfNaN(Half::FromFloat(qnan).bits));
  EXPECT_TRUE(IsHalfNaN(Half::FromFloat(-qnan).bits));
  EXPECT_EQ(Half::FromFloat(-qnan).bits & 0x8000u, 0x8000u);
  // NaNs whose payload sits only in the low f32 bits must not become inf.
  for (uint32_t bits : {0x7f800001u, 0x7f801fffu, 0x7fc00000u, 0x7fffffffu, 0xff800001u,
                        0xffffffffu, 0x7fa00000u}) {
    const Half h = Half::FromFloat(FloatFromBits(bits));
    EXPECT_TRUE(IsHalfNaN(h.bits)) << std::hex << "f32 0x" << bits << " -> 0x" << h.bits;
    EXPECT_EQ(h.bits & 0x8000u, (bits >> 16) & 0x8000u) << std::hex << "sign of 0x" << bits;
  }
}

TEST(BFloat16, AllBitPatternsRoundTrip) {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const BFloat16 h{static_cast<uint16_t>(b)};
    const float f = h.ToFloat();
    // bf16 is the upper half of an f32: widening is exact.
    ASSERT_EQ(BitsOf(f), b << 16) << "bits " << b;
    const BFloat16 back = BFloat16::FromFloat(f);
    if (IsBFloat16NaN(h.bits)) {
      ASSERT_TRUE(IsBFloat16NaN(back.bits)) << "bits " << b;
      ASSERT_EQ(back.bits & 0x8000u, h.bits & 0x8000u) << "sign of NaN " << b;
    } else {
      ASSERT_EQ(back.bits, h.bits) << "bits " << b;
    }
  }
}

TEST(BFloat16, KnownValues) {
  EXPECT_EQ(BFloat16::FromFloat(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(-2.0f).bits, 0xc000);
  EXPECT_EQ(BFloat16::FromFloat(0.0f).bits, 0x0000);
  EXPECT_EQ(BFloat16::FromFloat(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::signbit(BFloat16{0x8000}.ToFloat()));
  EXPECT_EQ(BFloat16{0x3f80}.ToFloat(), 1.0f);
  EXPECT_EQ(BFloat16{0x4049}.ToFloat(), 3.140625f);
  EXPECT_EQ(BFloat16::FromFloat(3.14159265f).bits, 0x4049);
  EXPECT_EQ(BFloat16::FromFloat(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(BFloat16::FromFloat(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  // bf16 keeps f32's range: f16's overflow threshold is nothing special here.
  EXPECT_EQ(BFloat16::FromFloat(65520.0f).ToFloat(), 65536.0f);
  EXPECT_EQ(BFloat16::FromFloat(1e38f).ToFloat(), FloatFromBits(0x7e960000u));
}

TEST(BFloat16, RoundsTiesToEven) {
  // f32 0x3f808000 is halfway between bf16 0x3f80 (even) and 0x3f81.
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x3f808000u)).bits, 0x3f80);
  // 0x3f818000 is halfway between 0x3f81 (odd) and 0x3f82.
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x3f818000u)).bits, 0x3f82);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x3f808001u)).bits, 0x3f81);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x3f807fffu)).bits, 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0xbf818000u)).bits, 0xbf82);
  // Rounding carries into the exponent.
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x3fffc000u)).bits, 0x4000);
  // Subnormals round on the same grid.
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x00008000u)).bits, 0x0000);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x00018000u)).bits, 0x0002);
}

TEST(BFloat16, OverflowsToInfinity) {
  // The largest f32 is above the largest bf16 (0x7f7f) by more than half an ulp.
  EXPECT_EQ(BFloat16::FromFloat(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(BFloat16::FromFloat(-std::numeric_limits<float>::max()).bits, 0xff80);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x7f7f7fffu)).bits, 0x7f7f);
  EXPECT_EQ(BFloat16::FromFloat(FloatFromBits(0x7f7f8000u)).bits, 0x7f80);  // tie to even
}

TEST(BFloat16, QuietsNaN) {
  // Truncating these would give inf (0x7f80) or, with rounding, carry into the
  // sign bit; the result must be a NaN of the same sign.
  for (uint32_t bits :
       {0x7f800001u, 0x7f80ffffu, 0x7fffffffu, 0x7fc00000u, 0xff800001u, 0xffffffffu}) {
    const BFloat16 h = BFloat16::FromFloat(FloatFromBits(bits));
    EXPECT_TRUE(IsBFloat16NaN(h.bits)) << std::hex << "f32 0x" << bits << " -> 0x" << h.bits;
    EXPECT_EQ(h.bits & 0x8000u, (bits >> 16) & 0x8000u) << std::hex << "sign of 0x" << bits;
    EXPECT_NE(h.bits & 0x0040u, 0u) << std::hex << "quiet bit of 0x" << bits;
  }
}

TEST(BFloat16, MatchesNearestOnF32Sweep) {
  for (uint64_t b = 0; b <= 0xffffffffull; b += 509) {
    const float f = FloatFromBits(static_cast<uint32_t>(b));
    if (std::isnan(f)) continue;
    const uint16_t got = BFloat16::FromFloat(f).bits;
    // Candidates: truncation and the next bf16 away from zero.
    const uint32_t trunc = static_cast<uint32_t>(b) >> 16;
    const double lo = FloatFromBits(trunc << 16);
    const double hi = (trunc & 0x7fffu) == 0x7f7fu ? std::ldexp(1.0, 128) * (lo < 0 ? -1 : 1)
                                                   : FloatFromBits((trunc + 1) << 16);
    const double dlo = std::fabs(f - lo), dhi = std::fabs(hi - f);
    uint32_t want;
    if (std::isinf(f)) {
      want = trunc;
    } else if (dlo < dhi) {
      want = trunc;
    } else if (dhi < dlo) {
      want = trunc + 1;
    } else {
      want = (trunc & 1u) ? trunc + 1 : trunc;
    }
    ASSERT_EQ(got, want) << std::hex << "f32 bits 0x" << b;
  }
}

}  // namespace
}  // namespace kiln
