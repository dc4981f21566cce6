// Tests of matmul: hand computations, NumPy batch broadcasting, vector
// operands, strided operands, odd sizes against a naive loop in double,
// 16-bit and integer dtypes, and the errors.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::F32;
using testing::I32;
using testing::kFloatDTypes;
using testing::MakeFloat;
using testing::MakeInt;
using testing::ReadF32;
using testing::ReadI64;
using testing::RoundTo;

int64_t Count(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Uniform values in [-1, 1), already rounded to `dtype`.
std::vector<float> RandomValues(int64_t n, uint32_t seed, DType dtype = DType::kF32) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = RoundTo(dtype, dist(gen));
  return v;
}

// A naive batched matmul in double over dense row-major operands (rank >= 2),
// broadcasting batch dims like NumPy. Also returns sum |a_ik * b_kj| per
// output element, the scale of the rounding error any summation order has.
struct Reference {
  std::vector<int64_t> sizes;
  std::vector<double> values;
  std::vector<double> magnitude;
};

Reference NaiveMatmul(const std::vector<float>& a, std::vector<int64_t> sa,
                      const std::vector<float>& b, std::vector<int64_t> sb) {
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  EXPECT_EQ(sb[sb.size() - 2], k);
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), rank - ba.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Reference ref;
  for (size_t i = 0; i < rank; ++i) ref.sizes.push_back(std::max(ba[i], bb[i]));
  const int64_t batches = Count(ref.sizes);
  ref.sizes.push_back(m);
  ref.sizes.push_back(n);
  std::vector<int64_t> index(rank, 0);
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t la = 0, lb = 0;
    for (size_t i = 0; i < rank; ++i) {
      la = la * ba[i] + (ba[i] == 1 ? 0 : index[i]);
      lb = lb * bb[i] + (bb[i] == 1 ? 0 : index[i]);
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double total = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double prod =
              static_cast<double>(a[la * m * k + i * k + p]) * b[lb * k * n + p * n + j];
          total += prod;
          mag += std::fabs(prod);
        }
        ref.values.push_back(total);
        ref.magnitude.push_back(mag);
      }
    }
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
      if (++index[i] < ref.sizes[i]) break;
      index[i] = 0;
    }
  }
  return ref;
}

