// Tests of the creation ops: scalar, full and friends, iota, arange, random.
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllClose;
using testing::kAllDTypes;
using testing::kFloatDTypes;
using testing::kIntDTypes;
using testing::ReadAny;
using testing::ReadF32;
using testing::ReadI64;
using testing::RoundTo;

// testing::ExpectInvalidArgument, plus the same error from realize().
void ExpectInvalidArgument(const Tensor& t, absl::string_view op) {
  testing::ExpectInvalidArgument(t, op);
  // The error also surfaces from realize() and to_host().
  EXPECT_EQ(t.realize().code(), absl::StatusCode::kInvalidArgument);
}

double Mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}

double StdDev(const std::vector<float>& v) {
  const double m = Mean(v);
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

// ---- scalar

TEST(Scalar, IsZeroDimensionalWithTheValueForEveryDType) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor s = scalar(1, dtype);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s.rank(), 0);
    EXPECT_EQ(s.shape(), Shape());
    EXPECT_EQ(s.dtype(), dtype);
    EXPECT_EQ(s.device(), Device::Cpu());
    EXPECT_EQ(ReadAny(s), (std::vector<double>{1}));
  }
}

TEST(Scalar, DefaultsToF32) {
  Tensor s = scalar(-2.25);
  EXPECT_EQ(s.dtype(), DType::kF32);
  absl::StatusOr<float> v = s.item<float>();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, -2.25f);
}

TEST(Scalar, RoundsFloatsToTheDType) {
  EXPECT_EQ(ReadF32(scalar(0.1, DType::kF32))[0], 0.1f);
  EXPECT_EQ(ReadF32(scalar(0.1, DType::kF16))[0], RoundTo(DType::kF16, 0.1f));
  EXPECT_EQ(ReadF32(scalar(0.1, DType::kBF16))[0], RoundTo(DType::kBF16, 0.1f));
  EXPECT_EQ(ReadF32(scalar(1.0 / 3, DType::kBF16))[0], RoundTo(DType::kBF16, 1.0f / 3));
}

TEST(Scalar, KeepsNaNAndInfinityInFloatDTypes) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    EXPECT_TRUE(std::isnan(ReadF32(scalar(std::nan(""), dtype))[0]));
    EXPECT_EQ(ReadF32(scalar(INFINITY, dtype))[0], INFINITY);
    EXPECT_EQ(ReadF32(scalar(-INFINITY, dtype))[0], -INFINITY);
  }
}

