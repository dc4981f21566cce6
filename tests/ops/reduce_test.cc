// Tests of the reductions sum, max and mean: axes, keepdim, layouts, dtypes
// and errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllClose;
using testing::ExpectInvalidArgument;
using testing::F32;
using testing::kFloatDTypes;
using testing::kInf;
using testing::kIntDTypes;
using testing::kNaN;
using testing::kNumericDTypes;
using testing::MakeFloat;
using testing::MakeInt;
using testing::ReadAny;
using testing::ReadF32;
using testing::ReadI64;
using testing::RoundTo;

using ReduceFn = Tensor (*)(const Tensor&, absl::Span<const int>, bool);

// 0, 1, ..., n-1 in any numeric dtype.
Tensor Range(DType dtype, std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  if (IsFloating(dtype)) return MakeFloat(dtype, std::vector<float>(v.begin(), v.end()), sizes);
  return MakeInt(dtype, v, sizes);
}

enum class Kind { kSum, kMax, kMean };

// Reference reduction in double over `axes` of a row-major array.
std::vector<double> RefReduce(const std::vector<double>& values, const std::vector<int64_t>& sizes,
                              std::vector<int> axes, Kind kind) {
  const int rank = static_cast<int>(sizes.size());
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int& a : axes) a = a < 0 ? a + rank : a;
  std::vector<bool> reduced(rank, false);
  for (int a : axes) reduced[a] = true;
  std::vector<int64_t> out_sizes;
  for (int i = 0; i < rank; ++i) out_sizes.push_back(reduced[i] ? 1 : sizes[i]);
  int64_t out_n = 1;
  for (int64_t s : out_sizes) out_n *= s;
  std::vector<double> acc(out_n, kind == Kind::kMax ? -INFINITY : 0.0);
  std::vector<int64_t> count(out_n, 0);
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < values.size(); ++flat) {
    int64_t o = 0;
    for (int i = 0; i < rank; ++i) o = o * out_sizes[i] + (reduced[i] ? 0 : index[i]);
    const double v = values[flat];
    if (kind == Kind::kMax) {
      acc[o] = (std::isnan(v) || std::isnan(acc[o])) ? NAN : std::max(acc[o], v);
    } else {
      acc[o] += v;
    }
    ++count[o];
    for (int i = rank - 1; i >= 0; --i) {
      if (++index[i] < sizes[i]) break;
      index[i] = 0;
    }
  }
  if (kind == Kind::kMean) {
    for (int64_t i = 0; i < out_n; ++i) acc[i] /= static_cast<double>(count[i]);
  }
  return acc;
}

std::vector<float> ToFloats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

struct NamedReduce {
  const char* name;
  ReduceFn op;
  Kind kind;
};

const std::vector<NamedReduce>& AllReductions() {
  static const std::vector<NamedReduce>* ops = new std::vector<NamedReduce>{
      {"sum", &sum, Kind::kSum}, {"max", &max, Kind::kMax}, {"mean", &mean, Kind::kMean}};
  return *ops;
}

// ---- sum

TEST(Sum, SingleAxisForEveryNumericDType) {
  // [[0,1,2],[3,4,5]]
  for (DType dtype : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = Range(dtype, {2, 3});
    Tensor s0 = sum(x, 0);
    ASSERT_TRUE(s0.ok()) << s0.status();
    EXPECT_EQ(s0.dtype(), dtype);
    EXPECT_EQ(s0.shape(), (Shape{3}));
    EXPECT_EQ(ReadAny(s0), (std::vector<double>{3, 5, 7}));
    EXPECT_EQ(ReadAny(sum(x, 1)), (std::vector<double>{3, 12}));
    EXPECT_EQ(ReadAny(sum(x, -1)), (std::vector<double>{3, 12}));
    EXPECT_EQ(ReadAny(sum(x, -2)), (std::vector<double>{3, 5, 7}));
    EXPECT_EQ(ReadAny(sum(x)), (std::vector<double>{15}));
  }
}

