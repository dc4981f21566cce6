// Tests of the binary elementwise ops: hand-computed values for every
// dtype, NumPy broadcasting, the scalar overloads and operators, integer
// semantics, and the errors. Comparisons and where are tested in
// compare_test.cc, cast in cast_test.cc.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllBinaryOps;
using testing::AllClose;
using testing::ArithmeticOps;
using testing::BinaryFn;
using testing::Bools;
using testing::ExpectInvalidArgument;
using testing::F32;
using testing::I32;
using testing::kFloatDTypes;
using testing::kInf;
using testing::kIntDTypes;
using testing::kNaN;
using testing::kNumericDTypes;
using testing::MakeFloat;
using testing::MakeInt;
using testing::NamedBinary;
using testing::ReadAny;
using testing::ReadF32;
using testing::ReadI64;
using testing::RoundTo;
using testing::SameFloats;
using testing::Vec;

// ---- arithmetic on floating dtypes: exact f32 arithmetic, rounded once

const std::vector<float> kA = {1.5f, -2.f, 0.25f, 100.f, 1e4f, -0.1f, 3.f, 0.f};
const std::vector<float> kB = {2.25f, 3.f, -0.25f, -100.f, 3.f, 0.3f, 7.f, -5.f};

template <typename F>
void ExpectFloatArithmetic(BinaryFn op, F f) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    std::vector<float> expected;
    for (size_t i = 0; i < kA.size(); ++i) {
      expected.push_back(RoundTo(dtype, f(RoundTo(dtype, kA[i]), RoundTo(dtype, kB[i]))));
    }
    const int64_t n = static_cast<int64_t>(kA.size());
    Tensor y = op(MakeFloat(dtype, kA, {n}), MakeFloat(dtype, kB, {n}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.shape(), (Shape{n}));
    EXPECT_TRUE(SameFloats(ReadF32(y), expected));
  }
}

TEST(Add, MatchesF32ArithmeticForEveryFloatDType) {
  ExpectFloatArithmetic(&add, [](float a, float b) { return a + b; });
}

TEST(Sub, MatchesF32ArithmeticForEveryFloatDType) {
  ExpectFloatArithmetic(&sub, [](float a, float b) { return a - b; });
}

TEST(Mul, MatchesF32ArithmeticForEveryFloatDType) {
  ExpectFloatArithmetic(&mul, [](float a, float b) { return a * b; });
}

TEST(Div, MatchesF32ArithmeticForEveryFloatDType) {
  ExpectFloatArithmetic(&div, [](float a, float b) { return a / b; });
}

TEST(Maximum, MatchesForEveryFloatDType) {
  ExpectFloatArithmetic(&maximum, [](float a, float b) { return a > b ? a : b; });
}

TEST(Minimum, MatchesForEveryFloatDType) {
  ExpectFloatArithmetic(&minimum, [](float a, float b) { return a < b ? a : b; });
}

TEST(Add, HandComputedF32Values) {
  EXPECT_EQ(ReadF32(add(F32({1, 2, 3}, {3}), F32({10, 20, 30}, {3}))),
            (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(ReadF32(sub(F32({1, 2, 3}, {3}), F32({10, 20, 30}, {3}))),
            (std::vector<float>{-9, -18, -27}));
  EXPECT_EQ(ReadF32(mul(F32({1, 2, 3}, {3}), F32({10, 20, 30}, {3}))),
            (std::vector<float>{10, 40, 90}));
  EXPECT_EQ(ReadF32(div(F32({1, 2, 3}, {3}), F32({10, 20, 30}, {3}))),
            (std::vector<float>{0.1f, 0.1f, 0.1f}));
}

TEST(Add, SixteenBitResultsRoundToTheDType) {
  // 2048 + 1 is not an f16 (ties to even: 2048); 256 + 1 is not a bf16.
  EXPECT_EQ(ReadF32(add(MakeFloat(DType::kF16, {2048, 2048}, {2}),
                        MakeFloat(DType::kF16, {1, 3}, {2}))),
            (std::vector<float>{2048, 2052}));
  EXPECT_EQ(ReadF32(add(MakeFloat(DType::kBF16, {256, 256}, {2}),
                        MakeFloat(DType::kBF16, {1, 3}, {2}))),
            (std::vector<float>{256, 260}));
  // Overflow gives infinity.
  EXPECT_EQ(ReadF32(add(MakeFloat(DType::kF16, {60000}, {1}),
                        MakeFloat(DType::kF16, {60000}, {1}))),
            (std::vector<float>{kInf}));
}

TEST(Div, FloatDivisionByZeroFollowsIEEE) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(div(MakeFloat(dtype, {1, -1, 0, 1}, {4}),
                                             MakeFloat(dtype, {0, 0, 0, -0.f}, {4})));
    ASSERT_EQ(y.size(), 4u);
    EXPECT_EQ(y[0], kInf);
    EXPECT_EQ(y[1], -kInf);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], -kInf);
  }
}

