// Helpers shared by the tests.
#ifndef KILN_TESTS_TEST_UTIL_H_
#define KILN_TESTS_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensor/tensor.h"

namespace kiln::testing {

// Reads a tensor as f32 (any floating dtype) or fails the test.
std::vector<float> ReadF32(const Tensor& t, const Bindings& bindings = {});
std::vector<int64_t> ReadI64(const Tensor& t, const Bindings& bindings = {});

// A realized f32 CPU tensor.
Tensor F32(std::vector<float> values, std::vector<int64_t> sizes);
Tensor I32(std::vector<int32_t> values, std::vector<int64_t> sizes);

// Element-wise |a - b| <= atol + rtol * |b|, with a message naming the index.
::testing::AssertionResult AllClose(const std::vector<float>& actual,
                                    const std::vector<float>& expected, double atol = 1e-5,
                                    double rtol = 1e-5);

}  // namespace kiln::testing

// Status matchers.
#define KILN_EXPECT_OK(expr)                                   \
  do {                                                         \
    const ::absl::Status _kiln_status = (expr);                \
    EXPECT_TRUE(_kiln_status.ok()) << _kiln_status.ToString(); \
  } while (false)

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

#endif  // KILN_TESTS_TEST_UTIL_H_
