// Tests of the unary elementwise ops against the C++ standard library, for
// every dtype each op accepts.
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllClose;
using testing::kFloatDTypes;
using testing::kInf;
using testing::kIntDTypes;
using testing::kNaN;
using testing::MakeFloat;
using testing::ReadF32;
using testing::RoundTo;

using UnaryFn = Tensor (*)(const Tensor&);
using RefFn = double (*)(double);

template <typename T>
Tensor Make(const std::vector<T>& values) {
  return Tensor::FromHost<T>(values, {static_cast<int64_t>(values.size())});
}

template <typename T>
std::vector<T> Read(const Tensor& t) {
  absl::StatusOr<std::vector<T>> v = t.to_host<T>();
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : std::vector<T>{};
}

Tensor MakeBool(std::vector<uint8_t> values) {
  return Tensor::FromHostBytes(DType::kBool, {static_cast<int64_t>(values.size())},
                               values.data(), values.size());
}

// One ulp of relative error at the dtype's precision (f32: a few ulps, as the
// CPU computes in f32 and the reference in double).
double RelTol(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 1.0 / 1024;
    case DType::kBF16: return 1.0 / 128;
    default: return 4e-6;
  }
}

// op(x) against ref(x) for every floating dtype: x is first rounded to the
// dtype; the expected value is ref(x) in f32, rounded to the dtype.
void ExpectMatchesReference(UnaryFn op, RefFn ref, const std::vector<float>& inputs,
                            double atol = 1e-6) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    std::vector<float> expected;
    for (float v : inputs) {
      const float x = RoundTo(dtype, v);
      expected.push_back(RoundTo(dtype, static_cast<float>(ref(x))));
    }
    const int64_t n = static_cast<int64_t>(inputs.size());
    Tensor x = MakeFloat(dtype, inputs, {n});
    Tensor y = op(x);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.shape(), (Shape{n}));
    EXPECT_TRUE(AllClose(ReadF32(y), expected, atol, RelTol(dtype)));
  }
}

// A spread of inputs: zero, small, negative, large.
const std::vector<float>& Spread() {
  static const std::vector<float>* v = new std::vector<float>{
      0.f, -0.f, 0.5f, -0.5f, 1.f, -1.f, 2.f, -2.f, 3.25f, -7.5f, 10.f, -10.f, 40.f, -40.f,
      100.f, -100.f, 1000.f, -1000.f, 1e-3f, -1e-3f};
  return *v;
}

std::vector<float> With(std::vector<float> base, std::initializer_list<float> extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

double RefNeg(double x) { return -x; }
double RefAbs(double x) { return std::fabs(x); }
double RefExp(double x) { return std::exp(x); }
double RefLog(double x) { return std::log(x); }
double RefSqrt(double x) { return std::sqrt(x); }
double RefRsqrt(double x) { return 1.0 / std::sqrt(x); }
double RefRecip(double x) { return 1.0 / x; }
double RefSquare(double x) { return x * x; }
double RefSin(double x) { return std::sin(x); }
double RefCos(double x) { return std::cos(x); }
double RefTanh(double x) { return std::tanh(x); }
double RefSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double RefSilu(double x) { return x / (1.0 + std::exp(-x)); }
double RefGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double RefRelu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }

struct NamedOp {
  const char* name;
  UnaryFn op;
};

const std::vector<NamedOp>& AllUnaryOps() {
  static const std::vector<NamedOp>* ops = new std::vector<NamedOp>{
#define KILN_NAMED_OP(e, name) {#name, &name},
      KILN_UNARY_OPS(KILN_NAMED_OP)
#undef KILN_NAMED_OP
  };
  return *ops;
}

// The ops that need a floating dtype.
const std::vector<NamedOp>& TranscendentalOps() {
  static const std::vector<NamedOp>* ops = new std::vector<NamedOp>{
      {"exp", &exp},   {"log", &log},   {"sqrt", &sqrt},       {"rsqrt", &rsqrt},
      {"recip", &recip}, {"sin", &sin}, {"cos", &cos},         {"tanh", &tanh},
      {"sigmoid", &sigmoid}, {"silu", &silu}, {"gelu", &gelu}};
  return *ops;
}

// ---- each op against the standard library

TEST(Neg, MatchesNegationForEveryFloatDType) {
  ExpectMatchesReference(&neg, &RefNeg, With(Spread(), {kInf, -kInf, 65504.f, 3e38f}));
}