TEST(Sum, SeveralAxes) {
  Tensor x = Range(DType::kF32, {2, 3, 4});
  const std::vector<int> a02 = {0, 2}, a20 = {2, 0}, a12 = {1, 2}, a01 = {0, 1};
  Tensor s = sum(x, a02);
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(ReadF32(s), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(ReadF32(sum(x, a20)), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(ReadF32(sum(x, a12)), (std::vector<float>{66, 210}));
  EXPECT_EQ(ReadF32(sum(x, a01)), (std::vector<float>{60, 66, 72, 78}));
}

TEST(Sum, NegativeAxes) {
  Tensor x = Range(DType::kF32, {2, 3, 4});
  const std::vector<int> neg = {-1, -3};
  const std::vector<int> pos = {0, 2};
  EXPECT_EQ(ReadF32(sum(x, neg)), ReadF32(sum(x, pos)));
  EXPECT_EQ(ReadF32(sum(x, -1)), ReadF32(sum(x, 2)));
  EXPECT_EQ(sum(x, -2).shape(), (Shape{2, 4}));
  EXPECT_EQ(ReadF32(sum(x, -2)), (std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57}));
}

TEST(Sum, EmptyAxisListReducesEveryAxis) {
  Tensor x = Range(DType::kF32, {2, 3, 4});
  Tensor s = sum(x);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(ReadF32(s), (std::vector<float>{276}));
  Tensor k = sum(x, absl::Span<const int>(), /*keepdim=*/true);
  EXPECT_EQ(k.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(ReadF32(k), (std::vector<float>{276}));
  const std::vector<int> every = {0, 1, 2};
  EXPECT_EQ(ReadF32(sum(x, every)), (std::vector<float>{276}));
  EXPECT_EQ(sum(x, every).rank(), 0);
}

TEST(Sum, ZeroDimensionalInput) {
  Tensor s = sum(scalar(3.5));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(ReadF32(s), (std::vector<float>{3.5}));
  EXPECT_EQ(ReadF32(max(scalar(-2))), (std::vector<float>{-2}));
  EXPECT_EQ(ReadF32(mean(scalar(4))), (std::vector<float>{4}));
}

TEST(Sum, NonContiguousTransposedInput) {
  Tensor t = transpose(Range(DType::kF32, {2, 3}), 0, 1);  // [[0,3],[1,4],[2,5]]
  EXPECT_EQ(ReadF32(sum(t, 0)), (std::vector<float>{3, 12}));
  EXPECT_EQ(ReadF32(sum(t, 1)), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(ReadF32(sum(t, 1, true)), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(sum(t, 1, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(ReadF32(max(t, 1)), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(ReadF32(mean(t, 0)), (std::vector<float>{1, 4}));
}

TEST(Sum, NonContiguousSlicedInput) {
  Tensor v = slice(Range(DType::kF32, {10}), 0, 1, 10, 3);  // 1, 4, 7
  EXPECT_EQ(ReadF32(sum(v)), (std::vector<float>{12}));
  EXPECT_EQ(ReadF32(max(v, 0)), (std::vector<float>{7}));
  EXPECT_EQ(ReadF32(mean(v)), (std::vector<float>{4}));
  // Every second column of [[0..5],[6..11],[12..17]]: [[0,2,4],[6,8,10],[12,14,16]].
  Tensor m = slice(Range(DType::kF32, {3, 6}), 1, 0, 6, 2);
  EXPECT_EQ(m.shape(), (Shape{3, 3}));
  EXPECT_EQ(ReadF32(sum(m, 1)), (std::vector<float>{6, 24, 42}));
  EXPECT_EQ(ReadF32(sum(m, 0)), (std::vector<float>{18, 24, 30}));
  // Sliced rows with a step, then transposed.
  Tensor r = transpose(slice(Range(DType::kF32, {4, 3}), 0, 1, 4, 2), 0, 1);  // rows 1, 3
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadF32(sum(r, 1)), (std::vector<float>{3 + 9, 4 + 10, 5 + 11}));
  EXPECT_EQ(ReadI64(sum(slice(Range(DType::kI32, {10}), 0, 0, 10, 4))),
            (std::vector<int64_t>{0 + 4 + 8}));
}

TEST(Sum, ExpandedInput) {
  Tensor e = expand(F32({1, 2, 3}, {1, 3}), {4, 3});
  EXPECT_EQ(ReadF32(sum(e, 0)), (std::vector<float>{4, 8, 12}));
  EXPECT_EQ(ReadF32(sum(e, 1)), (std::vector<float>{6, 6, 6, 6}));
}

TEST(Sum, IntegerSumsWrapAround) {
  EXPECT_EQ(ReadI64(sum(MakeInt(DType::kI32, {INT32_MAX, 1}, {2}))),
            (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(ReadI64(sum(MakeInt(DType::kI32, {INT32_MIN, -1, 5}, {3}))),
            (std::vector<int64_t>{int64_t{INT32_MIN} + 4}));
  EXPECT_EQ(ReadI64(sum(MakeInt(DType::kI64, {INT64_MAX, 1}, {2}))),
            (std::vector<int64_t>{INT64_MIN}));
  Tensor u = sum(MakeInt(DType::kU8, {200, 100, 255, 1}, {2, 2}), 1);
  EXPECT_EQ(u.dtype(), DType::kU8);
  EXPECT_EQ(ReadI64(u), (std::vector<int64_t>{44, 0}));
  // Wrapping is modular: large partial sums that come back into range are exact.
  EXPECT_EQ(ReadI64(sum(MakeInt(DType::kI32, {INT32_MAX, INT32_MAX, 2, -INT32_MAX, -INT32_MAX},
                                {5}))),
            (std::vector<int64_t>{2}));
}

TEST(Sum, SixteenBitInputsAccumulateInF32OrWider) {
  // In f16, 2048 + 1 rounds back to 2048; accumulating in f32 gives 2050.
  EXPECT_EQ(ReadF32(sum(MakeFloat(DType::kF16, {2048, 1, 1}, {3}))),
            (std::vector<float>{2050}));
  EXPECT_EQ(ReadF32(sum(MakeFloat(DType::kBF16, {256, 1, 1}, {3}))),
            (std::vector<float>{258}));
  // The result is rounded once to the dtype.
  EXPECT_EQ(ReadF32(sum(MakeFloat(DType::kF16, {0.1f, 0.2f, 0.3f}, {3}))),
            (std::vector<float>{RoundTo(DType::kF16, RoundTo(DType::kF16, 0.1f) +
                                                         RoundTo(DType::kF16, 0.2f) +
                                                         RoundTo(DType::kF16, 0.3f))}));
  // A total beyond the dtype's range is infinity.
  EXPECT_EQ(ReadF32(sum(MakeFloat(DType::kF16, {60000, 60000}, {2}))),
            (std::vector<float>{kInf}));
}

TEST(Sum, LongF32SumsAreAccurate) {
  Tensor x = random_uniform({100000}, 17, 0, 1);
  const std::vector<float> v = ReadF32(x);
  double total = 0;
  for (float f : v) total += f;
  const std::vector<float> got = ReadF32(sum(x));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NEAR(got[0], total, total * 1e-5);
  // 2^24 + 2 ones: a naive f32 accumulator would stop at 2^24.
  Tensor many = ones({(int64_t{1} << 24) + 2});
  EXPECT_EQ(ReadF32(sum(many)), (std::vector<float>{16777218.f}));
}

TEST(Sum, EmptyAxisGivesZero) {
  Tensor z = zeros({2, 0});
  Tensor s = sum(z, 1);
  EXPECT_EQ(s.shape(), (Shape{2}));
  EXPECT_EQ(ReadF32(s), (std::vector<float>{0, 0}));
  Tensor t = sum(z, 0);
  EXPECT_EQ(t.shape(), (Shape{0}));
  EXPECT_TRUE(ReadF32(t).empty());
  EXPECT_EQ(ReadI64(sum(zeros({0}, DType::kI32))), (std::vector<int64_t>{0}));
}

TEST(Sum, SymbolicAxis) {
  const Symbol n("n", 32);
  Tensor x = full({Dim(n), 3}, 2);
  Tensor s = sum(x, 0);
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(ReadF32(s, Bindings{{n, 5}}), (std::vector<float>{10, 10, 10}));
  Tensor k = sum(full({Dim(n), 3}, 2), 1, true);
  EXPECT_EQ(k.shape(), (Shape{Dim(n), 1}));
  EXPECT_EQ(ReadF32(k, Bindings{{n, 2}}), (std::vector<float>{6, 6}));
}

// ---- max

TEST(Max, SingleAxisForEveryNumericDType) {
  for (DType dtype : kNumericDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    // [[3,1,2],[0,5,4]]
    Tensor x = IsFloating(dtype) ? MakeFloat(dtype, {3, 1, 2, 0, 5, 4}, {2, 3})
                                 : MakeInt(dtype, {3, 1, 2, 0, 5, 4}, {2, 3});
    Tensor m0 = max(x, 0);
    ASSERT_TRUE(m0.ok()) << m0.status();
    EXPECT_EQ(m0.dtype(), dtype);
    EXPECT_EQ(ReadAny(m0), (std::vector<double>{3, 5, 4}));
    EXPECT_EQ(ReadAny(max(x, 1)), (std::vector<double>{3, 5}));
    EXPECT_EQ(ReadAny(max(x, -1, true)), (std::vector<double>{3, 5}));
    EXPECT_EQ(ReadAny(max(x)), (std::vector<double>{5}));
  }
}

TEST(Max, NegativeValuesAndInfinities) {
  EXPECT_EQ(ReadF32(max(F32({-5, -3, -kInf}, {3}))), (std::vector<float>{-3}));
  EXPECT_EQ(ReadF32(max(F32({-kInf, -kInf}, {2}))), (std::vector<float>{-kInf}));
  EXPECT_EQ(ReadF32(max(F32({1, kInf, 2}, {3}))), (std::vector<float>{kInf}));
  EXPECT_EQ(ReadI64(max(MakeInt(DType::kI32, {-5, -2, -9}, {3}))), (std::vector<int64_t>{-2}));
  EXPECT_EQ(ReadI64(max(MakeInt(DType::kI64, {INT64_MIN, INT64_MIN}, {2}))),
            (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(ReadI64(max(MakeInt(DType::kU8, {0, 255, 7}, {3}))), (std::vector<int64_t>{255}));
}

TEST(Max, PropagatesNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    // NaN first, in the middle, last; one row without NaN.
    Tensor x = MakeFloat(dtype, {kNaN, 1, 2, 1, kNaN, 2, 1, 2, kNaN, 1, 2, 3}, {4, 3});
    const std::vector<float> m = ReadF32(max(x, 1));
    ASSERT_EQ(m.size(), 4u);
    EXPECT_TRUE(std::isnan(m[0]));
    EXPECT_TRUE(std::isnan(m[1]));
    EXPECT_TRUE(std::isnan(m[2]));
    EXPECT_EQ(m[3], 3);
    const std::vector<float> all = ReadF32(max(x));
    ASSERT_EQ(all.size(), 1u);
    EXPECT_TRUE(std::isnan(all[0]));
    // NaN next to infinity.
    const std::vector<float> inf = ReadF32(max(MakeFloat(dtype, {kInf, kNaN}, {2})));
    ASSERT_EQ(inf.size(), 1u);
    EXPECT_TRUE(std::isnan(inf[0]));
  }
}

TEST(Max, RejectsAnEmptyAxis) {
  ExpectInvalidArgument(max(zeros({2, 0}), 1), "max");
  ExpectInvalidArgument(max(zeros({2, 0})), "max");
  ExpectInvalidArgument(max(zeros({0})), "max");
  ExpectInvalidArgument(max(zeros({0, 3}, DType::kI32), 0), "max");
  // Reducing a non-empty axis of an empty tensor is fine.
  Tensor ok = max(zeros({2, 0}), 0);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok.shape(), (Shape{0}));
  EXPECT_TRUE(ReadF32(ok).empty());
}

// ---- mean

TEST(Mean, FloatDTypes) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = Range(dtype, {2, 3});
    Tensor m0 = mean(x, 0);
    ASSERT_TRUE(m0.ok()) << m0.status();
    EXPECT_EQ(m0.dtype(), dtype);
    EXPECT_EQ(ReadF32(m0), (std::vector<float>{1.5, 2.5, 3.5}));
    EXPECT_EQ(ReadF32(mean(x, 1)), (std::vector<float>{1, 4}));
    EXPECT_EQ(ReadF32(mean(x)), (std::vector<float>{2.5}));
  }
}

TEST(Mean, SixteenBitMeanRoundsOnceAndAccumulatesWider) {
  // The sum (120000) overflows f16, the mean does not.
  EXPECT_EQ(ReadF32(mean(MakeFloat(DType::kF16, {60000, 60000}, {2}))),
            (std::vector<float>{60000}));
  // mean(0.1, 0.2, 0.4) in f16: the f32 mean of the f16 inputs, rounded once.
  const float a = RoundTo(DType::kF16, 0.1f), b = RoundTo(DType::kF16, 0.2f),
              c = RoundTo(DType::kF16, 0.4f);
  const float want = RoundTo(DType::kF16, static_cast<float>((double{a} + b + c) / 3));
  EXPECT_EQ(ReadF32(mean(MakeFloat(DType::kF16, {0.1f, 0.2f, 0.4f}, {3}))),
            (std::vector<float>{want}));
  // bf16 values whose running sum in bf16 would lose the small terms.
  EXPECT_EQ(ReadF32(mean(MakeFloat(DType::kBF16, {256, 1, 1, 2}, {4}))),
            (std::vector<float>{65}));
}

TEST(Mean, OfAnEmptyAxisIsNaN) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor m = mean(zeros({2, 0}, dtype), 1);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m.shape(), (Shape{2}));
    for (float v : ReadF32(m)) EXPECT_TRUE(std::isnan(v)) << v;
  }
}

TEST(Mean, RejectsIntegersAndBool) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectInvalidArgument(mean(zeros({2, 3}, dtype), 0), "mean");
    ExpectInvalidArgument(mean(zeros({2, 3}, dtype)), "mean");
  }
}

// ---- all reductions

TEST(Reduce, KeepdimShapes) {
  Tensor x = Range(DType::kF32, {2, 3, 4});
  const std::vector<int> a02 = {0, 2};
  for (const NamedReduce& r : AllReductions()) {
    SCOPED_TRACE(r.name);
    const std::vector<int> a0 = {0}, a1 = {1}, a2 = {-1};
    EXPECT_EQ(r.op(x, a0, false).shape(), (Shape{3, 4}));
    EXPECT_EQ(r.op(x, a0, true).shape(), (Shape{1, 3, 4}));
    EXPECT_EQ(r.op(x, a1, false).shape(), (Shape{2, 4}));
    EXPECT_EQ(r.op(x, a1, true).shape(), (Shape{2, 1, 4}));
    EXPECT_EQ(r.op(x, a2, false).shape(), (Shape{2, 3}));
    EXPECT_EQ(r.op(x, a2, true).shape(), (Shape{2, 3, 1}));
    EXPECT_EQ(r.op(x, a02, false).shape(), (Shape{3}));
    EXPECT_EQ(r.op(x, a02, true).shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(r.op(x, {}, false).shape(), Shape());
    EXPECT_EQ(r.op(x, {}, true).shape(), (Shape{1, 1, 1}));
    // keepdim changes the shape, not the values.
    EXPECT_EQ(ReadF32(r.op(x, a02, true)), ReadF32(r.op(x, a02, false)));
  }
}

TEST(Reduce, MatchReferenceOnEveryAxisSubsetAndLayout) {
  const std::vector<int64_t> sizes = {3, 4, 5};
  Tensor x = random_normal({3, 4, 5}, 99);
  std::vector<double> xs;
  for (float v : ReadF32(x)) xs.push_back(v);
  // The same values through a permuted (non-contiguous) view.
  const std::vector<int> perm = {2, 0, 1};
  Tensor p = permute(contiguous(permute(x, perm)), {1, 2, 0});  // [3,4,5], strided
  Tensor t = permute(x, perm);  // [5,3,4], strided
  std::vector<double> ts;
  for (float v : ReadF32(t)) ts.push_back(v);
  const std::vector<std::vector<int>> subsets = {{},     {0},    {1},       {2},     {0, 1},
                                                 {0, 2}, {1, 2}, {0, 1, 2}, {-1, 0}, {-2}};
  for (const NamedReduce& r : AllReductions()) {
    for (const std::vector<int>& axes : subsets) {
      SCOPED_TRACE(::testing::Message() << r.name << " over " << axes.size() << " axes, first "
                                        << (axes.empty() ? 99 : axes[0]));
      EXPECT_TRUE(AllClose(ReadF32(r.op(x, axes, false)), ToFloats(RefReduce(xs, sizes, axes, r.kind)),
                           1e-5, 1e-5));
      EXPECT_TRUE(AllClose(ReadF32(r.op(p, axes, false)), ToFloats(RefReduce(xs, sizes, axes, r.kind)),
                           1e-5, 1e-5));
      EXPECT_TRUE(AllClose(ReadF32(r.op(t, axes, true)),
                           ToFloats(RefReduce(ts, {5, 3, 4}, axes, r.kind)), 1e-5, 1e-5));
    }
  }
}

TEST(Reduce, RejectAxesOutOfRange) {
  Tensor x = zeros({2, 3});
  for (const NamedReduce& r : AllReductions()) {
    SCOPED_TRACE(r.name);
    for (int axis : {2, -3, 100}) {
      const std::vector<int> axes = {axis};
      ExpectInvalidArgument(r.op(x, axes, false), r.name);
    }
    const std::vector<int> zero = {0};
    ExpectInvalidArgument(r.op(scalar(1), zero, false), r.name);
  }
}

TEST(Reduce, RejectDuplicateAxes) {
  Tensor x = zeros({2, 3, 4});
  for (const NamedReduce& r : AllReductions()) {
    SCOPED_TRACE(r.name);
    const std::vector<int> same = {0, 0};
    const std::vector<int> aliased = {1, -2};
    const std::vector<int> last = {2, 0, -1};
    ExpectInvalidArgument(r.op(x, same, false), r.name);
    ExpectInvalidArgument(r.op(x, aliased, false), r.name);
    ExpectInvalidArgument(r.op(x, last, true), r.name);
  }
}

TEST(Reduce, RejectBool) {
  Tensor b = cast(ones({2, 2}), DType::kBool);
  ASSERT_TRUE(b.ok());
  for (const NamedReduce& r : AllReductions()) {
    SCOPED_TRACE(r.name);
    ExpectInvalidArgument(r.op(b, {}, false), r.name);
  }
}

TEST(Reduce, PassOnInputErrors) {
  Tensor bad = scalar(-1, DType::kU8);
  for (const NamedReduce& r : AllReductions()) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.op(bad, {}, false).status(), bad.status());
    EXPECT_EQ(r.op(Tensor(), {}, false).status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(Reduce, IntegerDTypesAreKept) {
  for (DType dtype : kIntDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = Range(dtype, {3, 4});
    EXPECT_EQ(sum(x, 0).dtype(), dtype);
    EXPECT_EQ(max(x, 0).dtype(), dtype);
    EXPECT_EQ(ReadI64(sum(x, 1)), (std::vector<int64_t>{6, 22, 38}));
    EXPECT_EQ(ReadI64(max(x, 0)), (std::vector<int64_t>{8, 9, 10, 11}));
  }
}

}  // namespace
}  // namespace kiln