// Within the error of f32 accumulation, plus one rounding to `dtype`.
::testing::AssertionResult MatchesReference(const std::vector<float>& got, const Reference& ref,
                                            DType dtype) {
  if (got.size() != ref.values.size()) {
    return ::testing::AssertionFailure()
           << "sizes " << got.size() << " vs " << ref.values.size();
  }
  const double rounding =
      dtype == DType::kF16 ? 1.0 / 1024 : (dtype == DType::kBF16 ? 1.0 / 128 : 0);
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = ref.values[i];
    const double tol = 2e-5 * ref.magnitude[i] + rounding * std::fabs(want) + 1e-6;
    if (!(std::fabs(got[i] - want) <= tol)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i]
                                           << " vs expected " << want << " (tolerance " << tol
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// testing::ExpectInvalidArgument naming matmul.
void ExpectInvalidArgument(const Tensor& t) { testing::ExpectInvalidArgument(t, "matmul"); }

// ---- hand computations

TEST(Matmul, TwoByThreeTimesThreeByTwo) {
  Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = F32({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor c = matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.dtype(), DType::kF32);
  // [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
  EXPECT_EQ(ReadF32(c), (std::vector<float>{58, 64, 139, 154}));
  // The other order: [3,2] x [2,3].
  Tensor d = matmul(b, a);
  EXPECT_EQ(d.shape(), (Shape{3, 3}));
  EXPECT_EQ(ReadF32(d), (std::vector<float>{39, 54, 69, 49, 68, 87, 59, 82, 105}));
}

TEST(Matmul, HandValuesForEveryFloatDType) {
  for (DType dtype : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor a = MakeFloat(dtype, {1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = MakeFloat(dtype, {7, 8, 9, 10, 11, 12}, {3, 2});
    Tensor c = matmul(a, b);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c.dtype(), dtype);
    EXPECT_EQ(ReadF32(c), (std::vector<float>{58, 64, 139, 154}));
  }
}

TEST(Matmul, IdentityAndZeroMatrices) {
  Tensor x = F32({1.5, -2, 3, 0.25}, {2, 2});
  Tensor eye = F32({1, 0, 0, 1}, {2, 2});
  EXPECT_EQ(ReadF32(matmul(x, eye)), ReadF32(x));
  EXPECT_EQ(ReadF32(matmul(eye, x)), ReadF32(x));
  EXPECT_EQ(ReadF32(matmul(x, zeros({2, 3}))), std::vector<float>(6, 0.f));
}

TEST(Matmul, NaNAndInfinityPropagate) {
  const std::vector<float> c =
      ReadF32(matmul(F32({NAN, 1, INFINITY, 0}, {2, 2}), F32({1, 1, 0, 1}, {2, 2})));
  ASSERT_EQ(c.size(), 4u);
  EXPECT_TRUE(std::isnan(c[0]));
  EXPECT_TRUE(std::isnan(c[1]));
  EXPECT_EQ(c[2], INFINITY);  // inf*1 + 0*0
  EXPECT_EQ(c[3], INFINITY);  // inf*1 + 0*1
}

// ---- integers

TEST(Matmul, I32IsExact) {
  Tensor a = I32({1, -2, 3, 4, 5, -6}, {2, 3});
  Tensor b = I32({7, 8, -9, 10, 11, 12}, {3, 2});
  Tensor c = matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c.dtype(), DType::kI32);
  // [7+18+33, 8-20+36; 28-45-66, 32+50-72]
  EXPECT_EQ(ReadI64(c), (std::vector<int64_t>{58, 24, -83, 10}));
  // Products beyond f32's 24-bit mantissa stay exact.
  Tensor big = matmul(I32({16777217, 1}, {1, 2}), I32({3, 1}, {2, 1}));
  EXPECT_EQ(ReadI64(big), (std::vector<int64_t>{50331652}));
}

TEST(Matmul, I32WrapsAround) {
  EXPECT_EQ(ReadI64(matmul(I32({65536}, {1, 1}), I32({65536}, {1, 1}))),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(ReadI64(matmul(I32({INT32_MAX, 1}, {1, 2}), I32({1, 1}, {2, 1}))),
            (std::vector<int64_t>{INT32_MIN}));
}

TEST(Matmul, I64IsExact) {
  const int64_t big = int64_t{1} << 31;
  Tensor a = MakeInt(DType::kI64, {big, 1, -big, 3}, {2, 2});
  Tensor b = MakeInt(DType::kI64, {big, 5}, {2, 1});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), DType::kI64);
  EXPECT_EQ(ReadI64(c), (std::vector<int64_t>{(int64_t{1} << 62) + 5, -(int64_t{1} << 62) + 15}));
}

TEST(Matmul, IntegersMatchNaiveLoopOnOddSizes) {
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  const int64_t m = 17, k = 127, n = 3;
  std::vector<int32_t> a(m * k), b(k * n);
  for (int32_t& v : a) v = dist(gen);
  for (int32_t& v : b) v = dist(gen);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t total = 0;
      for (int64_t p = 0; p < k; ++p) total += int64_t{a[i * k + p]} * b[p * n + j];
      want.push_back(total);
    }
  }
  EXPECT_EQ(ReadI64(matmul(I32(a, {m, k}), I32(b, {k, n}))), want);
}

// ---- batches

