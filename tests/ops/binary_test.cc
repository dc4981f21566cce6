// Tests of the binary elementwise ops, comparisons, where and cast:
// hand-computed values for every dtype, NumPy broadcasting, the scalar
// overloads and operators, integer semantics, and the errors.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/ops.h"
#include "tensor/convert.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllClose;
using testing::F32;
using testing::I32;
using testing::ReadF32;
using testing::ReadI64;

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

constexpr DType kFloatDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};
constexpr DType kIntDTypes[] = {DType::kI32, DType::kI64, DType::kU8};
constexpr DType kNumericDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,
                                    DType::kI32, DType::kI64, DType::kU8};
constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32,
                                DType::kI64, DType::kU8,  DType::kBool};
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// `value` rounded to a floating dtype by the library (the rule cast() uses).
float RoundTo(DType dtype, float value) {
  float out = 0;
  std::vector<char> buf(DTypeSize(dtype));
  ConvertElements(DType::kF32, &value, dtype, buf.data(), 1);
  ConvertElements(dtype, buf.data(), DType::kF32, &out, 1);
  return out;
}

Tensor MakeFloat(DType dtype, const std::vector<float>& values, std::vector<int64_t> sizes) {
  std::vector<char> buf(values.size() * DTypeSize(dtype));
  ConvertElements(DType::kF32, values.data(), dtype, buf.data(),
                  static_cast<int64_t>(values.size()));
  return Tensor::FromHostBytes(dtype, sizes, buf.data(), buf.size());
}

// An integer or bool tensor; every value must be in the dtype's range.
Tensor MakeInt(DType dtype, const std::vector<int64_t>& values, std::vector<int64_t> sizes) {
  std::vector<char> buf(values.size() * DTypeSize(dtype));
  ConvertElements(DType::kI64, values.data(), dtype, buf.data(),
                  static_cast<int64_t>(values.size()));
  return Tensor::FromHostBytes(dtype, sizes, buf.data(), buf.size());
}

Tensor Vec(DType dtype, const std::vector<int64_t>& values) {
  return MakeInt(dtype, values, {static_cast<int64_t>(values.size())});
}

Tensor Bools(const std::vector<int64_t>& values, std::vector<int64_t> sizes) {
  return MakeInt(DType::kBool, values, sizes);
}

// Values as doubles for any dtype (integers below 2^53 exactly).
std::vector<double> ReadAny(const Tensor& t) {
  std::vector<double> out;
  if (IsFloating(t.dtype())) {
    for (float v : ReadF32(t)) out.push_back(v);
  } else {
    for (int64_t v : ReadI64(t)) out.push_back(static_cast<double>(v));
  }
  return out;
}

// Same values, NaN equal to NaN.
::testing::AssertionResult SameFloats(const std::vector<float>& actual,
                                      const std::vector<float>& expected) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) && std::isnan(expected[i])) continue;
    if (actual[i] != expected[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

void ExpectInvalidArgument(const Tensor& t, absl::string_view op) {
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_THAT(t.status().message(), HasSubstr(op));
}

struct NamedBinary {
  const char* name;
  BinaryFn op;
};

const std::vector<NamedBinary>& ArithmeticOps() {
  static const std::vector<NamedBinary>* ops = new std::vector<NamedBinary>{
      {"add", &add},   {"sub", &sub},         {"mul", &mul},        {"div", &div},
      {"pow", &pow},   {"maximum", &maximum}, {"minimum", &minimum}};
  return *ops;
}

const std::vector<NamedBinary>& ComparisonOps() {
  static const std::vector<NamedBinary>* ops = new std::vector<NamedBinary>{
      {"eq", &eq}, {"ne", &ne}, {"lt", &lt}, {"le", &le}, {"gt", &gt}, {"ge", &ge}};
  return *ops;
}

std::vector<NamedBinary> AllBinaryOps() {
  std::vector<NamedBinary> all = ArithmeticOps();
  for (const NamedBinary& op : ComparisonOps()) all.push_back(op);
  return all;
}

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

// ---- comparisons

TEST(Comparisons, MatchHandValuesForEveryNumericDType) {
  const std::vector<int64_t> a = {1, 2, 3, 0, 7};
  const std::vector<int64_t> b = {2, 2, 1, 0, 9};
  const std::vector<std::pair<BinaryFn, std::vector<int64_t>>> cases = {
      {&eq, {0, 1, 0, 1, 0}}, {&ne, {1, 0, 1, 0, 1}}, {&lt, {1, 0, 0, 0, 1}},
      {&le, {1, 1, 0, 1, 1}}, {&gt, {0, 0, 1, 0, 0}}, {&ge, {0, 1, 1, 1, 0}}};
  for (DType dtype : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor ta = IsFloating(dtype) ? MakeFloat(dtype, {1, 2, 3, 0, 7}, {5}) : Vec(dtype, a);
    Tensor tb = IsFloating(dtype) ? MakeFloat(dtype, {2, 2, 1, -0.f, 9}, {5}) : Vec(dtype, b);
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(ComparisonOps()[i].name);
      Tensor y = cases[i].first(ta, tb);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y.dtype(), DType::kBool);
      EXPECT_EQ(y.shape(), (Shape{5}));
      EXPECT_EQ(ReadI64(y), cases[i].second);
    }
  }
}

