#include "tensor/shape.h"

#include <cstdint>
#include <limits>
#include <string>

#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ValueOrFail;

Hash128 HashOf(const Shape& s) {
  StableHasher h;
  s.Hash(h);
  return h.Finish();
}

TEST(Shape, ToString) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_EQ(Shape().ToString(), "[]");
  EXPECT_EQ(Shape({2}).ToString(), "[2]");
  EXPECT_EQ(Shape({2, 3}).ToString(), "[2,3]");
  EXPECT_EQ(Shape({2, pos + 1, 64}).ToString(), "[2,pos+1,64]");
  EXPECT_EQ(Shape({0, 1}).ToString(), "[0,1]");
}

TEST(Shape, RankAndAccess) {
  const Dim pos(Symbol("pos", 100));
  Shape s{2, pos, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_TRUE(s[1] == pos);
  s[1] = 5;
  EXPECT_TRUE(s == Shape({2, 5, 4}));
  s.push_back(6);
  EXPECT_TRUE(s == Shape({2, 5, 4, 6}));
  s.insert(0, 1);
  EXPECT_TRUE(s == Shape({1, 2, 5, 4, 6}));
  s.erase(2);
  EXPECT_TRUE(s == Shape({1, 2, 4, 6}));
  EXPECT_EQ(Shape().rank(), 0);
}

TEST(Shape, FromExtents) {
  const int64_t sizes[] = {2, 3, 4};
  EXPECT_TRUE(Shape::FromExtents(sizes) == Shape({2, 3, 4}));
  EXPECT_TRUE(Shape::FromExtents({}) == Shape());
}

TEST(Shape, Equality) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_TRUE(Shape({2, 3}) == Shape({2, 3}));
  EXPECT_FALSE(Shape({2, 3}) == Shape({3, 2}));
  EXPECT_FALSE(Shape({2, 3}) == Shape({2, 3, 1}));
  EXPECT_FALSE(Shape({6}) == Shape({2, 3}));
  EXPECT_TRUE(Shape({pos + 1}) == Shape({(pos + 2) - 1}));
  EXPECT_FALSE(Shape({pos}) == Shape({Dim(Symbol("pos", 99))}));
}

TEST(Shape, ConcreteShapes) {
  const Shape s{2, 3, 4};
  EXPECT_TRUE(s.is_concrete());
  EXPECT_THAT(s.extents(), ElementsAre(2, 3, 4));
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.max_elements(), 24);
  EXPECT_EQ(Shape().num_elements(), 1);  // a scalar has one element
  EXPECT_TRUE(Shape().is_concrete());
  EXPECT_EQ(Shape({3, 0, 5}).num_elements(), 0);
}