TEST(Matmul, BatchDimsBroadcast) {
  const std::vector<int64_t> sa = {2, 1, 3, 4}, sb = {5, 4, 2};
  const std::vector<float> av = RandomValues(Count(sa), 1), bv = RandomValues(Count(sb), 2);
  Tensor c = matmul(F32(av, sa), F32(bv, sb));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c.shape(), (Shape{2, 5, 3, 2}));
  const Reference ref = NaiveMatmul(av, sa, bv, sb);
  EXPECT_EQ(ref.sizes, (std::vector<int64_t>{2, 5, 3, 2}));
  EXPECT_TRUE(MatchesReference(ReadF32(c), ref, DType::kF32));
}

TEST(Matmul, BatchBroadcastHandValues) {
  // a: two [1,2] matrices; b: one [2,2] matrix shared by both.
  Tensor a = F32({1, 2, 3, 4}, {2, 1, 2});
  Tensor b = F32({1, 10, 100, 1000}, {2, 2});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(ReadF32(c), (std::vector<float>{201, 2010, 403, 4030}));
  // And the other way around: one [1,2] against two [2,1].
  Tensor d = matmul(F32({1, 2}, {1, 2}), F32({3, 4, 5, 6}, {2, 2, 1}));
  EXPECT_EQ(d.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(ReadF32(d), (std::vector<float>{11, 17}));
}

TEST(Matmul, BatchShapes) {
  struct Case {
    std::vector<int64_t> a, b, out;
  };
  for (const Case& c : std::vector<Case>{
           {{3, 2, 4}, {3, 4, 5}, {3, 2, 5}},
           {{2, 3}, {4, 3, 5}, {4, 2, 5}},
           {{4, 2, 3}, {3, 5}, {4, 2, 5}},
           {{1, 2, 3}, {6, 3, 1}, {6, 2, 1}},
           {{2, 1, 1, 2, 3}, {1, 3, 1, 3, 2}, {2, 3, 1, 2, 2}},
           {{1, 1, 2, 3}, {3, 2}, {1, 1, 2, 2}},
       }) {
    SCOPED_TRACE(Shape::FromExtents(c.a).ToString() + " x " + Shape::FromExtents(c.b).ToString());
    const std::vector<float> av = RandomValues(Count(c.a), 5), bv = RandomValues(Count(c.b), 6);
    Tensor y = matmul(F32(av, c.a), F32(bv, c.b));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y.shape(), Shape::FromExtents(c.out));
    EXPECT_TRUE(MatchesReference(ReadF32(y), NaiveMatmul(av, c.a, bv, c.b), DType::kF32));
  }
}

// ---- vector operands

TEST(Matmul, VectorTimesMatrix) {
  Tensor v = F32({1, 2, 3}, {3});
  Tensor m = F32({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor y = matmul(v, m);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{22, 28}));
}

TEST(Matmul, MatrixTimesVector) {
  Tensor m = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v = F32({1, 0, -1}, {3});
  Tensor y = matmul(m, v);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{-2, -2}));
}

TEST(Matmul, VectorTimesVectorIsZeroDimensional) {
  Tensor y = matmul(F32({1, 2, 3}, {3}), F32({4, 5, 6}, {3}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.rank(), 0);
  EXPECT_EQ(y.shape(), Shape());
  absl::StatusOr<float> v = y.item<float>();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 32);
  Tensor i = matmul(I32({1, 2}, {2}), I32({-3, 4}, {2}));
  EXPECT_EQ(i.rank(), 0);
  EXPECT_EQ(ReadI64(i), (std::vector<int64_t>{5}));
}

TEST(Matmul, VectorWithBatchedMatrix) {
  // [3] x [2,3,2] -> [2,2]
  Tensor v = F32({1, 1, 1}, {3});
  Tensor m = F32({1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, {2, 3, 2});
  Tensor y = matmul(v, m);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{9, 12, 90, 120}));
  // [2,2,3] x [3] -> [2,2]
  Tensor z = matmul(F32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3}), F32({1, 0, 1}, {3}));
  EXPECT_EQ(z.shape(), (Shape{2, 2}));
  EXPECT_EQ(ReadF32(z), (std::vector<float>{4, 10, 16, 22}));
}

