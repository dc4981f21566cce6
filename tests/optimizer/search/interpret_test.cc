// The interpreters' view arithmetic: a view of permutes, expands and
// order-keeping reshapes reads the element that ViewOffset works out,
// through strides computed once.
#include "optimizer/search/interpret.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace kiln::search::interpret_internal {
namespace {

using testing::ValueOrFail;

// Every coordinate of the view: the strides give ViewOffset's offset.
void ExpectStridesMatchOffsets(const ugraph::View& view, const std::vector<int64_t>& tensor_shape,
                               const std::vector<int64_t>& view_shape, const std::vector<int64_t>& expected) {
  const std::vector<int64_t> strides = ValueOrFail(ViewStrides(view, tensor_shape, view_shape.size()));
  EXPECT_EQ(strides, expected);
  ForEach(view_shape, [&](const std::vector<int64_t>& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * strides[d];
    EXPECT_EQ(off, ValueOrFail(ViewOffset(view, tensor_shape, c)));
  });
}

TEST(InterpretViews, APermutedAndExpandedViewIsLinear) {
  // A [4, 3] tensor transposed to [3, 4], then given a leading axis of 2.
  ugraph::View view;
  view.source_shape = {Dim(4), Dim(3)};
  view.steps.push_back({.kind = ugraph::ViewStep::Kind::kPermute, .perm = {1, 0}, .shape = {Dim(3), Dim(4)}});
  view.steps.push_back({.kind = ugraph::ViewStep::Kind::kExpand, .shape = {Dim(2), Dim(3), Dim(4)}});
  ExpectStridesMatchOffsets(view, {4, 3}, {2, 3, 4}, {0, 1, 3});
}

TEST(InterpretViews, ABroadcastAxisHasStrideZero) {
  ugraph::View view;  // [1, 5] broadcast to [3, 5]
  view.source_shape = {Dim(1), Dim(5)};
  view.steps.push_back({.kind = ugraph::ViewStep::Kind::kExpand, .shape = {Dim(3), Dim(5)}});
  ExpectStridesMatchOffsets(view, {1, 5}, {3, 5}, {0, 1});
}

// A reshape of the tensor itself keeps its row-major order, and so does
// one that only adds or drops size-1 axes after other steps (a factored
// region's part reading another's output, [h, 1, l] as [h, l]).
TEST(InterpretViews, ReshapesOfTheTensorOrOfUnitAxesAreLinear) {
  ugraph::View whole;
  whole.source_shape = {Dim(6)};
  whole.steps.push_back({.kind = ugraph::ViewStep::Kind::kReshape, .shape = {Dim(2), Dim(3)}});
  ExpectStridesMatchOffsets(whole, {6}, {2, 3}, {3, 1});
  ugraph::View unit;  // [4, 1, 3] transposed to [3, 1, 4], its unit axis dropped
  unit.source_shape = {Dim(4), Dim(1), Dim(3)};
  unit.steps.push_back(
      {.kind = ugraph::ViewStep::Kind::kPermute, .perm = {2, 1, 0}, .shape = {Dim(3), Dim(1), Dim(4)}});
  unit.steps.push_back({.kind = ugraph::ViewStep::Kind::kReshape, .shape = {Dim(3), Dim(4)}});
  ExpectStridesMatchOffsets(unit, {4, 1, 3}, {3, 4}, {1, 3});
}

// A reshape that regroups axes after a permute is not a strided view of
// the tensor: the interpreters do not take it.
TEST(InterpretViews, OtherReshapesAreUnimplemented) {
  ugraph::View view;
  view.source_shape = {Dim(2), Dim(3)};
  view.steps.push_back({.kind = ugraph::ViewStep::Kind::kPermute, .perm = {1, 0}, .shape = {Dim(3), Dim(2)}});
  view.steps.push_back({.kind = ugraph::ViewStep::Kind::kReshape, .shape = {Dim(6)}});
  EXPECT_EQ(ViewStrides(view, {2, 3}, 1).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::search::interpret_internal