TEST(Comparisons, SignedIntegersCompareBySign) {
  Tensor a = Vec(DType::kI32, {-1, INT32_MIN, 5});
  Tensor b = Vec(DType::kI32, {1, INT32_MAX, -5});
  EXPECT_EQ(ReadI64(lt(a, b)), (std::vector<int64_t>{1, 1, 0}));
  // u8 is unsigned: 255 is the largest.
  EXPECT_EQ(ReadI64(gt(Vec(DType::kU8, {255, 0}), Vec(DType::kU8, {1, 1}))),
            (std::vector<int64_t>{1, 0}));
}

TEST(Comparisons, NaNComparesUnequalToEverything) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor a = MakeFloat(dtype, {kNaN, kNaN, 1}, {3});
    Tensor b = MakeFloat(dtype, {kNaN, 1, kNaN}, {3});
    EXPECT_EQ(ReadI64(eq(a, b)), (std::vector<int64_t>{0, 0, 0}));
    EXPECT_EQ(ReadI64(ne(a, b)), (std::vector<int64_t>{1, 1, 1}));
    EXPECT_EQ(ReadI64(lt(a, b)), (std::vector<int64_t>{0, 0, 0}));
    EXPECT_EQ(ReadI64(le(a, b)), (std::vector<int64_t>{0, 0, 0}));
    EXPECT_EQ(ReadI64(gt(a, b)), (std::vector<int64_t>{0, 0, 0}));
    EXPECT_EQ(ReadI64(ge(a, b)), (std::vector<int64_t>{0, 0, 0}));
  }
}