// ---- strided operands

TEST(Matmul, TransposedOperands) {
  // w is stored [3,2]; transpose(w, 0, 1) is the [2,3] matrix w^T.
  const std::vector<float> wv = {1, 2, 3, 4, 5, 6};
  Tensor w = F32(wv, {3, 2});
  Tensor x = F32({1, 0, 2, -1}, {2, 2});
  Tensor y = matmul(x, transpose(w, 0, 1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  // w^T = [[1,3,5],[2,4,6]]; x = [[1,0],[2,-1]]
  EXPECT_EQ(ReadF32(y), (std::vector<float>{1, 3, 5, 0, 2, 4}));
  // transpose(w)^T-style: w^T x w^... as the left operand too.
  Tensor z = matmul(transpose(w, 0, 1), w);  // [2,3] x [3,2]
  EXPECT_EQ(ReadF32(z), (std::vector<float>{35, 44, 44, 56}));
  // Both operands transposed, batched, larger.
  const std::vector<float> av = RandomValues(2 * 17 * 9, 11), bv = RandomValues(2 * 5 * 17, 12);
  Tensor a = transpose(F32(av, {2, 17, 9}), -1, -2);  // [2,9,17]
  Tensor b = transpose(F32(bv, {2, 5, 17}), 1, 2);    // [2,17,5]
  Tensor c = matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c.shape(), (Shape{2, 9, 5}));
  EXPECT_TRUE(testing::AllClose(ReadF32(c), ReadF32(matmul(contiguous(a), contiguous(b))), 1e-5,
                                1e-5));
  std::vector<float> ad = ReadF32(a), bd = ReadF32(b);
  EXPECT_TRUE(MatchesReference(ReadF32(c), NaiveMatmul(ad, {2, 9, 17}, bd, {2, 17, 5}),
                               DType::kF32));
}

TEST(Matmul, SlicedAndExpandedOperands) {
  // Every second column of a [2,6] matrix is a [2,3] matrix with stride 2.
  Tensor a = slice(F32({1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, {2, 6}), 1, 0, 6, 2);
  Tensor b = F32({7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_EQ(ReadF32(matmul(a, b)), (std::vector<float>{58, 64, 139, 154}));
  // Rows 1 and 3 of a [4,3] matrix as the right operand's K rows.
  Tensor r = slice(F32({0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6}, {4, 3}), 0, 1, 4, 2);  // [2,3]
  EXPECT_EQ(ReadF32(matmul(F32({1, 1}, {1, 2}), r)), (std::vector<float>{5, 7, 9}));
  // A matrix expanded over a batch (stride 0).
  Tensor e = expand(F32({1, 2, 3, 4}, {1, 2, 2}), {3, 2, 2});
  Tensor y = matmul(e, F32({1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0}, {3, 2, 2}));
  EXPECT_EQ(y.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{1, 2, 3, 4, 2, 4, 6, 8, 2, 1, 4, 3}));
}

TEST(Matmul, OperandsAtAnOffsetInTheirStorage) {
  // Rows 2 and 3 of a [4,3] matrix: contiguous, but not at the start.
  Tensor base = F32({9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6}, {4, 3});
  Tensor a = slice(base, 0, 2, 4);
  Tensor b = F32({7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_EQ(ReadF32(matmul(a, b)), (std::vector<float>{58, 64, 139, 154}));
  // The right operand as the transpose of an offset block: w^T for w = rows 1..2.
  Tensor w = slice(F32({0, 0, 0, 7, 9, 11, 8, 10, 12}, {3, 3}), 0, 1, 3);  // [[7,9,11],[8,10,12]]
  Tensor y = matmul(F32({1, 2, 3, 4, 5, 6}, {2, 3}), transpose(w, 0, 1));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{58, 64, 139, 154}));
  // The second matrix of a batch.
  Tensor batch = F32({0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6}, {2, 2, 3});
  Tensor second = slice(batch, 0, 1, 2);
  EXPECT_EQ(ReadF32(matmul(second, b)), (std::vector<float>{58, 64, 139, 154}));
  Tensor i = slice(MakeInt(DType::kI32, {0, 0, 1, 2, 3, 4}, {3, 2}), 0, 1, 3);  // [[1,2],[3,4]]
  EXPECT_EQ(ReadI64(matmul(i, i)), (std::vector<int64_t>{7, 10, 15, 22}));
}

// ---- sizes and dtypes

TEST(Matmul, OddSizesMatchNaiveLoop) {
  const int64_t sizes[] = {1, 3, 17, 127};
  uint32_t seed = 100;
  for (int64_t m : sizes) {
    for (int64_t k : sizes) {
      for (int64_t n : sizes) {
        SCOPED_TRACE(::testing::Message() << "m=" << m << " k=" << k << " n=" << n);
        const std::vector<float> av = RandomValues(m * k, seed++), bv = RandomValues(k * n, seed++);
        Tensor c = matmul(F32(av, {m, k}), F32(bv, {k, n}));
        ASSERT_TRUE(c.ok()) << c.status();
        EXPECT_EQ(c.shape(), (Shape{m, n}));
        EXPECT_TRUE(MatchesReference(ReadF32(c), NaiveMatmul(av, {m, k}, bv, {k, n}),
                                     DType::kF32));
      }
    }
  }
}

TEST(Matmul, SixteenBitInputsMatchNaiveLoop) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t k : {1, 3, 17, 127}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " k=" << k);
      const int64_t m = 17, n = 3;
      const std::vector<float> av = RandomValues(2 * m * k, 7 + k, dtype);
      const std::vector<float> bv = RandomValues(k * n, 8 + k, dtype);
      Tensor c = matmul(MakeFloat(dtype, av, {2, m, k}), MakeFloat(dtype, bv, {k, n}));
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_EQ(c.dtype(), dtype);
      EXPECT_EQ(c.shape(), (Shape{2, m, n}));
      EXPECT_TRUE(MatchesReference(ReadF32(c), NaiveMatmul(av, {2, m, k}, bv, {k, n}), dtype));
    }
  }
}

