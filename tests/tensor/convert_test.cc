#include "tensor/convert.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::Bits;
using testing::kInf;
using testing::kNaN;

constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// std::vector<bool> has no data(), so bools travel as bytes.
template <typename T>
using ElementOf = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename To, typename From>
std::vector<ElementOf<To>> Convert(const std::vector<ElementOf<From>>& src) {
  std::vector<ElementOf<To>> dst(src.size());
  ConvertElements(DTypeOf<From>::value, src.data(), DTypeOf<To>::value, dst.data(),
                  static_cast<int64_t>(src.size()));
  return dst;
}

std::vector<Half> Halves(std::initializer_list<float> values) {
  std::vector<Half> out;
  for (float f : values) out.push_back(Half::FromFloat(f));
  return out;
}

// ---- float -> integer

TEST(ConvertElements, FloatToIntTruncatesTowardZero) {
  EXPECT_THAT((Convert<int32_t, float>({2.7f, -2.7f, 0.5f, -0.5f, 0.0f, -0.0f, 7.0f, -7.99f})),
              ElementsAre(2, -2, 0, 0, 0, 0, 7, -7));
  EXPECT_THAT((Convert<int64_t, float>({1.9f, -1.9f, 123456.75f})), ElementsAre(1, -1, 123456));
  EXPECT_THAT((Convert<uint8_t, float>({254.9f, 0.99f, -0.99f})), ElementsAre(254, 0, 0));
}

TEST(ConvertElements, FloatToInt32Saturates) {
  EXPECT_THAT((Convert<int32_t, float>(
                  {1e10f, -1e10f, kInf, -kInf, 2147483648.0f, -2147483648.0f, 2147483520.0f})),
              ElementsAre(kI32Max, kI32Min, kI32Max, kI32Min, kI32Max, kI32Min, 2147483520));
}

TEST(ConvertElements, FloatToUint8Saturates) {
  EXPECT_THAT((Convert<uint8_t, float>(
                  {255.0f, 255.9f, 256.0f, 300.0f, 1e30f, kInf, -1.0f, -300.0f, -kInf})),
              ElementsAre(255, 255, 255, 255, 255, 255, 0, 0, 0));
}

TEST(ConvertElements, FloatToInt64Saturates) {
  const float two63 = 0x1p63f;
  EXPECT_THAT((Convert<int64_t, float>({1e30f, -1e30f, two63, -two63, kInf, -kInf, 0x1p62f})),
              ElementsAre(kI64Max, kI64Min, kI64Max, kI64Min, kI64Max, kI64Min, int64_t{1} << 62));
  // The largest float below 2^63 converts exactly.
  const float below = std::nextafter(two63, 0.0f);
  EXPECT_THAT((Convert<int64_t, float>({below})),
              ElementsAre(static_cast<int64_t>(static_cast<double>(below))));
}

TEST(ConvertElements, NaNBecomesZero) {
  const float neg_nan = -kNaN;
  EXPECT_THAT((Convert<int32_t, float>({kNaN, neg_nan})), ElementsAre(0, 0));
  EXPECT_THAT((Convert<int64_t, float>({kNaN, neg_nan})), ElementsAre(0, 0));
  EXPECT_THAT((Convert<uint8_t, float>({kNaN, neg_nan})), ElementsAre(0, 0));
  EXPECT_THAT((Convert<int32_t, Half>({Half{0x7e00}, Half{0xfc01}})), ElementsAre(0, 0));
  EXPECT_THAT((Convert<int64_t, BFloat16>({BFloat16{0x7fc0}})), ElementsAre(0));
}

TEST(ConvertElements, HalfAndBFloat16ToInt) {
  EXPECT_THAT((Convert<int32_t, Half>(Halves({65504.0f, -65504.0f, 2.5f, -2.5f}))),
              ElementsAre(65504, -65504, 2, -2));
  EXPECT_THAT((Convert<int32_t, Half>({Half{0x7c00}, Half{0xfc00}})),
              ElementsAre(kI32Max, kI32Min));
  EXPECT_THAT((Convert<uint8_t, Half>({Half{0x7c00}, Half{0xfc00}, Half::FromFloat(300.0f)})),
              ElementsAre(255, 0, 255));
  EXPECT_THAT((Convert<int64_t, BFloat16>({BFloat16::FromFloat(1e38f), BFloat16::FromFloat(-1e38f),
                                           BFloat16::FromFloat(-3.75f)})),
              ElementsAre(kI64Max, kI64Min, -3));
  EXPECT_THAT((Convert<int32_t, BFloat16>({BFloat16::FromFloat(3e9f)})), ElementsAre(kI32Max));
}

