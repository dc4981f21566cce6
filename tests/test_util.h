// Helpers shared by the tests.
#ifndef KILN_TESTS_TEST_UTIL_H_
#define KILN_TESTS_TEST_UTIL_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensor/half.h"
#include "tensor/tensor.h"

namespace kiln::testing {

// Reads a tensor as f32 (any floating dtype) or fails the test.
std::vector<float> ReadF32(const Tensor& t, const Bindings& bindings = {});
std::vector<int64_t> ReadI64(const Tensor& t, const Bindings& bindings = {});

// ||a - b|| / ||b|| (0 when both are zero), over equally long vectors.
double RelativeL2(const std::vector<float>& a, const std::vector<float>& b);

// Values as doubles for any dtype (bool and integers below 2^53 exactly).
std::vector<double> ReadAny(const Tensor& t);

// A realized f32 CPU tensor.
Tensor F32(std::vector<float> values, std::vector<int64_t> sizes);
Tensor I32(std::vector<int32_t> values, std::vector<int64_t> sizes);

// A realized tensor of a floating dtype holding `values` rounded to it.
Tensor MakeFloat(DType dtype, const std::vector<float>& values, std::vector<int64_t> sizes);

// An integer or bool tensor; every value must be in the dtype's range.
Tensor MakeInt(DType dtype, const std::vector<int64_t>& values, std::vector<int64_t> sizes);

// A rank-1 integer or bool tensor (MakeInt with sizes {values.size()}).
Tensor Vec(DType dtype, const std::vector<int64_t>& values);

// A bool tensor of 0/1 values.
Tensor Bools(const std::vector<int64_t>& values, std::vector<int64_t> sizes);

// `value` rounded to a floating dtype by the library (the rule cast() uses).
float RoundTo(DType dtype, float value);

// The raw bits of each 16-bit float, for exact comparisons.
std::vector<uint16_t> Bits(const std::vector<Half>& v);
std::vector<uint16_t> Bits(const std::vector<BFloat16>& v);

// The dtypes by class, for tests that loop over every dtype an op accepts.
inline constexpr std::array<DType, 3> kFloatDTypes = {DType::kF32, DType::kF16, DType::kBF16};
inline constexpr std::array<DType, 3> kIntDTypes = {DType::kI32, DType::kI64, DType::kU8};
inline constexpr std::array<DType, 6> kNumericDTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                        DType::kI32, DType::kI64, DType::kU8};
inline constexpr std::array<DType, 7> kAllDTypes = {
    DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8, DType::kBool};

// f32 infinity and quiet NaN, for inputs and expected values.
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A binary op by name, and the lists of them, for tests that run each one.
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
struct NamedBinary {
  const char* name;
  BinaryFn op;
};
const std::vector<NamedBinary>& ArithmeticOps();  // add sub mul div pow maximum minimum
const std::vector<NamedBinary>& ComparisonOps();  // eq ne lt le gt ge
std::vector<NamedBinary> AllBinaryOps();          // ArithmeticOps() then ComparisonOps()

// Element-wise |a - b| <= atol + rtol * |b|, with a message naming the index.
::testing::AssertionResult AllClose(const std::vector<float>& actual,
                                    const std::vector<float>& expected, double atol = 1e-5,
                                    double rtol = 1e-5);

// The same values exactly, NaN equal to NaN.
::testing::AssertionResult SameFloats(const std::vector<float>& actual,
                                      const std::vector<float>& expected);

// `t` holds an InvalidArgument error whose message names `op`.
void ExpectInvalidArgument(const Tensor& t, absl::string_view op);

// The value of an OK StatusOr; fails the test (and returns T{}) otherwise.
template <typename T>
T ValueOrFail(absl::StatusOr<T> v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *std::move(v) : T{};
}

// Every element of `got` within `tolerance` x max|want| of `want` (the first
// few misses are reported); returns the number of misses.
int ExpectWithinScale(const std::vector<float>& got, const std::vector<float>& want, double tolerance);

// How many times `needle` occurs in `text`, not overlapping.
int CountSubstr(const std::string& text, const std::string& needle);

// A status's message as a std::string, for string matchers.
std::string Message(const absl::Status& s);

// A fresh, empty directory `name` under the test temp dir; returns its path.
std::string FreshTempDir(const std::string& name);

// Writes `bytes` to the file `path` (binary); fails the test if it cannot.
void WriteFile(const std::string& path, const std::string& bytes);

// A fresh directory under the test temp dir, removed with its contents when
// the object goes.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(absl::string_view prefix = "kiln_test");
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln::testing

// Status matchers.
#define KILN_EXPECT_OK(expr)                                   \
  do {                                                         \
    const ::absl::Status _kiln_status = (expr);                \
    EXPECT_TRUE(_kiln_status.ok()) << _kiln_status.ToString(); \
  } while (false)
#define KILN_ASSERT_OK(expr)                                   \
  do {                                                         \
    const ::absl::Status _kiln_status = (expr);                \
    ASSERT_TRUE(_kiln_status.ok()) << _kiln_status.ToString(); \
  } while (false)

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

#endif  // KILN_TESTS_TEST_UTIL_H_