TEST(Matmul, SixteenBitAccumulatesInF32) {
  // 2048 + 1 + 1 in f16 steps would stay at 2048; f32 accumulation gives 2050.
  Tensor a = MakeFloat(DType::kF16, {2048, 1, 1}, {1, 3});
  Tensor b = MakeFloat(DType::kF16, {1, 1, 1}, {3, 1});
  EXPECT_EQ(ReadF32(matmul(a, b)), (std::vector<float>{2050}));
  // bf16: 256 + 1 + 1 = 258.
  Tensor c = MakeFloat(DType::kBF16, {256, 1, 1}, {1, 3});
  Tensor d = MakeFloat(DType::kBF16, {1, 1, 1}, {3, 1});
  EXPECT_EQ(ReadF32(matmul(c, d)), (std::vector<float>{258}));
}

TEST(Matmul, EmptyDims) {
  Tensor z = matmul(zeros({2, 0}), zeros({0, 3}));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(ReadF32(z), std::vector<float>(6, 0.f));
  Tensor m = matmul(zeros({0, 3}), ones({3, 2}));
  EXPECT_EQ(m.shape(), (Shape{0, 2}));
  EXPECT_TRUE(ReadF32(m).empty());
  Tensor b = matmul(zeros({0, 2, 3}), ones({3, 4}));
  EXPECT_EQ(b.shape(), (Shape{0, 2, 4}));
  EXPECT_TRUE(ReadF32(b).empty());
  EXPECT_EQ(ReadI64(matmul(zeros({2, 0}, DType::kI32), zeros({0, 1}, DType::kI32))),
            (std::vector<int64_t>{0, 0}));
}

