#include "tensor/dtype.h"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::kAllDTypes;

static_assert(DTypeOf<float>::value == DType::kF32);
static_assert(DTypeOf<Half>::value == DType::kF16);
static_assert(DTypeOf<BFloat16>::value == DType::kBF16);
static_assert(DTypeOf<int32_t>::value == DType::kI32);
static_assert(DTypeOf<int64_t>::value == DType::kI64);
static_assert(DTypeOf<uint8_t>::value == DType::kU8);
static_assert(DTypeOf<bool>::value == DType::kBool);
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<BFloat16>);

TEST(DType, Names) {
  EXPECT_EQ(DTypeName(DType::kF32), "f32");
  EXPECT_EQ(DTypeName(DType::kF16), "f16");
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(DTypeName(DType::kI32), "i32");
  EXPECT_EQ(DTypeName(DType::kI64), "i64");
  EXPECT_EQ(DTypeName(DType::kU8), "u8");
  EXPECT_EQ(DTypeName(DType::kBool), "bool");
}

TEST(DType, Sizes) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI32), 4u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kU8), 1u);
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
}

TEST(DType, ParseRoundTrips) {
  for (DType d : kAllDTypes) {
    std::optional<DType> parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(d);
    EXPECT_EQ(*parsed, d) << DTypeName(d);
  }
}

TEST(DType, NamesAreDistinct) {
  for (DType a : kAllDTypes) {
    for (DType b : kAllDTypes) {
      if (a != b) {
        EXPECT_NE(DTypeName(a), DTypeName(b));
      }
    }
  }
}

TEST(DType, ParseRejectsUnknownNames) {
  for (const char* name : {"", "F32", "float", "float32", "f64", "f32 ", " f32", "i8", "int",
                           "bfloat16", "half", "boolean", "u16", "f3"}) {
    EXPECT_FALSE(ParseDType(name).has_value()) << "'" << name << "'";
  }
  // An embedded NUL must not let a prefix match.
  EXPECT_FALSE(ParseDType(absl::string_view("f32\0x", 5)).has_value());
}

TEST(DType, Classes) {
  EXPECT_TRUE(IsFloating(DType::kF32));
  EXPECT_TRUE(IsFloating(DType::kF16));
  EXPECT_TRUE(IsFloating(DType::kBF16));
  EXPECT_FALSE(IsFloating(DType::kI32));
  EXPECT_FALSE(IsFloating(DType::kI64));
  EXPECT_FALSE(IsFloating(DType::kU8));
  EXPECT_FALSE(IsFloating(DType::kBool));

  EXPECT_FALSE(IsInteger(DType::kF32));
  EXPECT_FALSE(IsInteger(DType::kF16));
  EXPECT_FALSE(IsInteger(DType::kBF16));
  EXPECT_TRUE(IsInteger(DType::kI32));
  EXPECT_TRUE(IsInteger(DType::kI64));
  EXPECT_TRUE(IsInteger(DType::kU8));
  EXPECT_FALSE(IsInteger(DType::kBool));  // bool is neither
}

TEST(DType, LosslessConversionTable) {
  // Row: from; column: to, in the order of kAllDTypes (f32 f16 bf16 i32 i64 u8 bool).
  // Derived from the value sets: u8 needs 8 significant bits (bf16 has 8, f16
  // 11, f32 24); i32 needs 31 (only i64 holds it); f16 and bf16 have
  // precisions and ranges the other cannot hold; bool is 0 or 1.
  constexpr bool T = true, F = false;
  constexpr bool kExpected[7][7] = {
      /* f32  */ {T, F, F, F, F, F, F},
      /* f16  */ {T, T, F, F, F, F, F},
      /* bf16 */ {T, F, T, F, F, F, F},
      /* i32  */ {F, F, F, T, T, F, F},
      /* i64  */ {F, F, F, F, T, F, F},
      /* u8   */ {T, T, T, T, T, T, F},
      /* bool */ {T, T, T, T, T, T, T},
  };
  for (size_t i = 0; i < kAllDTypes.size(); ++i) {
    for (size_t j = 0; j < kAllDTypes.size(); ++j) {
      EXPECT_EQ(IsLosslessConversion(kAllDTypes[i], kAllDTypes[j]), kExpected[i][j])
          << DTypeName(kAllDTypes[i]) << " -> " << DTypeName(kAllDTypes[j]);
    }
  }
}

TEST(DTypeDeathTest, UnknownEnumValueIsAnInternalError) {
  const DType bogus = static_cast<DType>(99);
  EXPECT_DEATH(DTypeName(bogus), "unknown DType");
  EXPECT_DEATH(DTypeSize(bogus), "unknown DType");
}

}  // namespace
}  // namespace kiln