TEST(Neg, FlipsTheSignOfZero) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(neg(MakeFloat(dtype, {0.f, -0.f}, {2})));
    ASSERT_EQ(y.size(), 2u);
    EXPECT_TRUE(std::signbit(y[0]));
    EXPECT_FALSE(std::signbit(y[1]));
  }
}

TEST(Neg, OperatorMinusIsNeg) {
  EXPECT_EQ(ReadF32(-testing::F32({1, -2, 0.5}, {3})), (std::vector<float>{-1, 2, -0.5}));
}

TEST(Abs, MatchesStdFabsForEveryFloatDType) {
  ExpectMatchesReference(&abs, &RefAbs, With(Spread(), {kInf, -kInf, -65504.f}));
}

TEST(Exp, MatchesStdExpForEveryFloatDType) {
  ExpectMatchesReference(&exp, &RefExp,
                         With(Spread(), {11.f, 12.f, -17.f, 88.f, 89.f, kInf, -kInf}));
}

TEST(Exp, OverflowsToInfinityAndUnderflowsToZero) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(exp(MakeFloat(dtype, {1000.f, -1000.f, 0.f}, {3})));
    EXPECT_EQ(y, (std::vector<float>{kInf, 0.f, 1.f}));
  }
  // f16 overflows where f32 does not.
  EXPECT_EQ(ReadF32(exp(MakeFloat(DType::kF16, {12.f}, {1}))), (std::vector<float>{kInf}));
}

TEST(Log, MatchesStdLogForEveryFloatDType) {
  ExpectMatchesReference(&log, &RefLog,
                         {1e-30f, 1e-6f, 1e-3f, 0.1f, 0.5f, 1.f, 2.f, 2.718281828f, 10.f,
                          1000.f, 60000.f, 1e30f, 3e38f});
}

TEST(Log, ZeroNegativeAndInfinity) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y =
        ReadF32(log(MakeFloat(dtype, {0.f, -0.f, -1.f, -kInf, kInf, 1.f}, {6})));
    ASSERT_EQ(y.size(), 6u);
    EXPECT_EQ(y[0], -kInf);
    EXPECT_EQ(y[1], -kInf);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_TRUE(std::isnan(y[3]));
    EXPECT_EQ(y[4], kInf);
    EXPECT_EQ(y[5], 0.f);
  }
}

TEST(Sqrt, MatchesStdSqrtForEveryFloatDType) {
  ExpectMatchesReference(&sqrt, &RefSqrt,
                         {0.f, 1e-6f, 0.25f, 1.f, 2.f, 3.f, 100.f, 12345.f, 65504.f, 1e30f,
                          kInf});
}

TEST(Sqrt, NegativeInputsGiveNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(sqrt(MakeFloat(dtype, {-1.f, -kInf, -0.f}, {3})));
    ASSERT_EQ(y.size(), 3u);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], 0.f);
    EXPECT_TRUE(std::signbit(y[2]));
  }
}

TEST(Rsqrt, MatchesOneOverStdSqrtForEveryFloatDType) {
  ExpectMatchesReference(&rsqrt, &RefRsqrt,
                         {1e-6f, 0.25f, 1.f, 2.f, 3.f, 100.f, 12345.f, 65504.f, 1e30f});
}

TEST(Rsqrt, ZeroNegativeAndInfinity) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(rsqrt(MakeFloat(dtype, {0.f, -4.f, kInf}, {3})));
    ASSERT_EQ(y.size(), 3u);
    EXPECT_EQ(y[0], kInf);
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], 0.f);
  }
}

TEST(Recip, MatchesOneOverXForEveryFloatDType) {
  ExpectMatchesReference(&recip, &RefRecip,
                         {0.5f, -0.5f, 1.f, -3.f, 7.f, 1e-3f, -1e4f, 1e30f, 3.f, kInf, -kInf});
}

TEST(Recip, SignedZerosGiveSignedInfinities) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    EXPECT_EQ(ReadF32(recip(MakeFloat(dtype, {0.f, -0.f}, {2}))),
              (std::vector<float>{kInf, -kInf}));
  }
}

TEST(Square, MatchesXTimesXForEveryFloatDType) {
  ExpectMatchesReference(&square, &RefSquare, With(Spread(), {300.f, 1e20f, kInf, -kInf}));
}

