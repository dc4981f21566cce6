#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::F32;
using testing::ReadF32;

TEST(Smoke, AddAndMatmul) {
  Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = F32({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor c = matmul(a + 1.0, b);
  EXPECT_TRUE(testing::AllClose(ReadF32(c), {2 + 4, 3 + 4, 5 + 7, 6 + 7}));
}

}  // namespace
}  // namespace kiln