TEST(Add, InfinitiesAndNaN) {
  const std::vector<float> y =
      ReadF32(add(F32({kInf, kInf, kNaN, 1}, {4}), F32({1, -kInf, 1, kNaN}, {4})));
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], kInf);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(y[3]));
}

// ---- arithmetic on integer dtypes

struct IntCase {
  std::vector<int64_t> a, b, add, sub, mul, div, max, min;
};

IntCase SignedCase() {
  return {{7, -7, 0, 100, -3, 9, -1},       {2, 3, -5, -100, -3, 3, 2},
          {9, -4, -5, 0, -6, 12, 1},        {5, -10, 5, 200, 0, 6, -3},
          {14, -21, 0, -10000, 9, 27, -2},  {3, -2, 0, -1, 1, 3, 0},
          {7, 3, 0, 100, -3, 9, 2},         {2, -7, -5, -100, -3, 3, -1}};
}

IntCase UnsignedCase() {
  // u8 wraps modulo 256.
  return {{7, 200, 0, 255, 3},   {2, 55, 5, 1, 3},     {9, 255, 5, 0, 6},  {5, 145, 251, 254, 0},
          {14, 248, 0, 255, 9},  {3, 3, 0, 255, 1},    {7, 200, 5, 255, 3}, {2, 55, 0, 1, 3}};
}

TEST(IntegerArithmetic, MatchesHandValuesForEveryIntegerDType) {
  for (DType dtype : kIntDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const IntCase c = dtype == DType::kU8 ? UnsignedCase() : SignedCase();
    Tensor a = Vec(dtype, c.a);
    Tensor b = Vec(dtype, c.b);
    for (const auto& [op, want] :
         std::vector<std::pair<NamedBinary, std::vector<int64_t>>>{
             {{"add", &add}, c.add}, {{"sub", &sub}, c.sub}, {{"mul", &mul}, c.mul},
             {{"div", &div}, c.div}, {{"maximum", &maximum}, c.max},
             {{"minimum", &minimum}, c.min}}) {
      SCOPED_TRACE(op.name);
      Tensor y = op.op(a, b);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(ReadI64(y), want);
    }
  }
}

TEST(Div, IntegerDivisionTruncatesTowardZero) {
  for (DType dtype : {DType::kI32, DType::kI64}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor y = div(Vec(dtype, {-7, 7, -7, 7, -1, 1, 0, -6}), Vec(dtype, {2, -2, -2, 2, 2, -2, 3, 3}));
    EXPECT_EQ(ReadI64(y), (std::vector<int64_t>{-3, -3, 3, 3, 0, 0, 0, -2}));
  }
  EXPECT_EQ(ReadI64(div(Vec(DType::kU8, {7, 255, 1}), Vec(DType::kU8, {2, 16, 3}))),
            (std::vector<int64_t>{3, 15, 0}));
  EXPECT_EQ(ReadI64(I32({-7}, {1}) / I32({2}, {1})), (std::vector<int64_t>{-3}));
}