TEST(Sin, MatchesStdSinForEveryFloatDType) {
  ExpectMatchesReference(&sin, &RefSin,
                         With(Spread(), {1.5707964f, 3.1415927f, -3.f, 1e4f, 12345.f}));
}

TEST(Cos, MatchesStdCosForEveryFloatDType) {
  ExpectMatchesReference(&cos, &RefCos,
                         With(Spread(), {1.5707964f, 3.1415927f, -3.f, 1e4f, 12345.f}));
}

TEST(SinCos, InfinityGivesNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = MakeFloat(dtype, {kInf, -kInf}, {2});
    for (float v : ReadF32(sin(x))) EXPECT_TRUE(std::isnan(v));
    for (float v : ReadF32(cos(x))) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(Tanh, MatchesStdTanhForEveryFloatDType) {
  ExpectMatchesReference(&tanh, &RefTanh, With(Spread(), {0.1f, -0.25f, kInf, -kInf}));
}

TEST(Sigmoid, MatchesTheLogisticFunctionForEveryFloatDType) {
  ExpectMatchesReference(&sigmoid, &RefSigmoid, With(Spread(), {0.1f, -0.25f, kInf, -kInf}));
}

TEST(Sigmoid, SaturatesWithoutNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y =
        ReadF32(sigmoid(MakeFloat(dtype, {-1000.f, 1000.f, -kInf, kInf, 0.f}, {5})));
    EXPECT_EQ(y, (std::vector<float>{0.f, 1.f, 0.f, 1.f, 0.5f}));
  }
}

TEST(Silu, MatchesXTimesSigmoidForEveryFloatDType) {
  ExpectMatchesReference(&silu, &RefSilu, With(Spread(), {0.1f, -0.25f, -5.f, kInf}));
}

TEST(Gelu, MatchesTheExactErfFormForEveryFloatDType) {
  ExpectMatchesReference(&gelu, &RefGelu, With(Spread(), {0.1f, -0.25f, -3.f, 3.f, kInf}));
}

TEST(Gelu, HandComputedValues) {
  // gelu(1) = 0.5 * (1 + erf(1/sqrt 2)) = 0.841344746, gelu(-1) = -0.158655254.
  EXPECT_TRUE(AllClose(ReadF32(gelu(testing::F32({1, -1, 0, 2}, {4}))),
                       {0.841344746f, -0.158655254f, 0.f, 1.954499736f}, 1e-6, 1e-6));
}

TEST(Relu, MatchesMaxWithZeroForEveryFloatDType) {
  ExpectMatchesReference(&relu, &RefRelu, With(Spread(), {kInf, -kInf}));
}

TEST(Relu, NaNStaysNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> y = ReadF32(relu(MakeFloat(dtype, {kNaN, -kNaN, 1.f}, {3})));
    ASSERT_EQ(y.size(), 3u);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], 1.f);
  }
}

// ---- properties shared by the ops

TEST(UnaryOps, PropagateNaNForEveryFloatDType) {
  for (const NamedOp& op : AllUnaryOps()) {
    for (DType dtype : kFloatDTypes) {
      SCOPED_TRACE(::testing::Message() << op.name << " " << DTypeName(dtype));
      Tensor y = op.op(MakeFloat(dtype, {kNaN}, {1}));
      ASSERT_TRUE(y.ok()) << y.status();
      const std::vector<float> v = ReadF32(y);
      ASSERT_EQ(v.size(), 1u);
      EXPECT_TRUE(std::isnan(v[0])) << v[0];
    }
  }
}

TEST(UnaryOps, KeepShapeAndDTypeOfAnyRank) {
  for (const NamedOp& op : AllUnaryOps()) {
    SCOPED_TRACE(op.name);
    for (const Shape& shape : {Shape(), Shape{0}, Shape{2, 0, 3}, Shape{1, 2, 1, 3}}) {
      Tensor y = op.op(full(shape, 0.5, DType::kBF16));
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y.shape(), shape);
      EXPECT_EQ(y.dtype(), DType::kBF16);
      KILN_EXPECT_OK(y.realize());
    }
  }
}