// ---- integer -> integer

TEST(ConvertElements, IntToIntWrapsAround) {
  EXPECT_THAT((Convert<uint8_t, int64_t>({300, -1, 256, 255, -256, kI64Max, kI64Min})),
              ElementsAre(44, 255, 0, 255, 0, 255, 0));
  EXPECT_THAT((Convert<int32_t, int64_t>({(int64_t{1} << 32) + 5, int64_t{1} << 31, -1, kI64Max,
                                          kI64Min, -(int64_t{1} << 31) - 1})),
              ElementsAre(5, kI32Min, -1, -1, 0, kI32Max));
  EXPECT_THAT((Convert<uint8_t, int32_t>({-1, 511, 44, kI32Min})), ElementsAre(255, 255, 44, 0));
}

TEST(ConvertElements, IntToIntWidens) {
  EXPECT_THAT((Convert<int64_t, int32_t>({-1, kI32Min, kI32Max})),
              ElementsAre(-1, int64_t{kI32Min}, int64_t{kI32Max}));
  // u8 is unsigned: 200 stays 200, not -56.
  EXPECT_THAT((Convert<int32_t, uint8_t>({200, 255, 0})), ElementsAre(200, 255, 0));
  EXPECT_THAT((Convert<int64_t, uint8_t>({255})), ElementsAre(255));
}

// ---- anything <-> bool

TEST(ConvertElements, AnyToBoolIsNonZero) {
  EXPECT_THAT((Convert<bool, float>({0.0f, -0.0f, 0.5f, -3.0f, kNaN, kInf, 1e-45f})),
              ElementsAre(0, 0, 1, 1, 1, 1, 1));
  EXPECT_THAT((Convert<bool, int32_t>({0, 1, -1, 256, kI32Min})), ElementsAre(0, 1, 1, 1, 1));
  // Values whose low bits are zero are still non-zero.
  EXPECT_THAT((Convert<bool, int64_t>({int64_t{1} << 40, int64_t{1} << 32, 256, 0})),
              ElementsAre(1, 1, 1, 0));
  EXPECT_THAT((Convert<bool, uint8_t>({0, 2, 255})), ElementsAre(0, 1, 1));
  EXPECT_THAT(
      (Convert<bool, Half>({Half{0x0000}, Half{0x8000}, Half{0x0001}, Half{0x3800}, Half{0x7e00}})),
      ElementsAre(0, 0, 1, 1, 1));
  EXPECT_THAT((Convert<bool, BFloat16>({BFloat16{0x0000}, BFloat16{0x8000}, BFloat16{0x0001}})),
              ElementsAre(0, 0, 1));
}

