// Tests of cast: the conversion rules of tensor/convert.h for every dtype
// pair, checked against a reference written independently of the library,
// plus layouts and errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::Bools;
using testing::F32;
using testing::I32;
using testing::kAllDTypes;
using testing::kInf;
using testing::kNaN;
using testing::kNumericDTypes;
using testing::MakeFloat;
using testing::MakeInt;
using testing::ReadAny;
using testing::ReadF32;
using testing::ReadI64;
using testing::SameFloats;
using testing::Vec;

// ---- cast

// Round-to-nearest-even into a binary format with `digits` significant bits,
// smallest normal exponent `min_exp` and largest finite `max_finite`; written
// independently of the library. long double holds every int64 exactly.
static_assert(std::numeric_limits<long double>::digits >= 64);
long double RoundBinary(long double v, int digits, int min_exp, long double max_finite) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int exponent = std::max(e - 1, min_exp);
  const long double ulp = std::ldexp(1.0L, exponent - (digits - 1));
  long double r = std::nearbyint(std::fabs(v) / ulp) * ulp;
  if (r > max_finite) r = std::numeric_limits<long double>::infinity();
  return std::copysign(r, v);
}

long double RoundToFloatDType(DType dtype, long double v) {
  switch (dtype) {
    case DType::kF32: return RoundBinary(v, 24, -126, std::numeric_limits<float>::max());
    case DType::kF16: return RoundBinary(v, 11, -14, 65504.0L);
    case DType::kBF16: return RoundBinary(v, 8, -126, std::ldexp(255.0L, 120));
    default: return 0;
  }
}

// A value of any dtype: integers (and bool) exactly, floats as float.
struct Value {
  bool is_int;
  int64_t i;
  float f;
};

// The conversion rules of tensor/convert.h, written out for one value.
Value ExpectedCast(DType from, Value v, DType to) {
  if (to == DType::kBool) return {true, v.is_int ? (v.i != 0) : (v.f != 0), 0};
  if (IsFloating(to)) {
    const long double x = v.is_int ? static_cast<long double>(v.i) : v.f;
    return {false, 0, static_cast<float>(RoundToFloatDType(to, x))};
  }
  int64_t lo = 0, hi = 0;
  switch (to) {
    case DType::kI32: lo = INT32_MIN; hi = INT32_MAX; break;
    case DType::kI64: lo = INT64_MIN; hi = INT64_MAX; break;
    default: lo = 0; hi = 255; break;
  }
  if (v.is_int) {  // modular
    const uint64_t u = static_cast<uint64_t>(v.i);
    switch (to) {
      case DType::kI32: return {true, static_cast<int32_t>(static_cast<uint32_t>(u)), 0};
      case DType::kU8: return {true, static_cast<uint8_t>(u), 0};
      default: return {true, v.i, 0};
    }
  }
  if (std::isnan(v.f)) return {true, 0, 0};
  const long double t = std::trunc(static_cast<long double>(v.f));
  if (t >= static_cast<long double>(hi)) return {true, hi, 0};
  if (t <= static_cast<long double>(lo)) return {true, lo, 0};
  return {true, static_cast<int64_t>(t), 0};
}

std::vector<Value> SourceValues(DType dtype) {
  std::vector<Value> out;
  auto floats = [&](std::initializer_list<float> values) {
    for (float v : values) out.push_back({false, 0, static_cast<float>(RoundToFloatDType(dtype, v))});
  };
  auto ints = [&](std::initializer_list<int64_t> values) {
    for (int64_t v : values) out.push_back({true, v, 0});
  };
  switch (dtype) {
    case DType::kF32:
      floats({0.f, -0.f, 1.5f, -1.5f, 2.5f, -2.5f, 0.1f, 0.7f, 255.9f, 256.f, -129.7f, 3e9f,
              -3e9f, 1e20f, -1e20f, 65519.f, 65520.f, 1e-8f, -1e-8f, 3.4e38f, 1e-40f, kNaN, kInf,
              -kInf, 2147483520.f, 2147483648.f, -2147483648.f, 9.2233715e18f, 9.223372e18f,
              1.0009766f, 1.0014648f});
      break;
    case DType::kF16:
      floats({0.f, -0.f, 1.5f, -1.5f, 2.5f, 0.1f, 255.5f, 300.f, -129.5f, 65504.f, -65504.f,
              6e-8f, -3e-5f, kNaN, kInf, -kInf, 1.0009766f, 1.0029297f});
      break;
    case DType::kBF16:
      floats({0.f, 1.5f, -2.5f, 0.1f, 255.f, 256.f, 3e9f, -3e9f, 1e20f, 1e38f, 65536.f, kNaN,
              kInf, -kInf, 1e-39f});
      break;
    case DType::kI32:
      ints({0, 1, -1, 127, 128, 255, 256, -129, INT32_MAX, INT32_MIN, 16777216, 2049, 2051,
            65519, 65520, 70000, -70000, 257, 259});
      break;
    case DType::kI64:
      ints({0, -1, 255, 256, (int64_t{1} << 32) + 5, -(int64_t{1} << 32) - 5, INT64_MAX,
            INT64_MIN, int64_t{1} << 53, 300, 16777219, -129});
      break;
    case DType::kU8:
      ints({0, 1, 127, 128, 200, 255});
      break;
    case DType::kBool:
      ints({0, 1});
      break;
  }
  return out;
}

