#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::F32;
using testing::I32;
using testing::ReadF32;

Tensor Range(int64_t n, std::vector<int64_t> sizes) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return F32(v, sizes);
}

TEST(Reshape, KeepsRowMajorOrder) {
  Tensor x = Range(6, {2, 3});
  Tensor y = reshape(x, {3, 2});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Reshape, InfersMinusOne) {
  Tensor y = reshape(Range(24, {2, 3, 4}), {-1, 4});
  EXPECT_EQ(y.shape(), (Shape{6, 4}));
}

TEST(Reshape, IsAViewOfContiguousData) {
  Tensor x = Range(6, {2, 3});
  Tensor y = reshape(x, {6});
  KILN_EXPECT_OK(y.realize());
  EXPECT_EQ(y.node()->data.storage, x.node()->data.storage);
}

TEST(Reshape, CopiesWhenTheLayoutForbidsAView) {
  Tensor x = Range(6, {2, 3});
  Tensor y = reshape(transpose(x, 0, 1), {6});
  EXPECT_EQ(ReadF32(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_NE(y.node()->data.storage, x.node()->data.storage);
}

TEST(Reshape, ViewOfTransposedSplitsAxis) {
  // [3,4] transposed is [4,3] with strides (1,4); splitting the 4 is a view.
  Tensor x = Range(12, {3, 4});
  Tensor t = transpose(x, 0, 1);
  Tensor y = reshape(t, {2, 2, 3});
  std::vector<float> expected;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) expected.push_back(static_cast<float>(j * 4 + i));
  }
  EXPECT_EQ(ReadF32(y), expected);
  EXPECT_EQ(y.node()->data.storage, x.node()->data.storage);
}

TEST(Reshape, RejectsElementCountChange) {
  Tensor y = reshape(Range(6, {2, 3}), {4});
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("reshape"));
  EXPECT_THAT(y.status().message(), HasSubstr("[2,3]"));
}