TEST(Div, IntegerDivisionByZeroFailsAtRealize) {
  for (DType dtype : kIntDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor y = div(Vec(dtype, {1, 2, 3}), Vec(dtype, {1, 0, 1}));
    ASSERT_TRUE(y.ok()) << "the divisor's values are unknown when the op is recorded";
    const absl::Status s = y.realize();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("div"));
    EXPECT_THAT(s.message(), HasSubstr("zero"));
    absl::StatusOr<std::vector<int64_t>> v = y.to_host<int64_t>();
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // A broadcast scalar zero, through the scalar overload.
  Tensor z = I32({4, 5}, {2}) / 0.0;
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z.realize().code(), absl::StatusCode::kInvalidArgument);
  // A zero divisor that computes to zero in the trace.
  Tensor w = div(I32({4, 5}, {2}), I32({3, 3}, {2}) - 3.0);
  EXPECT_EQ(w.realize().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Div, IntegerMinByMinusOneWraps) {
  EXPECT_EQ(ReadI64(div(Vec(DType::kI32, {INT32_MIN}), Vec(DType::kI32, {-1}))),
            (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(ReadI64(div(Vec(DType::kI64, {INT64_MIN}), Vec(DType::kI64, {-1}))),
            (std::vector<int64_t>{INT64_MIN}));
}

TEST(Add, IntegersWrapAround) {
  EXPECT_EQ(ReadI64(add(Vec(DType::kI32, {INT32_MAX, INT32_MIN}), Vec(DType::kI32, {1, -1}))),
            (std::vector<int64_t>{INT32_MIN, INT32_MAX}));
  EXPECT_EQ(ReadI64(add(Vec(DType::kI64, {INT64_MAX, INT64_MIN}), Vec(DType::kI64, {1, -1}))),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(ReadI64(add(Vec(DType::kU8, {250, 255}), Vec(DType::kU8, {10, 255}))),
            (std::vector<int64_t>{4, 254}));
  EXPECT_EQ(ReadI64(I32({INT32_MAX}, {1}) + 1.0), (std::vector<int64_t>{INT32_MIN}));
}

TEST(Sub, IntegersWrapAround) {
  EXPECT_EQ(ReadI64(sub(Vec(DType::kI32, {INT32_MIN, INT32_MAX}), Vec(DType::kI32, {1, -1}))),
            (std::vector<int64_t>{INT32_MAX, INT32_MIN}));
  EXPECT_EQ(ReadI64(sub(Vec(DType::kU8, {3, 0}), Vec(DType::kU8, {5, 255}))),
            (std::vector<int64_t>{254, 1}));
  EXPECT_EQ(ReadI64(sub(Vec(DType::kI64, {INT64_MIN}), Vec(DType::kI64, {1}))),
            (std::vector<int64_t>{INT64_MAX}));
}

TEST(Mul, IntegersWrapAround) {
  EXPECT_EQ(ReadI64(mul(Vec(DType::kI32, {65536, 65537, INT32_MIN, 46341}),
                        Vec(DType::kI32, {65536, 65537, -1, 46341}))),
            (std::vector<int64_t>{0, 131073, INT32_MIN, -2147479015}));
  EXPECT_EQ(ReadI64(mul(Vec(DType::kI64, {int64_t{1} << 32, INT64_MAX}),
                        Vec(DType::kI64, {int64_t{1} << 32, 2}))),
            (std::vector<int64_t>{0, -2}));
  EXPECT_EQ(ReadI64(mul(Vec(DType::kU8, {16, 17, 255}), Vec(DType::kU8, {16, 15, 255}))),
            (std::vector<int64_t>{0, 255, 1}));
}

// ---- pow

TEST(Pow, MatchesStdPowForEveryFloatDType) {
  const std::vector<float> a = {2, 2, 9, 0.5f, 10, 0, 0, -2, -8, 1.5f, 4, 1, -1, 0};
  const std::vector<float> b = {3, -1, 0.5f, 2, -2, 0, 3, 3, 1.f / 3, 2.5f, 0.5f, kInf, 2, -1};
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    std::vector<float> expected;
    for (size_t i = 0; i < a.size(); ++i) {
      const double x = RoundTo(dtype, a[i]), e = RoundTo(dtype, b[i]);
      expected.push_back(RoundTo(dtype, static_cast<float>(std::pow(x, e))));
    }
    const int64_t n = static_cast<int64_t>(a.size());
    Tensor y = pow(MakeFloat(dtype, a, {n}), MakeFloat(dtype, b, {n}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_TRUE(AllClose(ReadF32(y), expected, 1e-6,
                         dtype == DType::kF32 ? 2e-6 : (dtype == DType::kF16 ? 1e-3 : 8e-3)));
  }
}

TEST(Pow, HandComputedValues) {
  const std::vector<float> y =
      ReadF32(pow(F32({2, 2, 9, 0, -8, 5}, {6}), F32({10, -2, 0.5, 0, 1.0f / 3, 1}, {6})));
  ASSERT_EQ(y.size(), 6u);
  EXPECT_FLOAT_EQ(y[0], 1024);
  EXPECT_FLOAT_EQ(y[1], 0.25);
  EXPECT_FLOAT_EQ(y[2], 3);
  EXPECT_EQ(y[3], 1);               // 0^0 = 1
  EXPECT_TRUE(std::isnan(y[4]));    // negative base, non-integer exponent
  EXPECT_EQ(y[5], 5);
}

TEST(Pow, ScalarExponent) {
  Tensor x = F32({1, 2, 3, 4}, {4});
  EXPECT_TRUE(AllClose(ReadF32(pow(x, 2.0)), {1, 4, 9, 16}));
  EXPECT_TRUE(AllClose(ReadF32(pow(x, 0.5)), {1, 1.41421356f, 1.7320508f, 2}));
  EXPECT_TRUE(AllClose(ReadF32(pow(x, -1.0)), {1, 0.5f, 1.f / 3, 0.25f}));
  EXPECT_TRUE(AllClose(ReadF32(pow(MakeFloat(DType::kBF16, {3}, {1}), 3.0)), {27}));
}

TEST(Pow, RejectsIntegersAndBool) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = zeros({2}, dtype);
    ExpectInvalidArgument(pow(x, x), "pow");
  }
  ExpectInvalidArgument(pow(I32({2}, {1}), 2.0), "pow");
}

// ---- maximum and minimum

TEST(Maximum, PropagatesNaNFromEitherSide) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor a = MakeFloat(dtype, {kNaN, 1, kNaN, -kInf, kInf}, {5});
    Tensor b = MakeFloat(dtype, {1, kNaN, kNaN, kNaN, kNaN}, {5});
    for (Tensor y : {maximum(a, b), minimum(a, b)}) {
      for (float v : ReadF32(y)) EXPECT_TRUE(std::isnan(v)) << v;
    }
  }
}