TEST(Scalar, HoldsIntegerExtremesExactly) {
  EXPECT_EQ(ReadI64(scalar(2147483647.0, DType::kI32)), (std::vector<int64_t>{INT32_MAX}));
  EXPECT_EQ(ReadI64(scalar(-2147483648.0, DType::kI32)), (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(ReadI64(scalar(255, DType::kU8)), (std::vector<int64_t>{255}));
  EXPECT_EQ(ReadI64(scalar(0, DType::kU8)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ReadI64(scalar(-9007199254740992.0, DType::kI64)),
            (std::vector<int64_t>{-9007199254740992}));
}

TEST(Scalar, AcceptsLargeI64ValuesThatADoubleHoldsExactly) {
  // 2^60 and -2^63 are integers a double holds exactly, and i64 holds them.
  Tensor big = scalar(1152921504606846976.0, DType::kI64);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(ReadI64(big), (std::vector<int64_t>{int64_t{1} << 60}));
  Tensor lowest = scalar(-9223372036854775808.0, DType::kI64);
  ASSERT_TRUE(lowest.ok()) << lowest.status();
  EXPECT_EQ(ReadI64(lowest), (std::vector<int64_t>{INT64_MIN}));
}

TEST(Scalar, RejectsValuesNotRepresentableInTheDType) {
  ExpectInvalidArgument(scalar(2.5, DType::kI32), "scalar");
  ExpectInvalidArgument(scalar(300, DType::kU8), "scalar");
  ExpectInvalidArgument(scalar(-1, DType::kU8), "scalar");
  ExpectInvalidArgument(scalar(0.5, DType::kU8), "scalar");
  ExpectInvalidArgument(scalar(2147483648.0, DType::kI32), "scalar");
  ExpectInvalidArgument(scalar(-2147483649.0, DType::kI32), "scalar");
  ExpectInvalidArgument(scalar(1e30, DType::kI64), "scalar");
  ExpectInvalidArgument(scalar(std::nan(""), DType::kI32), "scalar");
  ExpectInvalidArgument(scalar(INFINITY, DType::kI64), "scalar");
  ExpectInvalidArgument(scalar(2, DType::kBool), "scalar");
  ExpectInvalidArgument(scalar(0.5, DType::kBool), "scalar");
}

TEST(Scalar, ErrorMessageNamesTheValueAndDType) {
  Tensor s = scalar(2.5, DType::kI32);
  EXPECT_THAT(s.status().message(), HasSubstr("2.5"));
  EXPECT_THAT(s.status().message(), HasSubstr("i32"));
  Tensor u = scalar(300, DType::kU8);
  EXPECT_THAT(u.status().message(), HasSubstr("300"));
  EXPECT_THAT(u.status().message(), HasSubstr("u8"));
}

TEST(Scalar, BoolTakesZeroAndOne) {
  EXPECT_EQ(ReadI64(scalar(0, DType::kBool)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ReadI64(scalar(1, DType::kBool)), (std::vector<int64_t>{1}));
}

TEST(Scalar, IsLazyUntilRealized) {
  Tensor s = scalar(3);
  EXPECT_FALSE(s.is_realized());
  KILN_EXPECT_OK(s.realize());
  EXPECT_TRUE(s.is_realized());
}

// ---- full, zeros, ones and the *_like forms

TEST(Full, FillsTheShapeForEveryDType) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor t = full({2, 3}, 1, dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(ReadAny(t), std::vector<double>(6, 1.0));
  }
  EXPECT_EQ(ReadF32(full({4}, -1.75)), std::vector<float>(4, -1.75f));
  EXPECT_EQ(ReadI64(full({3}, -7, DType::kI32)), std::vector<int64_t>(3, -7));
  EXPECT_EQ(ReadI64(full({3}, 200, DType::kU8)), std::vector<int64_t>(3, 200));
}

TEST(Full, RoundsTo16BitDTypes) {
  EXPECT_EQ(ReadF32(full({2}, 0.3, DType::kF16)),
            std::vector<float>(2, RoundTo(DType::kF16, 0.3f)));
  EXPECT_EQ(ReadF32(full({2}, 0.3, DType::kBF16)),
            std::vector<float>(2, RoundTo(DType::kBF16, 0.3f)));
}

TEST(Full, ZeroDimensionalAndEmptyShapes) {
  Tensor s = full(Shape(), 4);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(ReadF32(s), (std::vector<float>{4}));
  Tensor e = full({0, 3}, 4);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_TRUE(ReadF32(e).empty());
}

TEST(Full, FollowsASymbolicShape) {
  const Symbol n("n", 16);
  Tensor t = full({Dim(n), 2}, 5);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ReadF32(t, Bindings{{n, 3}}), std::vector<float>(6, 5.f));
}

TEST(Full, RejectsUnrepresentableValues) {
  Tensor t = full({2}, 2.5, DType::kI32);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("2.5"));
  EXPECT_EQ(full({2}, 256, DType::kU8).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Full, RejectsInvalidShapes) {
  EXPECT_EQ(full({2, -1}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(full({1, 1, 1, 1, 1, 1, 1}, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Zeros, AreZeroForEveryDType) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor t = zeros({3, 2}, dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.shape(), (Shape{3, 2}));
    EXPECT_EQ(ReadAny(t), std::vector<double>(6, 0.0));
  }
}

TEST(Ones, AreOneForEveryDType) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor t = ones({4}, dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(ReadAny(t), std::vector<double>(4, 1.0));
  }
  EXPECT_EQ(ones({2, 2}).dtype(), DType::kF32);
}

TEST(FullLike, CopiesShapeDTypeAndDevice) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                      DType::kU8}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor like = zeros({2, 1, 3}, dtype);
    Tensor t = full_like(like, 7);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.shape(), like.shape());
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.device(), like.device());
    EXPECT_EQ(ReadAny(t), std::vector<double>(6, 7.0));
  }
}