TEST(Reshape, RejectsTwoMinusOnes) {
  EXPECT_EQ(reshape(Range(6, {2, 3}), {-1, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Reshape, SymbolicFactorsMustMatch) {
  Symbol n("n", 64);
  Tensor x = zeros({Dim(n), 4});
  EXPECT_TRUE(reshape(x, {Dim(n), 2, 2}).ok());
  EXPECT_EQ(reshape(x, {-1}).shape(), (Shape{Dim(n) * 4}));
  EXPECT_EQ(reshape(x, {8, -1}).status().code(), absl::StatusCode::kInvalidArgument);
  Tensor y = reshape(x, {2, Dim(n) * 2});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(testing::ReadF32(y, {{n, 3}}).size(), 12u);
}

TEST(Permute, ReordersAxes) {
  Tensor x = Range(24, {2, 3, 4});
  Tensor y = permute(x, {2, 0, 1});
  EXPECT_EQ(y.shape(), (Shape{4, 2, 3}));
  std::vector<float> v = ReadF32(y);
  // y[k][i][j] == x[i][j][k]
  EXPECT_EQ(v[(3 * 2 + 1) * 3 + 2], static_cast<float>((1 * 3 + 2) * 4 + 3));
}

TEST(Permute, RejectsNonPermutations) {
  Tensor x = Range(6, {2, 3});
  EXPECT_EQ(permute(x, {0, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(permute(x, {0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(permute(x, {0, 2}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Transpose, SwapsTwoAxesAndAcceptsNegativeAxes) {
  Tensor y = transpose(Range(6, {2, 3}), -1, -2);
  EXPECT_EQ(ReadF32(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(transpose(Range(6, {2, 3}), 0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Slice, TakesARangeWithStep) {
  Tensor x = Range(10, {10});
  EXPECT_EQ(ReadF32(slice(x, 0, 1, 8, 3)), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(ReadF32(slice(x, 0, -3, 10)), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(ReadF32(slice(x, 0, 2, -6)), (std::vector<float>{2, 3}));
  EXPECT_EQ(slice(x, 0, 4, 4).shape(), (Shape{0}));
}

TEST(Slice, SlicesInnerAxisAsAView) {
  Tensor x = Range(12, {3, 4});
  Tensor y = slice(x, 1, 1, 3);
  EXPECT_EQ(ReadF32(y), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(y.node()->data.storage, x.node()->data.storage);
}

TEST(Slice, OutOfRangeBoundsAreErrors) {
  Tensor x = Range(10, {10});
  EXPECT_EQ(slice(x, 0, 0, 11).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(slice(x, 0, -11, 3).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(slice(x, 0, 5, 3).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(slice(x, 0, 0, 3, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(slice(x, 1, 0, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(slice(x, 0, 0, 11).status().message(), HasSubstr("slice"));
}

TEST(Slice, SymbolicStopWithinItsBound) {
  Symbol pos("pos", 9);
  Tensor x = Range(10, {10});
  Tensor y = slice(x, 0, 0, Dim(pos) + 1);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y.shape(), (Shape{Dim(pos) + 1}));
  EXPECT_EQ(ReadF32(y, {{pos, 3}}), (std::vector<float>{0, 1, 2, 3}));
  // A bound that could pass the end is rejected when recorded.
  Symbol big("big", 10);
  EXPECT_EQ(slice(x, 0, 0, Dim(big) + 1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(Expand, BroadcastsWithoutCopy) {
  Tensor x = F32({1, 2, 3}, {3, 1});
  Tensor y = expand(x, {2, 3, 4});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  std::vector<float> v = ReadF32(y);
  EXPECT_EQ(v.size(), 24u);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[5], 2);
  EXPECT_EQ(v[23], 3);
  EXPECT_EQ(y.node()->data.storage, x.node()->data.storage);
  EXPECT_EQ(expand(x, {-1, 5}).shape(), (Shape{3, 5}));
}

TEST(Expand, RejectsNonUnitAxes) {
  Tensor x = F32({1, 2, 3}, {3});
  EXPECT_EQ(expand(x, {4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(expand(x, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Squeeze, RemovesAndInsertsUnitAxes) {
  Tensor x = Range(6, {2, 1, 3});
  EXPECT_EQ(squeeze(x, 1).shape(), (Shape{2, 3}));
  EXPECT_EQ(unsqueeze(x, 0).shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(unsqueeze(x, -1).shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(squeeze(x, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unsqueeze(x, 5).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Contiguous, DensifiesStridedViews) {
  Tensor x = Range(6, {2, 3});
  Tensor y = contiguous(transpose(x, 0, 1));
  KILN_EXPECT_OK(y.realize());
  EXPECT_TRUE(y.node()->data.is_contiguous());
  EXPECT_EQ(ReadF32(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Concat, JoinsAlongAnyAxis) {
  Tensor a = Range(4, {2, 2});
  Tensor b = F32({10, 11}, {2, 1});
  EXPECT_EQ(ReadF32(concat({a, b}, 1)), (std::vector<float>{0, 1, 10, 2, 3, 11}));
  EXPECT_EQ(ReadF32(concat({a, a}, 0)), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(ReadF32(concat({transpose(a, 0, 1), b}, -1)),
            (std::vector<float>{0, 2, 10, 1, 3, 11}));
}

TEST(Concat, RejectsMismatchedInputs) {
  Tensor a = Range(4, {2, 2});
  EXPECT_EQ(concat({a, Range(3, {3, 1})}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(concat({a, cast(a, DType::kF16)}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(concat({a, a}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(concat({}, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Concat, SymbolicLengthsAdd) {
  Symbol n("n", 8);
  Tensor a = zeros({Dim(n), 2});
  Tensor b = ones({3, 2});
  Tensor c = concat({a, b}, 0);
  EXPECT_EQ(c.shape(), (Shape{Dim(n) + 3, 2}));
  EXPECT_EQ(ReadF32(c, {{n, 1}}), (std::vector<float>{0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(IndexSelect, LooksUpEmbeddingRows) {
  Tensor table = Range(12, {4, 3});
  Tensor ids = I32({2, 0, 2}, {3});
  EXPECT_EQ(ReadF32(index_select(table, 0, ids)),
            (std::vector<float>{6, 7, 8, 0, 1, 2, 6, 7, 8}));
}

TEST(IndexSelect, GathersAlongInnerAxisWithIndexShape) {
  Tensor x = Range(12, {3, 4});
  Tensor ids = Tensor::FromHost<int64_t>({3, 1, 0, 0}, {2, 2});
  Tensor y = index_select(x, 1, ids);
  EXPECT_EQ(y.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(ReadF32(y), (std::vector<float>{3, 1, 0, 0, 7, 5, 4, 4, 11, 9, 8, 8}));
}

TEST(IndexSelect, OutOfRangeIndexFailsAtRealize) {
  Tensor table = Range(12, {4, 3});
  Tensor y = index_select(table, 0, I32({1, 4}, {2}));
  ASSERT_TRUE(y.ok());
  absl::Status s = y.realize();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("index 4"));
  EXPECT_EQ(index_select(table, 0, I32({-1}, {1})).realize().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(index_select(table, 0, F32({1}, {1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SliceUpdate, WritesABlock) {
  Tensor dst = zeros({4, 2});
  Tensor src = F32({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(ReadF32(slice_update(dst, src, 0, 1)),
            (std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0}));
  EXPECT_EQ(ReadF32(slice_update(dst, F32({5, 6, 7, 8}, {4, 1}), 1, 1)),
            (std::vector<float>{0, 5, 0, 6, 0, 7, 0, 8}));
}

TEST(SliceUpdate, LeavesAVisibleOldValueIntact) {
  Tensor cache = contiguous(zeros({3}));
  KILN_EXPECT_OK(cache.realize());
  Tensor updated = slice_update(cache, F32({9}, {1}), 0, 1);
  EXPECT_EQ(ReadF32(updated), (std::vector<float>{0, 9, 0}));
  EXPECT_EQ(ReadF32(cache), (std::vector<float>{0, 0, 0}));
}

TEST(SliceUpdate, UpdatesInPlaceWhenNothingElseSeesTheOldValue) {
  Tensor cache = contiguous(zeros({4}));
  KILN_EXPECT_OK(cache.realize());
  const void* storage = cache.node()->data.storage->data();
  for (int step = 0; step < 4; ++step) {
    cache = slice_update(cache, full({1}, step + 1.0), 0, step);
    KILN_EXPECT_OK(cache.realize());
    EXPECT_EQ(cache.node()->data.storage->data(), storage) << "step " << step;
  }
  EXPECT_EQ(ReadF32(cache), (std::vector<float>{1, 2, 3, 4}));
}

TEST(SliceUpdate, NeverWritesReadOnlyMemory) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3});
  Tensor weights = Tensor::WrapHost(DType::kF32, {3}, owner->data(), 12, owner, false);
  Tensor updated = slice_update(weights, F32({0}, {1}), 0, 0);
  weights = Tensor();
  EXPECT_EQ(ReadF32(updated), (std::vector<float>{0, 2, 3}));
  EXPECT_EQ((*owner)[0], 1.0f);
}

TEST(SliceUpdate, SymbolicStartIsBoundAtRealize) {
  Symbol pos("pos", 3);
  Tensor cache = zeros({4});
  Tensor y = slice_update(cache, F32({5}, {1}), 0, Dim(pos));
  EXPECT_EQ(ReadF32(y, {{pos, 2}}), (std::vector<float>{0, 0, 5, 0}));
}

TEST(SliceUpdate, RejectsBlocksThatDoNotFit) {
  Tensor dst = zeros({4, 2});
  EXPECT_EQ(slice_update(dst, zeros({2, 2}), 0, 3).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(slice_update(dst, zeros({2, 3}), 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(slice_update(dst, zeros({2, 2}, DType::kF16), 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  Symbol pos("pos", 10);
  EXPECT_EQ(slice_update(dst, zeros({1, 2}), 0, Dim(pos)).status().code(),
            absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace kiln