TEST(Shape, SymbolicShapes) {
  const Symbol pos("pos", 100);
  const Shape s{2, Dim(pos) + 1, 4};
  EXPECT_FALSE(s.is_concrete());
  EXPECT_EQ(s.max_elements(), 2 * 101 * 4);
  absl::StatusOr<Extents> e = s.Evaluate(Bindings{{pos, 9}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(*e, ElementsAre(2, 10, 4));
}

TEST(Shape, EvaluateConcreteNeedsNoBindings) {
  absl::StatusOr<Extents> e = Shape({5, 6}).Evaluate(Bindings{});
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(*e, ElementsAre(5, 6));
}

TEST(Shape, EvaluateUnboundIsFailedPrecondition) {
  const Shape s{2, Dim(Symbol("kv_len", 100))};
  absl::StatusOr<Extents> e = s.Evaluate(Bindings{});
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("kv_len"));
}

TEST(Shape, MaxElementsOfZeroSizedShapeIsZero) {
  // The element count is 0 whatever the other dims are, even when their
  // product alone would overflow int64.
  EXPECT_EQ(Shape({kMaxDimValue, kMaxDimValue, 0}).max_elements(), 0);
  EXPECT_EQ(Shape({0, kMaxDimValue, kMaxDimValue}).max_elements(), 0);
}

TEST(Shape, ValidateAcceptsValidShapes) {
  const Dim pos(Symbol("pos", 100));
  KILN_EXPECT_OK(Shape().Validate("op"));
  KILN_EXPECT_OK(Shape({1, 2, 3, 4, 5, 6}).Validate("op"));  // rank 6 is the limit
  KILN_EXPECT_OK(Shape({0, 7}).Validate("op"));
  KILN_EXPECT_OK(Shape({2, pos + 1}).Validate("op"));
  // Exactly kMaxElements.
  KILN_EXPECT_OK(Shape({int64_t{1} << 24, int64_t{1} << 24}).Validate("op"));
  KILN_EXPECT_OK(Shape({kMaxDimValue}).Validate("op"));
}

TEST(Shape, ValidateRejectsRankAboveLimit) {
  const absl::Status s = Shape({1, 1, 1, 1, 1, 1, 1}).Validate("reshape");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("reshape"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank"));
}

TEST(Shape, ValidateRejectsNegativeDims) {
  const absl::Status s = Shape({2, -1}).Validate("full");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("full"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("[2,-1]"));
  const Dim pos(Symbol("pos", 100));
  EXPECT_EQ(Shape({pos - 1}).Validate("op").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Shape, ValidateRejectsDimsAboveLimit) {
  EXPECT_EQ(Shape({kMaxDimValue + 1}).Validate("op").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Shape({0, kMaxDimValue + 1}).Validate("op").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Shape, ValidateRejectsTooManyElements) {
  const absl::Status s = Shape({int64_t{1} << 24, int64_t{1} << 25}).Validate("matmul");  // 2^49
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("matmul"));
  // Products that overflow int64 are caught, not wrapped.
  EXPECT_EQ(Shape({kMaxDimValue, kMaxDimValue, kMaxDimValue}).Validate("op").code(),
            absl::StatusCode::kInvalidArgument);
  // Counted with every symbol at its upper bound.
  const Dim big(Symbol("big", kMaxDimValue));
  EXPECT_EQ(Shape({big, 512}).Validate("op").code(), absl::StatusCode::kInvalidArgument);
  KILN_EXPECT_OK(Shape({big, 256}).Validate("op"));
}

TEST(Shape, ValidateRejectsOverflowedDims) {
  const Dim over = Dim(int64_t{1} << 40) * (int64_t{1} << 40);
  EXPECT_EQ(Shape({2, over}).Validate("op").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Shape, ValidateAcceptsZeroSizedShapeWithLargeDims) {
  // Zero elements, whatever the other dims: within kMaxElements.
  KILN_EXPECT_OK(Shape({kMaxDimValue, kMaxDimValue, 0}).Validate("op"));
}

TEST(Shape, HashEqualForEqualShapes) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_EQ(HashOf(Shape({2, 3})), HashOf(Shape({2, 3})));
  EXPECT_EQ(HashOf(Shape({pos + 1, 3})), HashOf(Shape({(pos + 3) - 2, 3})));
}

TEST(Shape, HashDiffersForDifferentShapes) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_NE(HashOf(Shape({2, 3})), HashOf(Shape({3, 2})));
  EXPECT_NE(HashOf(Shape({2, 3})), HashOf(Shape({2, 3, 1})));
  EXPECT_NE(HashOf(Shape({6})), HashOf(Shape({2, 3})));
  EXPECT_NE(HashOf(Shape()), HashOf(Shape({1})));
  EXPECT_NE(HashOf(Shape({pos})), HashOf(Shape({100})));
  EXPECT_NE(HashOf(Shape({pos})), HashOf(Shape({Dim(Symbol("pos", 50))})));
}

TEST(Shape, ContiguousStrides) {
  EXPECT_THAT(ContiguousStrides({2, 3, 4}), ElementsAre(12, 4, 1));
  EXPECT_THAT(ContiguousStrides({5}), ElementsAre(1));
  EXPECT_TRUE(ContiguousStrides({}).empty());
  EXPECT_THAT(ContiguousStrides({2, 1, 3}), ElementsAre(3, 3, 1));
  EXPECT_THAT(ContiguousStrides({1, 2, 3, 4, 5, 6}), ElementsAre(720, 360, 120, 30, 6, 1));
}

TEST(Shape, NumElements) {
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 3, 4}), 24);
  EXPECT_EQ(NumElements({2, 0, 4}), 0);
}

TEST(NormalizeAxis, MapsAxesIntoRange) {
  EXPECT_EQ(ValueOrFail(NormalizeAxis(0, 3, "op")), 0);
  EXPECT_EQ(ValueOrFail(NormalizeAxis(2, 3, "op")), 2);
  EXPECT_EQ(ValueOrFail(NormalizeAxis(-1, 3, "op")), 2);
  EXPECT_EQ(ValueOrFail(NormalizeAxis(-3, 3, "op")), 0);
  EXPECT_EQ(ValueOrFail(NormalizeAxis(-1, 1, "op")), 0);
}

TEST(NormalizeAxis, OutOfRangeIsInvalidArgumentNamingTheOp) {
  for (int axis :
       {3, 4, -4, -100, 1000, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()}) {
    absl::StatusOr<int> a = NormalizeAxis(axis, 3, "softmax");
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << axis;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("softmax")) << axis;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(std::to_string(axis))) << axis;
  }
  // A scalar has no axes at all.
  EXPECT_EQ(NormalizeAxis(0, 0, "sum").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeAxis(-1, 0, "sum").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeDeathTest, ExtentsOfSymbolicShapeAborts) {
  const Shape s{Dim(Symbol("pos", 100))};
  EXPECT_DEATH((void)s.extents(), "symbolic");
}

}  // namespace
}  // namespace kiln