TEST(UnaryOps, ReadNonContiguousInputs) {
  // [[0,1,2],[3,4,5]] transposed is [[0,3],[1,4],[2,5]].
  Tensor x = transpose(testing::F32({0, 1, 2, 3, 4, 5}, {2, 3}), 0, 1);
  EXPECT_EQ(ReadF32(square(x)), (std::vector<float>{0, 9, 1, 16, 4, 25}));
  Tensor s = slice(testing::F32({0, -1, 2, -3, 4, -5}, {6}), 0, 1, 6, 2);
  EXPECT_EQ(ReadF32(relu(s)), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(ReadF32(abs(s)), (std::vector<float>{1, 3, 5}));
  Tensor e = expand(testing::F32({4}, {1}), {3});
  EXPECT_EQ(ReadF32(sqrt(e)), (std::vector<float>{2, 2, 2}));
}

TEST(UnaryOps, Identities) {
  Tensor x = random_uniform({257}, 5, -6, 6);
  Tensor p = random_uniform({257}, 6, 0.01, 50);
  const std::vector<float> xs = ReadF32(x);
  const std::vector<float> ones(xs.size(), 1.f);
  // sin^2 + cos^2 = 1
  EXPECT_TRUE(AllClose(ReadF32(square(sin(x)) + square(cos(x))), ones, 1e-6, 1e-6));
  // sigmoid(x) + sigmoid(-x) = 1
  EXPECT_TRUE(AllClose(ReadF32(sigmoid(x) + sigmoid(-x)), ones, 1e-6, 1e-6));
  // silu(x) = x * sigmoid(x)
  EXPECT_TRUE(AllClose(ReadF32(silu(x)), ReadF32(x * sigmoid(x)), 1e-6, 1e-5));
  // tanh(x) = 2 sigmoid(2x) - 1
  EXPECT_TRUE(AllClose(ReadF32(tanh(x)), ReadF32(2.0 * sigmoid(x * 2.0) - 1.0), 1e-6, 1e-5));
  // exp(log(p)) = p, sqrt(p) * rsqrt(p) = 1, recip(recip(p)) = p, sqrt(p)^2 = p
  const std::vector<float> ps = ReadF32(p);
  EXPECT_TRUE(AllClose(ReadF32(exp(log(p))), ps, 1e-6, 1e-5));
  EXPECT_TRUE(AllClose(ReadF32(sqrt(p) * rsqrt(p)), ones, 1e-6, 1e-6));
  EXPECT_TRUE(AllClose(ReadF32(recip(recip(p))), ps, 1e-6, 1e-6));
  EXPECT_TRUE(AllClose(ReadF32(square(sqrt(p))), ps, 1e-6, 1e-5));
  // relu(x) - relu(-x) = x, abs(x) = relu(x) + relu(-x), neg(neg(x)) = x
  EXPECT_TRUE(AllClose(ReadF32(relu(x) - relu(-x)), xs, 0, 0));
  EXPECT_TRUE(AllClose(ReadF32(abs(x)), ReadF32(relu(x) + relu(-x)), 0, 0));
  EXPECT_EQ(ReadF32(neg(neg(x))), xs);
}

// ---- integer dtypes

TEST(Neg, IntegersWrapAround) {
  EXPECT_EQ(Read<int32_t>(neg(Make<int32_t>({0, 1, -1, 5, INT32_MAX, INT32_MIN}))),
            (std::vector<int32_t>{0, -1, 1, -5, -INT32_MAX, INT32_MIN}));
  EXPECT_EQ(Read<int64_t>(neg(Make<int64_t>({0, 7, -7, INT64_MAX, INT64_MIN}))),
            (std::vector<int64_t>{0, -7, 7, -INT64_MAX, INT64_MIN}));
  EXPECT_EQ(Read<uint8_t>(neg(Make<uint8_t>({0, 1, 2, 128, 255}))),
            (std::vector<uint8_t>{0, 255, 254, 128, 1}));
  Tensor y = neg(Make<int32_t>({3}));
  EXPECT_EQ(y.dtype(), DType::kI32);
}

TEST(Abs, IntegersWrapAround) {
  EXPECT_EQ(Read<int32_t>(abs(Make<int32_t>({0, 3, -3, INT32_MAX, -INT32_MAX, INT32_MIN}))),
            (std::vector<int32_t>{0, 3, 3, INT32_MAX, INT32_MAX, INT32_MIN}));
  EXPECT_EQ(Read<int64_t>(abs(Make<int64_t>({-9, 9, INT64_MIN, -INT64_MAX}))),
            (std::vector<int64_t>{9, 9, INT64_MIN, INT64_MAX}));
  EXPECT_EQ(Read<uint8_t>(abs(Make<uint8_t>({0, 5, 200, 255}))),
            (std::vector<uint8_t>{0, 5, 200, 255}));
}

TEST(Square, IntegersWrapAround) {
  EXPECT_EQ(Read<int32_t>(square(Make<int32_t>({0, 3, -4, 46340, 46341, 65536, -65537}))),
            (std::vector<int32_t>{0, 9, 16, 2147395600, -2147479015, 0, 131073}));
  EXPECT_EQ(Read<int64_t>(square(Make<int64_t>({3, -4, 3037000499, int64_t{1} << 32}))),
            (std::vector<int64_t>{9, 16, 9223372030926249001, 0}));
  EXPECT_EQ(Read<uint8_t>(square(Make<uint8_t>({0, 3, 15, 16, 17, 255}))),
            (std::vector<uint8_t>{0, 9, 225, 0, 33, 1}));
}

TEST(Relu, Integers) {
  EXPECT_EQ(Read<int32_t>(relu(Make<int32_t>({-5, 0, 5, INT32_MIN, INT32_MAX}))),
            (std::vector<int32_t>{0, 0, 5, 0, INT32_MAX}));
  EXPECT_EQ(Read<int64_t>(relu(Make<int64_t>({-1, 1, INT64_MIN, INT64_MAX}))),
            (std::vector<int64_t>{0, 1, 0, INT64_MAX}));
  EXPECT_EQ(Read<uint8_t>(relu(Make<uint8_t>({0, 1, 128, 255}))),
            (std::vector<uint8_t>{0, 1, 128, 255}));
}

TEST(UnaryOps, IntegerOpsKeepTheDType) {
  for (DType dtype : kIntDTypes) {
    for (UnaryFn op : {&neg, &abs, &square, &relu}) {
      Tensor y = op(zeros({2, 3}, dtype));
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), (Shape{2, 3}));
    }
  }
}