TEST(Matmul, ComposesWithOtherOps) {
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  Tensor w = F32({1, 0, 0, 1}, {2, 2});
  Tensor y = matmul(x + 1.0, w) * 2.0;
  EXPECT_EQ(ReadF32(y), (std::vector<float>{4, 6, 8, 10}));
  Tensor s = sum(matmul(x, x), 1);
  EXPECT_EQ(ReadF32(s), (std::vector<float>{7 + 10, 15 + 22}));
}

TEST(Matmul, SymbolicRowCount) {
  const Symbol n("n", 8);
  Tensor a = full({Dim(n), 3}, 1);
  Tensor y = matmul(a, F32({1, 2, 3, 4, 5, 6}, {3, 2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.shape(), (Shape{Dim(n), 2}));
  EXPECT_EQ(ReadF32(y, Bindings{{n, 2}}), (std::vector<float>{9, 12, 9, 12}));
}

// ---- errors

TEST(Matmul, RejectsDifferentInnerDims) {
  Tensor y = matmul(zeros({2, 3}), zeros({4, 2}));
  ExpectInvalidArgument(y);
  EXPECT_THAT(y.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(y.status().message(), HasSubstr("[4,2]"));
  ExpectInvalidArgument(matmul(zeros({3}), zeros({4})));
  ExpectInvalidArgument(matmul(zeros({3}), zeros({4, 2})));
  ExpectInvalidArgument(matmul(zeros({2, 3}), zeros({4})));
  ExpectInvalidArgument(matmul(zeros({5, 2, 3}), zeros({5, 2, 3})));
}

TEST(Matmul, RejectsMismatchedDTypes) {
  Tensor y = matmul(zeros({2, 3}, DType::kF32), zeros({3, 2}, DType::kF16));
  ExpectInvalidArgument(y);
  EXPECT_THAT(y.status().message(), HasSubstr("f32"));
  EXPECT_THAT(y.status().message(), HasSubstr("f16"));
  ExpectInvalidArgument(matmul(zeros({2, 3}, DType::kI32), zeros({3, 2}, DType::kI64)));
  ExpectInvalidArgument(matmul(zeros({2, 3}, DType::kBF16), zeros({3, 2}, DType::kF16)));
}

TEST(Matmul, RejectsRankZero) {
  ExpectInvalidArgument(matmul(scalar(2), zeros({2, 2})));
  ExpectInvalidArgument(matmul(zeros({2, 2}), scalar(2)));
  ExpectInvalidArgument(matmul(scalar(2), scalar(3)));
  ExpectInvalidArgument(matmul(scalar(2), zeros({2})));
}

TEST(Matmul, RejectsBoolInputs) {
  Tensor b = cast(ones({2, 2}), DType::kBool);
  ASSERT_TRUE(b.ok());
  Tensor y = matmul(b, b);
  ExpectInvalidArgument(y);
  EXPECT_THAT(y.status().message(), HasSubstr("bool"));
}

TEST(Matmul, RejectsBatchDimsThatDoNotBroadcast) {
  Tensor y = matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
  ExpectInvalidArgument(y);
  EXPECT_THAT(y.status().message(), HasSubstr("[2,3,4]"));
  EXPECT_THAT(y.status().message(), HasSubstr("[3,4,5]"));
  ExpectInvalidArgument(matmul(zeros({2, 1, 3, 4}), zeros({3, 5, 4, 2})));
}

TEST(Matmul, PassesOnInputErrors) {
  Tensor bad = scalar(2.5, DType::kI32);
  EXPECT_EQ(matmul(bad, zeros({2, 2})).status(), bad.status());
  EXPECT_EQ(matmul(zeros({2, 2}), bad).status(), bad.status());
  EXPECT_EQ(matmul(Tensor(), zeros({2, 2})).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kiln