TEST(ConvertElements, BoolToAnyIsZeroOrOne) {
  const std::vector<uint8_t> bools = {0, 1, 1, 0};
  EXPECT_THAT((Convert<float, bool>(bools)), ElementsAre(0.0f, 1.0f, 1.0f, 0.0f));
  EXPECT_THAT((Convert<int32_t, bool>(bools)), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT((Convert<int64_t, bool>(bools)), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT((Convert<uint8_t, bool>(bools)), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(Bits(Convert<Half, bool>(bools)), ElementsAre(0, 0x3c00, 0x3c00, 0));
  EXPECT_THAT(Bits(Convert<BFloat16, bool>(bools)), ElementsAre(0, 0x3f80, 0x3f80, 0));
}

// ---- float -> float

TEST(ConvertElements, F32ToF16Rounds) {
  EXPECT_THAT(Bits(Convert<Half, float>({1.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f,
                                         65520.0f, -65520.0f, 0x1p-25f, -0.0f})),
              ElementsAre(0x3c00, 0x3c00, 0x3c02, 0x7bff, 0x7c00, 0xfc00, 0x0000, 0x8000));
  const std::vector<Half> nan = Convert<Half, float>({kNaN});
  EXPECT_TRUE(std::isnan(nan[0].ToFloat()));
}

TEST(ConvertElements, F32ToBF16Rounds) {
  const float tie = std::bit_cast<float>(0x3f808000u);
  const float above = std::bit_cast<float>(0x3f808001u);
  EXPECT_THAT(Bits(Convert<BFloat16, float>({1.0f, tie, above, -0.0f})),
              ElementsAre(0x3f80, 0x3f80, 0x3f81, 0x8000));
  const std::vector<BFloat16> nan = Convert<BFloat16, float>({kNaN});
  EXPECT_TRUE(std::isnan(nan[0].ToFloat()));
}

TEST(ConvertElements, HalfWidthsToF32AreExact) {
  std::vector<Half> halves;
  for (uint32_t b = 0; b < 0x7c00u; b += 7) halves.push_back(Half{static_cast<uint16_t>(b)});
  const std::vector<float> f = Convert<float, Half>(halves);
  for (size_t i = 0; i < halves.size(); ++i) ASSERT_EQ(f[i], halves[i].ToFloat()) << i;
  EXPECT_THAT((Convert<float, BFloat16>({BFloat16{0x3f80}, BFloat16{0x7f7f}})),
              ElementsAre(1.0f, std::bit_cast<float>(0x7f7f0000u)));
}

TEST(ConvertElements, F16AndBF16ConvertThroughOneRounding) {
  // f16 65504 -> bf16: between 65280 and 65536, nearer 65536.
  EXPECT_THAT(Bits(Convert<BFloat16, Half>({Half{0x7bff}, Half{0x3c00}, Half{0x0001}})),
              ElementsAre(0x4780, 0x3f80, 0x3380));
  // bf16 -> f16: overflow to inf, underflow to zero, the smallest subnormal.
  EXPECT_THAT(
      Bits(Convert<Half, BFloat16>({BFloat16::FromFloat(1e38f), BFloat16::FromFloat(0x1p-30f),
                                    BFloat16::FromFloat(0x1p-24f), BFloat16{0x3f80}})),
      ElementsAre(0x7c00, 0x0000, 0x0001, 0x3c00));
}

// ---- integer -> float

TEST(ConvertElements, IntToFloatRoundsToNearest) {
  // 2^24 + 1 is a tie between 2^24 and 2^24 + 2: to even.
  EXPECT_THAT((Convert<float, int32_t>({16777217, 16777219, -16777217, 7, kI32Max})),
              ElementsAre(16777216.0f, 16777220.0f, -16777216.0f, 7.0f, 2147483648.0f));
  EXPECT_THAT((Convert<float, int64_t>({kI64Max, kI64Min})), ElementsAre(0x1p63f, -0x1p63f));
  EXPECT_THAT((Convert<float, uint8_t>({255, 0})), ElementsAre(255.0f, 0.0f));
  EXPECT_THAT(Bits(Convert<Half, int32_t>({65504, 65519, 65520, 70000, -70000, 2049})),
              ElementsAre(0x7bff, 0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x6800));
  EXPECT_THAT(Bits(Convert<BFloat16, uint8_t>({255, 1})), ElementsAre(0x437f, 0x3f80));
}

// One rounding, not two: 2^60 + 2^36 + 1 lies just above the midpoint between
// the floats 2^60 and 2^60 + 2^37, so its nearest float is 2^60 + 2^37.
// Rounding first to double (which drops the +1) lands exactly on the midpoint
// and then ties to even, giving 2^60.
TEST(ConvertElements, Int64ToF32RoundsOnceToNearest) {
  const int64_t x = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  const float nearest = 0x1p60f + 0x1p37f;
  EXPECT_THAT((Convert<float, int64_t>({x, -x})), ElementsAre(nearest, -nearest));
}

// The same for bf16 from i32: 2^24 + 2^16 + 1 is just above the midpoint
// between bf16 2^24 and 2^24 + 2^17; through f32 it becomes exactly the
// midpoint (2^24 + 2^16) and ties to even (2^24).
TEST(ConvertElements, Int32ToBF16RoundsOnceToNearest) {
  const int32_t x = (1 << 24) + (1 << 16) + 1;
  const BFloat16 nearest = BFloat16::FromFloat(0x1p24f + 0x1p17f);
  EXPECT_THAT(Bits(Convert<BFloat16, int32_t>({x})), ElementsAre(nearest.bits));
  EXPECT_EQ(nearest.ToFloat(), 0x1p24f + 0x1p17f);
}

// ---- same dtype and edge counts

TEST(ConvertElements, SameDTypeCopiesBits) {
  const float payload_nan = std::bit_cast<float>(0x7fc12345u);
  const std::vector<float> out = Convert<float, float>({payload_nan, -0.0f, 1.5f});
  EXPECT_EQ(std::bit_cast<uint32_t>(out[0]), 0x7fc12345u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[1]), 0x80000000u);
  EXPECT_EQ(out[2], 1.5f);
  EXPECT_THAT(Bits(Convert<Half, Half>({Half{0x7c01}, Half{0x8000}})),
              ElementsAre(0x7c01, 0x8000));
}

TEST(ConvertElements, ZeroCountWritesNothing) {
  const float src[1] = {5.0f};
  int32_t dst[1] = {-123};
  ConvertElements(DType::kF32, src, DType::kI32, dst, 0);
  EXPECT_EQ(dst[0], -123);
  float fdst[1] = {-1.0f};
  ConvertElements(DType::kF32, src, DType::kF32, fdst, 0);
  EXPECT_EQ(fdst[0], -1.0f);
}

TEST(ConvertElements, EveryPairConvertsSmallIntegersExactly) {
  // 0, 1 and the values every dtype holds: a conversion between any two dtypes
  // keeps them (bool keeps 0 and 1).
  const DType all[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32,
                       DType::kI64, DType::kU8,  DType::kBool};
  const std::vector<double> values = {0, 1};
  for (DType from : all) {
    for (DType to : all) {
      // Build the source from f32 values, convert, and read back as f32.
      std::vector<float> f(values.begin(), values.end());
      std::vector<char> src(f.size() * DTypeSize(from));
      std::vector<char> dst(f.size() * DTypeSize(to));
      std::vector<float> back(f.size());
      ConvertElements(DType::kF32, f.data(), from, src.data(), static_cast<int64_t>(f.size()));
      ConvertElements(from, src.data(), to, dst.data(), static_cast<int64_t>(f.size()));
      ConvertElements(to, dst.data(), DType::kF32, back.data(), static_cast<int64_t>(f.size()));
      EXPECT_THAT(back, ElementsAreArray(f)) << DTypeName(from) << " -> " << DTypeName(to);
    }
  }
}

// ---- SaturatingFloatToInt64

TEST(SaturatingFloatToInt64, TruncatesAndClamps) {
  EXPECT_EQ(SaturatingFloatToInt64(3.9, 0, 10), 3);
  EXPECT_EQ(SaturatingFloatToInt64(-3.9, -10, 10), -3);
  EXPECT_EQ(SaturatingFloatToInt64(-3.9, 0, 10), 0);
  EXPECT_EQ(SaturatingFloatToInt64(10.5, 0, 10), 10);
  EXPECT_EQ(SaturatingFloatToInt64(11, 0, 10), 10);
  EXPECT_EQ(SaturatingFloatToInt64(1e300, kI64Min, kI64Max), kI64Max);
  EXPECT_EQ(SaturatingFloatToInt64(-1e300, kI64Min, kI64Max), kI64Min);
  EXPECT_EQ(SaturatingFloatToInt64(0x1p63, kI64Min, kI64Max), kI64Max);
  EXPECT_EQ(SaturatingFloatToInt64(-0x1p63, kI64Min, kI64Max), kI64Min);
  EXPECT_EQ(SaturatingFloatToInt64(0x1p62, kI64Min, kI64Max), int64_t{1} << 62);
  EXPECT_EQ(SaturatingFloatToInt64(0x1.fffffffffffffp62, kI64Min, kI64Max),
            static_cast<int64_t>(0x1.fffffffffffffp62));
  EXPECT_EQ(SaturatingFloatToInt64(std::numeric_limits<double>::infinity(), 0, 255), 255);
  EXPECT_EQ(SaturatingFloatToInt64(-std::numeric_limits<double>::infinity(), 0, 255), 0);
  EXPECT_EQ(SaturatingFloatToInt64(std::nan(""), kI64Min, kI64Max), 0);
  EXPECT_EQ(SaturatingFloatToInt64(-0.0, kI64Min, kI64Max), 0);
}

}  // namespace
}  // namespace kiln
