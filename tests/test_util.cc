#include "tests/test_util.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace kiln::testing {

std::vector<float> ReadF32(const Tensor& t, const Bindings& bindings) {
  Tensor f = t;
  absl::StatusOr<std::vector<float>> values = f.to_host<float>(bindings);
  EXPECT_TRUE(values.ok()) << values.status().ToString();
  return values.ok() ? *values : std::vector<float>{};
}

std::vector<int64_t> ReadI64(const Tensor& t, const Bindings& bindings) {
  absl::StatusOr<std::vector<int64_t>> values = t.to_host<int64_t>(bindings);
  EXPECT_TRUE(values.ok()) << values.status().ToString();
  return values.ok() ? *values : std::vector<int64_t>{};
}

Tensor F32(std::vector<float> values, std::vector<int64_t> sizes) {
  return Tensor::FromHost<float>(values, sizes);
}

Tensor I32(std::vector<int32_t> values, std::vector<int64_t> sizes) {
  return Tensor::FromHost<int32_t>(values, sizes);
}

::testing::AssertionResult AllClose(const std::vector<float>& actual,
                                    const std::vector<float>& expected, double atol,
                                    double rtol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) && a == e) continue;
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::testing