TEST(Maximum, InfinitiesAndSignedValues) {
  Tensor a = F32({-kInf, kInf, -1, 5}, {4});
  Tensor b = F32({0, 0, -2, 5}, {4});
  EXPECT_EQ(ReadF32(maximum(a, b)), (std::vector<float>{0, kInf, -1, 5}));
  EXPECT_EQ(ReadF32(minimum(a, b)), (std::vector<float>{-kInf, 0, -2, 5}));
}

TEST(Maximum, ScalarOverloads) {
  Tensor x = F32({-2, -0.5, 0, 3}, {4});
  EXPECT_EQ(ReadF32(maximum(x, 0.0)), (std::vector<float>{0, 0, 0, 3}));
  EXPECT_EQ(ReadF32(minimum(x, -1.0)), (std::vector<float>{-2, -1, -1, -1}));
  EXPECT_EQ(ReadI64(maximum(I32({-5, 5}, {2}), 1.0)), (std::vector<int64_t>{1, 5}));
  for (float v : ReadF32(maximum(x, std::nan("")))) EXPECT_TRUE(std::isnan(v));
}

TEST(Maximum, IntegerExtremes) {
  EXPECT_EQ(ReadI64(maximum(Vec(DType::kI64, {INT64_MIN, INT64_MAX}), Vec(DType::kI64, {0, 0}))),
            (std::vector<int64_t>{0, INT64_MAX}));
  EXPECT_EQ(ReadI64(minimum(Vec(DType::kI32, {INT32_MIN, INT32_MAX}), Vec(DType::kI32, {0, 0}))),
            (std::vector<int64_t>{INT32_MIN, 0}));
  EXPECT_EQ(ReadI64(minimum(Vec(DType::kU8, {255, 0}), Vec(DType::kU8, {128, 128}))),
            (std::vector<int64_t>{128, 0}));
}