TEST(UnaryOps, TranscendentalOpsRejectIntegers) {
  for (const NamedOp& op : TranscendentalOps()) {
    for (DType dtype : kIntDTypes) {
      SCOPED_TRACE(::testing::Message() << op.name << " " << DTypeName(dtype));
      Tensor y = op.op(ones({2, 3}, dtype));
      EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
      EXPECT_THAT(y.status().message(), HasSubstr(op.name));
      EXPECT_THAT(y.status().message(), HasSubstr(DTypeName(dtype)));
      EXPECT_THAT(y.status().message(), HasSubstr("[2,3]"));
      EXPECT_EQ(y.realize().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(UnaryOps, RejectBool) {
  Tensor b = MakeBool({1, 0, 1});
  ASSERT_TRUE(b.ok()) << b.status();
  for (const NamedOp& op : AllUnaryOps()) {
    SCOPED_TRACE(op.name);
    Tensor y = op.op(b);
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
    EXPECT_THAT(y.status().message(), HasSubstr(op.name));
    EXPECT_THAT(y.status().message(), HasSubstr("bool"));
  }
}

TEST(UnaryOps, PassOnAnInputError) {
  Tensor bad = scalar(2.5, DType::kI32);
  ASSERT_FALSE(bad.ok());
  for (const NamedOp& op : AllUnaryOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.op(bad).status(), bad.status());
  }
  // Through a chain of ops, the root cause still surfaces.
  EXPECT_EQ(exp(sqrt(neg(bad))).status(), bad.status());
}

TEST(UnaryOps, RejectAnUndefinedInput) {
  for (const NamedOp& op : AllUnaryOps()) {
    SCOPED_TRACE(op.name);
    Tensor y = op.op(Tensor());
    EXPECT_EQ(y.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(y.status().message(), HasSubstr(op.name));
  }
}

TEST(UnaryOps, AreLazyUntilRealized) {
  Tensor x = testing::F32({1, 2, 3}, {3});
  Tensor y = exp(x);
  EXPECT_FALSE(y.is_realized());
  KILN_EXPECT_OK(y.realize());
  EXPECT_TRUE(y.is_realized());
  // Realizing does not change the input.
  EXPECT_EQ(ReadF32(x), (std::vector<float>{1, 2, 3}));
}

}  // namespace
}  // namespace kiln