Tensor MakeValues(DType dtype, const std::vector<Value>& values) {
  const std::vector<int64_t> sizes = {static_cast<int64_t>(values.size())};
  if (IsFloating(dtype)) {
    std::vector<float> f;
    for (const Value& v : values) f.push_back(v.f);
    return MakeFloat(dtype, f, sizes);
  }
  std::vector<int64_t> i;
  for (const Value& v : values) i.push_back(v.i);
  return MakeInt(dtype, i, sizes);
}

// Casts `values` of `from` to `to` and checks every element.
void ExpectCast(DType from, const std::vector<Value>& values, DType to) {
  SCOPED_TRACE(::testing::Message() << DTypeName(from) << " -> " << DTypeName(to));
  Tensor x = MakeValues(from, values);
  ASSERT_TRUE(x.ok()) << x.status();
  Tensor y = cast(x, to);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.dtype(), to);
  EXPECT_EQ(y.shape(), x.shape());
  if (IsFloating(to)) {
    const std::vector<float> got = ReadF32(y);
    ASSERT_EQ(got.size(), values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      const Value& v = values[k];
      const float want = ExpectedCast(from, v, to).f;
      SCOPED_TRACE(::testing::Message() << "input " << (v.is_int ? static_cast<double>(v.i) : v.f)
                                        << (v.is_int ? " (int " : " (") << v.i << ")");
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[k])) << got[k];
      } else {
        EXPECT_EQ(got[k], want);
        EXPECT_EQ(std::signbit(got[k]), std::signbit(want));
      }
    }
  } else {
    const std::vector<int64_t> got = ReadI64(y);
    ASSERT_EQ(got.size(), values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      const Value& v = values[k];
      SCOPED_TRACE(::testing::Message() << "input " << (v.is_int ? static_cast<double>(v.i) : v.f)
                                        << " (int " << v.i << ")");
      EXPECT_EQ(got[k], ExpectedCast(from, v, to).i);
    }
  }
}

TEST(Cast, FollowsTheConversionRulesForEveryDTypePair) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) ExpectCast(from, SourceValues(from), to);
  }
}

TEST(Cast, FloatToIntegerTruncatesSaturatesAndMapsNaNToZero) {
  Tensor x = F32({2.7f, -2.7f, 1e10f, -1e10f, kNaN, kInf, -kInf, 255.99f, -0.5f}, {9});
  EXPECT_EQ(ReadI64(cast(x, DType::kI32)),
            (std::vector<int64_t>{2, -2, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 255, 0}));
  EXPECT_EQ(ReadI64(cast(x, DType::kU8)),
            (std::vector<int64_t>{2, 0, 255, 0, 0, 255, 0, 255, 0}));
  EXPECT_EQ(ReadI64(cast(x, DType::kI64)),
            (std::vector<int64_t>{2, -2, 10000000000, -10000000000, 0, INT64_MAX, INT64_MIN, 255,
                                  0}));
  EXPECT_EQ(ReadI64(cast(F32({1e19f, -1e19f}, {2}), DType::kI64)),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN}));
}

TEST(Cast, IntegerToIntegerWrapsAround) {
  EXPECT_EQ(ReadI64(cast(Vec(DType::kI64, {(int64_t{1} << 32) + 5, -1, INT64_MIN}), DType::kI32)),
            (std::vector<int64_t>{5, -1, 0}));
  EXPECT_EQ(ReadI64(cast(Vec(DType::kI32, {-1, 256, 300, -129}), DType::kU8)),
            (std::vector<int64_t>{255, 0, 44, 127}));
  EXPECT_EQ(ReadI64(cast(Vec(DType::kU8, {200, 255}), DType::kI32)),
            (std::vector<int64_t>{200, 255}));
  EXPECT_EQ(ReadI64(cast(Vec(DType::kI32, {INT32_MIN}), DType::kI64)),
            (std::vector<int64_t>{INT32_MIN}));
}