TEST(FullLike, ZerosAndOnesLike) {
  Tensor like = testing::I32({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor z = zeros_like(like);
  Tensor o = ones_like(like);
  EXPECT_EQ(z.dtype(), DType::kI32);
  EXPECT_EQ(o.dtype(), DType::kI32);
  EXPECT_EQ(z.shape(), (Shape{3, 2}));
  EXPECT_EQ(o.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadI64(z), std::vector<int64_t>(6, 0));
  EXPECT_EQ(ReadI64(o), std::vector<int64_t>(6, 1));
  Tensor bf = zeros({5}, DType::kBF16);
  EXPECT_EQ(ones_like(bf).dtype(), DType::kBF16);
  EXPECT_EQ(ReadF32(ones_like(bf)), std::vector<float>(5, 1.f));
}

TEST(FullLike, FollowsALazyInput) {
  Tensor like = transpose(testing::F32({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);
  Tensor t = full_like(like, -3);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadF32(t), std::vector<float>(6, -3.f));
}

TEST(FullLike, PassesOnAnErrorInput) {
  Tensor bad = scalar(2.5, DType::kI32);
  Tensor t = full_like(bad, 1);
  EXPECT_EQ(t.status(), bad.status());
  EXPECT_EQ(zeros_like(bad).status(), bad.status());
  EXPECT_EQ(ones_like(bad).status(), bad.status());
}

TEST(FullLike, RejectsAnUndefinedInput) {
  Tensor t = full_like(Tensor(), 1);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FullLike, RejectsValuesNotRepresentableInTheInputDType) {
  Tensor like = zeros({2}, DType::kU8);
  EXPECT_EQ(full_like(like, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(full_like(zeros({2}, DType::kI32), 0.5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- iota

TEST(Iota, CountsFromZeroAsI32ByDefault) {
  Tensor t = iota(5);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.dtype(), DType::kI32);
  EXPECT_EQ(t.shape(), (Shape{5}));
  EXPECT_EQ(ReadI64(t), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(Iota, TakesStartAndStep) {
  EXPECT_EQ(ReadI64(iota(4, 3, 2)), (std::vector<int64_t>{3, 5, 7, 9}));
  EXPECT_EQ(ReadI64(iota(4, 10, -3)), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(ReadI64(iota(3, 1, 1, DType::kI64)), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ReadI64(iota(3, 250, 1, DType::kU8)), (std::vector<int64_t>{250, 251, 252}));
  EXPECT_EQ(ReadF32(iota(4, 1, 0.5, DType::kF32)), (std::vector<float>{1, 1.5, 2, 2.5}));
  EXPECT_EQ(ReadF32(iota(3, 0, 0.25, DType::kF16)), (std::vector<float>{0, 0.25, 0.5}));
  EXPECT_EQ(ReadF32(iota(3, 2, 0.5, DType::kBF16)), (std::vector<float>{2, 2.5, 3}));
}

TEST(Iota, RoundsTo16BitDTypes) {
  std::vector<float> f16 = ReadF32(iota(4, 2047, 1, DType::kF16));
  std::vector<float> bf16 = ReadF32(iota(4, 255, 0.5, DType::kBF16));
  std::vector<float> want16, wantbf;
  for (int i = 0; i < 4; ++i) {
    want16.push_back(RoundTo(DType::kF16, 2047.f + i));
    wantbf.push_back(RoundTo(DType::kBF16, 255.f + 0.5f * i));
  }
  EXPECT_EQ(f16, want16);
  EXPECT_EQ(bf16, wantbf);
}

TEST(Iota, FollowsASymbolicStart) {
  const Symbol pos("pos", 100);
  Tensor t = iota(4, Dim(pos));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.shape(), (Shape{4}));
  EXPECT_EQ(ReadI64(t, Bindings{{pos, 7}}), (std::vector<int64_t>{7, 8, 9, 10}));
  // The same trace with a new binding, through a fresh tensor.
  Tensor u = iota(4, Dim(pos) + 1, 1, DType::kF32);
  EXPECT_EQ(ReadF32(u, Bindings{{pos, 0}}), (std::vector<float>{1, 2, 3, 4}));
  Tensor w = iota(4, Dim(pos) + 1, 1, DType::kF32);
  EXPECT_EQ(ReadF32(w, Bindings{{pos, 99}}), (std::vector<float>{100, 101, 102, 103}));
}

TEST(Iota, FollowsASymbolicLength) {
  const Symbol n("n", 64);
  Tensor t = iota(Dim(n), 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ReadI64(t, Bindings{{n, 3}}), (std::vector<int64_t>{2, 3, 4}));
}

TEST(Iota, UnboundSymbolFailsAtRealize) {
  const Symbol pos("pos", 100);
  Tensor t = iota(4, Dim(pos));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t.realize().ok());
}

TEST(Iota, EmptyLength) {
  Tensor t = iota(0);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.shape(), (Shape{0}));
  EXPECT_TRUE(ReadI64(t).empty());
}

TEST(Iota, RejectsBoolAndNonFiniteSteps) {
  ExpectInvalidArgument(iota(3, 0, 1, DType::kBool), "iota");
  ExpectInvalidArgument(iota(3, 0, INFINITY), "iota");
  ExpectInvalidArgument(iota(3, 0, std::nan(""), DType::kF32), "iota");
}

TEST(Iota, RejectsANegativeLength) {
  EXPECT_FALSE(iota(-1).ok());
}

// ---- arange

TEST(Arange, CountsLikeNumPy) {
  Tensor t = arange(0, 5);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.shape(), (Shape{5}));
  EXPECT_EQ(ReadF32(t), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ReadF32(arange(2, 11, 3)), (std::vector<float>{2, 5, 8}));
  EXPECT_EQ(ReadF32(arange(2, 12, 3)), (std::vector<float>{2, 5, 8, 11}));
}

TEST(Arange, FractionalStartAndStep) {
  Tensor t = arange(0.5, 2.0, 0.5);
  EXPECT_EQ(t.shape(), (Shape{3}));
  EXPECT_EQ(ReadF32(t), (std::vector<float>{0.5, 1.0, 1.5}));
  Tensor u = arange(0.25, 1.5, 0.375);  // ceil(1.25 / 0.375) = 4
  EXPECT_EQ(u.shape(), (Shape{4}));
  EXPECT_TRUE(AllClose(ReadF32(u), {0.25f, 0.625f, 1.0f, 1.375f}, 1e-6, 1e-6));
  Tensor v = arange(0, 1, 0.1);
  EXPECT_EQ(v.shape(), (Shape{10}));
  std::vector<float> want;
  for (int i = 0; i < 10; ++i) want.push_back(static_cast<float>(i * 0.1));
  EXPECT_TRUE(AllClose(ReadF32(v), want, 1e-6, 1e-6));
}

TEST(Arange, NegativeStartAndStep) {
  EXPECT_EQ(ReadF32(arange(-3, 1)), (std::vector<float>{-3, -2, -1, 0}));
  EXPECT_EQ(ReadF32(arange(5, 0, -1.5)), (std::vector<float>{5, 3.5, 2, 0.5}));
  EXPECT_EQ(ReadF32(arange(-1, -2.5, -0.5)), (std::vector<float>{-1, -1.5, -2}));
  EXPECT_EQ(ReadF32(arange(-2.5, 0, 1)), (std::vector<float>{-2.5, -1.5, -0.5}));
}

TEST(Arange, IntegerDTypes) {
  Tensor t = arange(-3, 3, 1, DType::kI32);
  EXPECT_EQ(t.dtype(), DType::kI32);
  EXPECT_EQ(ReadI64(t), (std::vector<int64_t>{-3, -2, -1, 0, 1, 2}));
  EXPECT_EQ(ReadI64(arange(10, 0, -3, DType::kI64)), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(ReadI64(arange(250, 256, 2, DType::kU8)), (std::vector<int64_t>{250, 252, 254}));
}

TEST(Arange, SixteenBitDTypesRoundEachElementOnce) {
  // Element i is start + i * step rounded once to the dtype, not the sum of
  // separately rounded parts (0.3 is 1229 f16 ulps of 2^-12, not 1228).
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor t = arange(0.1, 1.0, 0.1, dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.dtype(), dtype);
    const std::vector<float> got = ReadF32(t);
    ASSERT_EQ(got.size(), 9u);
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(got[i], RoundTo(dtype, static_cast<float>(0.1 + i * 0.1))) << "element " << i;
    }
  }
}

TEST(Arange, F32FractionalStartIsWithinAnUlp) {
  const std::vector<float> got = ReadF32(arange(0.1, 1.0, 0.1));
  ASSERT_EQ(got.size(), 9u);
  std::vector<float> want;
  for (int i = 0; i < 9; ++i) want.push_back(static_cast<float>(0.1 + i * 0.1));
  EXPECT_TRUE(AllClose(got, want, 0, 1.2e-7));
}

TEST(Arange, EmptyRanges) {
  for (Tensor t : {arange(3, 3), arange(5, 0), arange(0, 5, -1), arange(0.5, 0.25, 0.1)}) {
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t.shape(), (Shape{0}));
    EXPECT_TRUE(ReadF32(t).empty());
  }
}

TEST(Arange, RejectsAZeroStep) {
  ExpectInvalidArgument(arange(0, 5, 0), "arange");
  EXPECT_THAT(arange(0, 5, 0).status().message(), HasSubstr("step"));
}

TEST(Arange, RejectsNonFiniteArguments) {
  ExpectInvalidArgument(arange(0, INFINITY), "arange");
  ExpectInvalidArgument(arange(-INFINITY, 0), "arange");
  ExpectInvalidArgument(arange(0, 5, std::nan("")), "arange");
  ExpectInvalidArgument(arange(std::nan(""), 5), "arange");
}

TEST(Arange, RejectsTooManyElements) {
  EXPECT_EQ(arange(0, 1e300, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- random_uniform

TEST(RandomUniform, SameSeedGivesIdenticalValues) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> a = ReadF32(random_uniform({64, 3}, 42, 0, 1, dtype));
    const std::vector<float> b = ReadF32(random_uniform({64, 3}, 42, 0, 1, dtype));
    ASSERT_EQ(a.size(), 192u);
    EXPECT_EQ(a, b);
  }
}

TEST(RandomUniform, DifferentSeedsGiveDifferentValues) {
  const std::vector<float> a = ReadF32(random_uniform({1000}, 1));
  const std::vector<float> b = ReadF32(random_uniform({1000}, 2));
  ASSERT_EQ(a.size(), b.size());
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 10);
  EXPECT_NE(ReadF32(random_uniform({8}, 0)), ReadF32(random_uniform({8}, 1)));
}

TEST(RandomUniform, ElementsWithinATensorDiffer) {
  const std::vector<float> a = ReadF32(random_uniform({1000}, 7));
  std::vector<float> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  const size_t distinct = std::unique(sorted.begin(), sorted.end()) - sorted.begin();
  EXPECT_GT(distinct, 990u);
}

TEST(RandomUniform, IsDeterministicAcrossSeparateRealizations) {
  Tensor a = random_uniform({5, 7}, 123, -2, 3);
  KILN_EXPECT_OK(a.realize());
  const std::vector<float> first = ReadF32(a);
  // A separately built trace, realized on its own, and used downstream.
  Tensor b = random_uniform({5, 7}, 123, -2, 3);
  Tensor c = b * 1.0;
  EXPECT_EQ(first, ReadF32(c));
  EXPECT_EQ(first, ReadF32(b));
  // Reading the realized tensor again gives the same values.
  EXPECT_EQ(first, ReadF32(a));
}

TEST(RandomUniform, ElementDependsOnlyOnSeedAndIndex) {
  const std::vector<float> flat = ReadF32(random_uniform({24}, 9));
  const std::vector<float> shaped = ReadF32(random_uniform({2, 3, 4}, 9));
  EXPECT_EQ(flat, shaped);
}

// Draws lie in [low, high) before rounding; rounding to the dtype may reach high.
TEST(RandomUniform, ValuesLieWithinLowAndHigh) {
  struct Case {
    double low, high;
  };
  for (DType dtype : kFloatDTypes) {
    for (Case c : {Case{0, 1}, Case{-5, -4}, Case{-1, 1}, Case{10, 1000}, Case{0.25, 0.5}}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " [" << c.low << ", " << c.high
                                        << "]");
      const std::vector<float> v = ReadF32(random_uniform({10000}, 5, c.low, c.high, dtype));
      ASSERT_EQ(v.size(), 10000u);
      for (float x : v) {
        ASSERT_GE(x, RoundTo(dtype, static_cast<float>(c.low)));
        ASSERT_LE(x, RoundTo(dtype, static_cast<float>(c.high)));
        ASSERT_FALSE(std::isnan(x));
      }
    }
  }
}

TEST(RandomUniform, F32UnitIntervalExcludesOne) {
  const std::vector<float> v = ReadF32(random_uniform({100000}, 11));
  for (float x : v) {
    ASSERT_GE(x, 0.f);
    ASSERT_LT(x, 1.f);
  }
}

TEST(RandomUniform, SampleMeanAndStdMatchTheDistribution) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> v = ReadF32(random_uniform({100000}, 2024, -1, 3, dtype));
    // Uniform on [-1, 3): mean 1, std 4 / sqrt(12).
    EXPECT_NEAR(Mean(v), 1.0, 0.02);
    EXPECT_NEAR(StdDev(v), 4.0 / std::sqrt(12.0), 0.02);
    // Each quarter of the range holds about a quarter of the samples.
    int quarters[4] = {0, 0, 0, 0};
    for (float x : v) quarters[std::min(3, static_cast<int>(x + 1))]++;
    for (int q : quarters) EXPECT_NEAR(q, 25000, 1000);
  }
}

TEST(RandomUniform, RejectsLowNotBelowHigh) {
  ExpectInvalidArgument(random_uniform({3}, 0, 1, 1), "random_uniform");
  ExpectInvalidArgument(random_uniform({3}, 0, 2, 1), "random_uniform");
}

TEST(RandomUniform, RejectsNonFloatingDTypes) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectInvalidArgument(random_uniform({3}, 0, 0, 1, dtype), "random_uniform");
  }
}

