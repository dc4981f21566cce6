// Tests of the comparisons (eq ne lt le gt ge) and where: hand-computed
// values for every dtype, NaN, large integers, broadcasting, the scalar
// overloads, and the errors.
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::BinaryFn;
using testing::Bools;
using testing::ComparisonOps;
using testing::F32;
using testing::I32;
using testing::kAllDTypes;
using testing::kFloatDTypes;
using testing::kNaN;
using testing::kNumericDTypes;
using testing::MakeFloat;
using testing::ReadAny;
using testing::ReadF32;
using testing::ReadI64;
using testing::RoundTo;
using testing::Vec;

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

}  // namespace
}  // namespace kiln