TEST(Comparisons, LargeI64ValuesCompareExactly) {
  // Neighbours that a double (or f32) cannot tell apart.
  const int64_t big = int64_t{1} << 53;
  Tensor a = Vec(DType::kI64, {big, INT64_MAX - 1, big + 1});
  Tensor b = Vec(DType::kI64, {big + 1, INT64_MAX, big + 1});
  EXPECT_EQ(ReadI64(eq(a, b)), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(ReadI64(lt(a, b)), (std::vector<int64_t>{1, 1, 0}));
  Tensor c = Vec(DType::kI32, {16777217});
  Tensor d = Vec(DType::kI32, {16777216});
  EXPECT_EQ(ReadI64(gt(c, d)), (std::vector<int64_t>{1}));
}

TEST(Comparisons, OperatorsAndBroadcasting) {
  Tensor x = F32({1, 2, 3}, {3, 1});
  Tensor y = F32({2, 3}, {1, 2});
  Tensor l = x < y;
  EXPECT_EQ(l.dtype(), DType::kBool);
  EXPECT_EQ(l.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadI64(l), (std::vector<int64_t>{1, 1, 0, 1, 0, 0}));
  EXPECT_EQ(ReadI64(x <= y), (std::vector<int64_t>{1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(ReadI64(x > y), (std::vector<int64_t>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(ReadI64(x >= y), (std::vector<int64_t>{0, 0, 1, 0, 1, 1}));
}

TEST(Comparisons, ResultFeedsWhere) {
  Tensor x = F32({-1, 2, -3, 4}, {4});
  Tensor mask = x > zeros_like(x);
  EXPECT_EQ(ReadF32(where(mask, x, 0.0)), (std::vector<float>{0, 2, 0, 4}));
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

// ---- where

TEST(Where, SelectsForEveryDType) {
  Tensor cond = Bools({1, 0, 1, 0}, {4});
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor a, b;
    std::vector<double> want;
    if (dtype == DType::kBool) {
      a = Bools({1, 1, 0, 0}, {4});
      b = Bools({0, 1, 1, 1}, {4});
      want = {1, 1, 0, 1};
    } else if (IsFloating(dtype)) {
      a = MakeFloat(dtype, {1.5, 2, 3, 4}, {4});
      b = MakeFloat(dtype, {-10, -20, kNaN, -40}, {4});
      want = {1.5, -20, 3, -40};
    } else {
      a = Vec(dtype, {1, 2, 3, 4});
      b = Vec(dtype, {10, 20, 30, 255});
      want = {1, 20, 3, 255};
    }
    Tensor y = where(cond, a, b);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(ReadAny(y), want);
  }
}

TEST(Where, BroadcastsAllThreeOperands) {
  Tensor cond = Bools({1, 0, 1}, {3, 1});
  Tensor a = F32({1, 2, 3, 4}, {1, 4});
  Tensor b = scalar(-1);
  Tensor y = where(cond, a, b);
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4}));
  // The condition alone sets the rank.
  Tensor z = where(Bools({1, 0, 0, 1}, {2, 1, 2}), scalar(5), F32({7}, {1}));
  EXPECT_EQ(z.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(ReadF32(z), (std::vector<float>{5, 7, 7, 5}));
}

TEST(Where, DoubleOverload) {
  Tensor cond = Bools({0, 1, 0}, {3});
  EXPECT_EQ(ReadF32(where(cond, F32({1, 2, 3}, {3}), -0.5)), (std::vector<float>{-0.5, 2, -0.5}));
  EXPECT_EQ(ReadI64(where(cond, I32({1, 2, 3}, {3}), 9.0)), (std::vector<int64_t>{9, 2, 9}));
  Tensor h = where(cond, MakeFloat(DType::kF16, {1, 2, 3}, {3}), 0.1);
  EXPECT_EQ(h.dtype(), DType::kF16);
  const float tenth = RoundTo(DType::kF16, 0.1f);
  EXPECT_EQ(ReadF32(h), (std::vector<float>{tenth, 2, tenth}));
  // Broadcast cond with the scalar branch.
  Tensor w = where(Bools({1, 0}, {2, 1}), F32({1, 2, 3}, {3}), 0.0);
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(ReadF32(w), (std::vector<float>{1, 2, 3, 0, 0, 0}));
}

TEST(Where, DoubleOverloadRejectsUnrepresentableValues) {
  Tensor cond = Bools({0, 1}, {2});
  Tensor y = where(cond, I32({1, 2}, {2}), 2.5);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("2.5"));
}

TEST(Where, RejectsANonBoolCondition) {
  for (DType dtype : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor cond = ones({2}, dtype);
    Tensor y = where(cond, zeros({2}), ones({2}));
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(y.status().message(), HasSubstr("where"));
    EXPECT_THAT(y.status().message(), HasSubstr("bool"));
    EXPECT_EQ(where(cond, zeros({2}), 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(Where, RejectsMismatchedBranchesAndShapes) {
  Tensor cond = Bools({0, 1}, {2});
  Tensor y = where(cond, zeros({2}, DType::kF32), zeros({2}, DType::kBF16));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("where"));
  Tensor z = where(cond, zeros({3}), zeros({3}));
  EXPECT_EQ(z.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(z.status().message(), HasSubstr("where"));
  EXPECT_THAT(z.status().message(), HasSubstr("[2]"));
  EXPECT_THAT(z.status().message(), HasSubstr("[3]"));
  EXPECT_EQ(where(cond, zeros({2}), zeros({4})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

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