TEST(RandomUniform, RejectsNonFiniteBounds) {
  ExpectInvalidArgument(random_uniform({3}, 0, 0, INFINITY), "random_uniform");
  ExpectInvalidArgument(random_uniform({3}, 0, -INFINITY, 0), "random_uniform");
  ExpectInvalidArgument(random_uniform({3}, 0, std::nan(""), 1), "random_uniform");
}

// ---- random_normal

TEST(RandomNormal, SameSeedGivesIdenticalValues) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> a = ReadF32(random_normal({100}, 3, 0, 1, dtype));
    const std::vector<float> b = ReadF32(random_normal({100}, 3, 0, 1, dtype));
    EXPECT_EQ(a, b);
  }
}

TEST(RandomNormal, DifferentSeedsGiveDifferentValues) {
  const std::vector<float> a = ReadF32(random_normal({1000}, 100));
  const std::vector<float> b = ReadF32(random_normal({1000}, 101));
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 10);
}

TEST(RandomNormal, IsDeterministicAcrossSeparateRealizations) {
  Tensor a = random_normal({4, 4}, 77, 2, 0.5);
  KILN_EXPECT_OK(a.realize());
  Tensor b = random_normal({4, 4}, 77, 2, 0.5);
  KILN_EXPECT_OK(b.realize());
  EXPECT_EQ(ReadF32(a), ReadF32(b));
}