TEST(Cast, IntegerToFloatRoundsToNearest) {
  // Each value is rounded once, directly to the target: a detour through a
  // wider float type would round twice and can land on the wrong neighbour.
  // 2^24 + 2^16 + 1 is just above the midpoint of two bf16 neighbours.
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI32, {16842753}), DType::kBF16)),
            (std::vector<float>{16908288.f}));
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI64, {16842753}), DType::kBF16)),
            (std::vector<float>{16908288.f}));
  // 2^60 + 2^36 + 1 is just above the midpoint of two f32 neighbours.
  const int64_t v = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI64, {v}), DType::kF32)),
            (std::vector<float>{std::ldexp(1.0f, 60) + std::ldexp(1.0f, 37)}));
  // Plain cases: exact below 2^24, ties to even above.
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI32, {16777216, 16777217, 16777219, -3}), DType::kF32)),
            (std::vector<float>{16777216.f, 16777216.f, 16777220.f, -3.f}));
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI32, {2049, 2051, 65519, 65520}), DType::kF16)),
            (std::vector<float>{2048.f, 2052.f, 65504.f, kInf}));
  EXPECT_EQ(ReadF32(cast(Vec(DType::kI32, {257, 259}), DType::kBF16)),
            (std::vector<float>{256.f, 260.f}));
}

TEST(Cast, FloatToFloatRoundsToNearestEven) {
  // 1 + 2^-11 is the midpoint between 1 and the next f16: ties to even (1).
  EXPECT_EQ(ReadF32(cast(F32({1.00048828125f, 1.00146484375f, 65519.f, 65520.f, 1e-8f}, {5}),
                         DType::kF16)),
            (std::vector<float>{1.f, 1.001953125f, 65504.f, kInf, 0.f}));
  // 3.4e38 lies above the midpoint of bf16's largest finite value and 2^128.
  EXPECT_EQ(ReadF32(cast(F32({1.00390625f, 1.01171875f, 3.4e38f}, {3}), DType::kBF16)),
            (std::vector<float>{1.f, 1.015625f, kInf}));
  // f16 -> bf16 and back.
  EXPECT_EQ(ReadF32(cast(MakeFloat(DType::kF16, {1.0009765625f}, {1}), DType::kBF16)),
            (std::vector<float>{1.f}));
  EXPECT_EQ(ReadF32(cast(MakeFloat(DType::kBF16, {1e10f}, {1}), DType::kF16)),
            (std::vector<float>{kInf}));
  for (float v : ReadF32(cast(F32({kNaN}, {1}), DType::kBF16))) EXPECT_TRUE(std::isnan(v));
  for (float v : ReadF32(cast(F32({kNaN}, {1}), DType::kF16))) EXPECT_TRUE(std::isnan(v));
}

TEST(Cast, ToBoolIsNonZeroAndFromBoolIsZeroOrOne) {
  EXPECT_EQ(ReadI64(cast(F32({0, -0.f, 0.5f, -2, kNaN, kInf}, {6}), DType::kBool)),
            (std::vector<int64_t>{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(ReadI64(cast(Vec(DType::kI32, {0, 256, -1}), DType::kBool)),
            (std::vector<int64_t>{0, 1, 1}));
  Tensor b = Bools({1, 0}, {2});
  for (DType to : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(to));
    EXPECT_EQ(ReadAny(cast(b, to)), (std::vector<double>{1, 0}));
  }
}

TEST(Cast, SameDTypeKeepsTheValues) {
  Tensor x = F32({1.25, kNaN, -0.f}, {3});
  Tensor y = cast(x, DType::kF32);
  EXPECT_EQ(y.dtype(), DType::kF32);
  EXPECT_TRUE(SameFloats(ReadF32(y), {1.25, kNaN, 0}));
  EXPECT_EQ(ReadI64(cast(Vec(DType::kU8, {255}), DType::kU8)), (std::vector<int64_t>{255}));
}

TEST(Cast, NonContiguousAndBroadcastInputs) {
  Tensor x = transpose(F32({1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, {2, 3}), 0, 1);
  Tensor y = cast(x, DType::kI32);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadI64(y), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  Tensor e = cast(expand(F32({-1.5}, {1}), {2, 3}), DType::kBF16);
  EXPECT_EQ(ReadF32(e), std::vector<float>(6, -1.5f));
}

TEST(Cast, MakesMixedDTypeArithmeticPossible) {
  Tensor a = F32({1.5, 2.5}, {2});
  Tensor b = MakeFloat(DType::kF16, {1, 2}, {2});
  EXPECT_FALSE((a + b).ok());
  EXPECT_EQ(ReadF32(a + cast(b, DType::kF32)), (std::vector<float>{2.5, 4.5}));
  EXPECT_EQ(ReadI64(cast(a, DType::kI32) + I32({1, 1}, {2})), (std::vector<int64_t>{2, 3}));
}

TEST(Cast, PassesOnErrorsAndRejectsUndefined) {
  Tensor bad = scalar(2.5, DType::kI32);
  EXPECT_EQ(cast(bad, DType::kF32).status(), bad.status());
  EXPECT_EQ(cast(Tensor(), DType::kF32).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kiln