// ---- broadcasting

TEST(Broadcast, ColumnWithRow) {
  Tensor a = F32({1, 2, 3}, {3, 1});
  Tensor b = F32({10, 20, 30, 40}, {1, 4});
  Tensor s = a + b;
  EXPECT_EQ(s.shape(), (Shape{3, 4}));
  EXPECT_EQ(ReadF32(s), (std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  Tensor d = b - a;
  EXPECT_EQ(d.shape(), (Shape{3, 4}));
  EXPECT_EQ(ReadF32(d), (std::vector<float>{9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37}));
}

TEST(Broadcast, RankOneWithRankThree) {
  std::vector<float> xs(24);
  for (int i = 0; i < 24; ++i) xs[i] = static_cast<float>(i);
  Tensor x = F32(xs, {2, 3, 4});
  Tensor v = F32({100, 200, 300, 400}, {4});
  std::vector<float> sum, diff;
  for (int i = 0; i < 24; ++i) {
    sum.push_back(xs[i] + 100.f * (i % 4 + 1));
    diff.push_back(100.f * (i % 4 + 1) - xs[i]);
  }
  Tensor s = x + v;
  EXPECT_EQ(s.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(ReadF32(s), sum);
  Tensor d = v - x;
  EXPECT_EQ(d.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(ReadF32(d), diff);
}

TEST(Broadcast, ZeroDimensionalWithTensor) {
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  Tensor ten = scalar(10);
  EXPECT_EQ((ten - x).shape(), (Shape{2, 2}));
  EXPECT_EQ(ReadF32(ten - x), (std::vector<float>{9, 8, 7, 6}));
  EXPECT_EQ(ReadF32(x - ten), (std::vector<float>{-9, -8, -7, -6}));
  EXPECT_EQ(ReadF32(div(x, scalar(2))), (std::vector<float>{0.5, 1, 1.5, 2}));
  Tensor two_scalars = scalar(3) * scalar(4);
  EXPECT_EQ(two_scalars.rank(), 0);
  EXPECT_EQ(ReadF32(two_scalars), (std::vector<float>{12}));
}

TEST(Broadcast, BothOperandsExpand) {
  // [2,1,4] with [3,1] -> [2,3,4].
  Tensor a = F32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 1, 4});
  Tensor b = F32({0, 10, 20}, {3, 1});
  Tensor s = a + b;
  EXPECT_EQ(s.shape(), (Shape{2, 3, 4}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) want.push_back(static_cast<float>(i * 4 + k + 10 * j));
    }
  }
  EXPECT_EQ(ReadF32(s), want);
}

TEST(Broadcast, SizeZeroAxes) {
  Tensor s = zeros({0, 3}) + F32({1, 2, 3}, {1, 3});
  EXPECT_EQ(s.shape(), (Shape{0, 3}));
  EXPECT_TRUE(ReadF32(s).empty());
  Tensor t = zeros({2, 1}) * zeros({0});
  EXPECT_EQ(t.shape(), (Shape{2, 0}));
}

TEST(Broadcast, NonContiguousOperands) {
  Tensor x = transpose(F32({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);  // [[1,4],[2,5],[3,6]]
  Tensor row = F32({10, 20}, {2});
  EXPECT_EQ(ReadF32(x + row), (std::vector<float>{11, 24, 12, 25, 13, 26}));
  Tensor col = slice(F32({100, 0, 200, 0, 300, 0}, {6, 1}), 0, 0, 6, 2);  // [3,1]
  EXPECT_EQ(ReadF32(x * col), (std::vector<float>{100, 400, 400, 1000, 900, 1800}));
}

TEST(Broadcast, IntegerAndSixteenBitOperands) {
  Tensor a = MakeInt(DType::kI64, {1, 2}, {2, 1});
  Tensor b = MakeInt(DType::kI64, {10, 20, 30}, {3});
  EXPECT_EQ(ReadI64(a * b), (std::vector<int64_t>{10, 20, 30, 20, 40, 60}));
  Tensor h = MakeFloat(DType::kF16, {1, 2}, {2, 1});
  Tensor g = MakeFloat(DType::kF16, {0.5, 0.25}, {2});
  EXPECT_EQ(ReadF32(h + g), (std::vector<float>{1.5, 1.25, 2.5, 2.25}));
}

TEST(Broadcast, RejectsIncompatibleShapesNamingThem) {
  Tensor y = F32({1, 2, 3, 4, 5, 6}, {2, 3}) + zeros({4});
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("add"));
  EXPECT_THAT(y.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(y.status().message(), HasSubstr("[4]"));
  for (const NamedBinary& op : AllBinaryOps()) {
    SCOPED_TRACE(op.name);
    Tensor z = op.op(zeros({2, 3}), zeros({3, 2}));
    EXPECT_EQ(z.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(z.status().message(), HasSubstr(op.name));
    EXPECT_THAT(z.status().message(), HasSubstr("[2,3]"));
    EXPECT_THAT(z.status().message(), HasSubstr("[3,2]"));
  }
  // Equal ranks, one axis off.
  EXPECT_EQ((zeros({2, 3, 4}) * zeros({2, 2, 4})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- scalar overloads and operators

TEST(ScalarOperands, OperatorsOnF32) {
  Tensor x = F32({1, 2, 4}, {3});
  Tensor y = F32({2, 8, -1}, {3});
  EXPECT_EQ(ReadF32(x + 1.0), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ(ReadF32(1.0 + x), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ(ReadF32(x - 1.0), (std::vector<float>{0, 1, 3}));
  EXPECT_EQ(ReadF32(1.0 - x), (std::vector<float>{0, -1, -3}));
  EXPECT_EQ(ReadF32(x * 3.0), (std::vector<float>{3, 6, 12}));
  EXPECT_EQ(ReadF32(2.0 * x), (std::vector<float>{2, 4, 8}));
  EXPECT_EQ(ReadF32(x / 2.0), (std::vector<float>{0.5, 1, 2}));
  EXPECT_EQ(ReadF32(8.0 / x), (std::vector<float>{8, 4, 2}));
  EXPECT_EQ(ReadF32(x / y), (std::vector<float>{0.5, 0.25, -4}));
  EXPECT_EQ(ReadF32(x * y), (std::vector<float>{2, 16, -4}));
  EXPECT_EQ(ReadF32(x + y), (std::vector<float>{3, 10, 3}));
  EXPECT_EQ(ReadF32(x - y), (std::vector<float>{-1, -6, 5}));
  EXPECT_EQ(ReadI64(x < y), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(ReadF32(add(x, 0.5)), (std::vector<float>{1.5, 2.5, 4.5}));
  EXPECT_EQ(ReadF32(sub(x, 0.5)), (std::vector<float>{0.5, 1.5, 3.5}));
  EXPECT_EQ(ReadF32(mul(x, -2.0)), (std::vector<float>{-2, -4, -8}));
  EXPECT_EQ(ReadF32(div(x, 4.0)), (std::vector<float>{0.25, 0.5, 1}));
}

TEST(ScalarOperands, TakeTheTensorDType) {
  for (DType dtype : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = ones({2}, dtype);
    for (Tensor y : {x + 1.0, 1.0 + x, x * 2.0, 2.0 * x, x - 1.0, 3.0 - x, x / 1.0, 4.0 / x}) {
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), (Shape{2}));
    }
    EXPECT_EQ(ReadAny(3.0 - x), (std::vector<double>{2, 2}));
    EXPECT_EQ(ReadAny(4.0 / x), (std::vector<double>{4, 4}));
  }
}

TEST(ScalarOperands, IntegerTensors) {
  Tensor x = I32({-7, 7, 9}, {3});
  EXPECT_EQ(ReadI64(x / 2.0), (std::vector<int64_t>{-3, 3, 4}));
  EXPECT_EQ(ReadI64(20.0 / x), (std::vector<int64_t>{-2, 2, 2}));
  EXPECT_EQ(ReadI64(1.0 - x), (std::vector<int64_t>{8, -6, -8}));
  EXPECT_EQ(ReadI64(x * -1.0), (std::vector<int64_t>{7, -7, -9}));
}

TEST(ScalarOperands, SixteenBitScalarIsRoundedToTheDType) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = MakeFloat(dtype, {1, 3}, {2});
    const float tenth = RoundTo(dtype, 0.1f);
    EXPECT_EQ(ReadF32(x + 0.1),
              (std::vector<float>{RoundTo(dtype, 1 + tenth), RoundTo(dtype, 3 + tenth)}));
    EXPECT_EQ(ReadF32(0.1 * x),
              (std::vector<float>{RoundTo(dtype, tenth), RoundTo(dtype, 3 * tenth)}));
  }
}

TEST(ScalarOperands, UnrepresentableScalarIsAnErrorNamingTheOp) {
  Tensor x = I32({1, 2}, {2});
  ExpectInvalidArgument(x + 2.5, "add");
  ExpectInvalidArgument(x * 0.5, "mul");
  ExpectInvalidArgument(sub(x, 1e10), "sub");
  ExpectInvalidArgument(maximum(Vec(DType::kU8, {1}), -1.0), "maximum");
  ExpectInvalidArgument(div(Vec(DType::kU8, {1}), 256.0), "div");
  // The scalar-first forms name the op too.
  ExpectInvalidArgument(2.5 + x, "add");
  ExpectInvalidArgument(2.5 - x, "sub");
  ExpectInvalidArgument(0.5 * x, "mul");
  ExpectInvalidArgument(0.5 / x, "div");
}

TEST(ScalarOperands, PassOnTensorErrors) {
  Tensor bad = scalar(2.5, DType::kI32);
  for (Tensor y : {bad + 1.0, 1.0 + bad, bad * 2.0, 2.0 * bad, 1.0 - bad, 1.0 / bad,
                   pow(bad, 2.0), maximum(bad, 0.0), minimum(bad, 0.0)}) {
    EXPECT_EQ(y.status(), bad.status());
  }
}

// ---- errors common to the binary ops

TEST(BinaryOps, RejectMismatchedDTypesNamingOpAndShapes) {
  Tensor a = zeros({2, 3}, DType::kF32);
  Tensor b = zeros({2, 3}, DType::kF16);
  for (const NamedBinary& op : AllBinaryOps()) {
    SCOPED_TRACE(op.name);
    Tensor y = op.op(a, b);
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
    EXPECT_THAT(y.status().message(), HasSubstr(op.name));
    EXPECT_THAT(y.status().message(), HasSubstr("f32[2,3]"));
    EXPECT_THAT(y.status().message(), HasSubstr("f16[2,3]"));
  }
  // kiln never promotes: i32 with i64, f16 with bf16, u8 with i32.
  EXPECT_FALSE((zeros({2}, DType::kI32) + zeros({2}, DType::kI64)).ok());
  EXPECT_FALSE((zeros({2}, DType::kF16) * zeros({2}, DType::kBF16)).ok());
  EXPECT_FALSE(lt(zeros({2}, DType::kU8), zeros({2}, DType::kI32)).ok());
}

TEST(BinaryOps, ArithmeticRejectsBool) {
  Tensor b = Bools({1, 0}, {2});
  for (const NamedBinary& op : ArithmeticOps()) {
    SCOPED_TRACE(op.name);
    Tensor y = op.op(b, b);
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
    EXPECT_THAT(y.status().message(), HasSubstr(op.name));
    EXPECT_THAT(y.status().message(), HasSubstr("bool"));
  }
}

TEST(BinaryOps, PassOnInputErrors) {
  Tensor bad = scalar(300, DType::kU8);
  Tensor good = zeros({2});
  for (const NamedBinary& op : AllBinaryOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.op(bad, good).status(), bad.status());
    EXPECT_EQ(op.op(good, bad).status(), bad.status());
  }
}

TEST(BinaryOps, RejectUndefinedInputs) {
  for (const NamedBinary& op : AllBinaryOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.op(Tensor(), zeros({2})).status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(op.op(zeros({2}), Tensor()).status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace kiln