TEST(RandomNormal, SampleMeanAndStdMatchTheDistribution) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> v = ReadF32(random_normal({100000}, 31337, 3, 2, dtype));
    for (float x : v) ASSERT_TRUE(std::isfinite(x));
    EXPECT_NEAR(Mean(v), 3.0, 0.04);
    EXPECT_NEAR(StdDev(v), 2.0, 0.04);
    // About 68.3% within one standard deviation.
    int within = 0;
    for (float x : v) within += std::fabs(x - 3) < 2;
    EXPECT_NEAR(within / 100000.0, 0.6827, 0.01);
  }
}

TEST(RandomNormal, ZeroStdDevGivesTheMean) {
  EXPECT_EQ(ReadF32(random_normal({5}, 1, -1.5, 0)), std::vector<float>(5, -1.5f));
}

TEST(RandomNormal, RejectsNegativeStdDev) {
  ExpectInvalidArgument(random_normal({3}, 0, 0, -1), "random_normal");
  EXPECT_THAT(random_normal({3}, 0, 0, -1).status().message(), HasSubstr("stddev"));
}

TEST(RandomNormal, RejectsNonFloatingDTypes) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectInvalidArgument(random_normal({3}, 0, 0, 1, dtype), "random_normal");
  }
}

TEST(RandomNormal, RejectsNonFiniteArguments) {
  ExpectInvalidArgument(random_normal({3}, 0, INFINITY, 1), "random_normal");
  ExpectInvalidArgument(random_normal({3}, 0, 0, INFINITY), "random_normal");
  ExpectInvalidArgument(random_normal({3}, 0, std::nan(""), 1), "random_normal");
}

}  // namespace
}  // namespace kiln
