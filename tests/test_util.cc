#include "tests/test_util.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "tensor/convert.h"

namespace kiln::testing {

double RelativeL2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

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

std::vector<double> ReadAny(const Tensor& t) {
  std::vector<double> out;
  if (IsFloating(t.dtype())) {
    for (float v : ReadF32(t)) out.push_back(v);
  } else {
    for (int64_t v : ReadI64(t)) out.push_back(static_cast<double>(v));
  }
  return out;
}

Tensor F32(std::vector<float> values, std::vector<int64_t> sizes) {
  return Tensor::FromHost<float>(values, sizes);
}

Tensor I32(std::vector<int32_t> values, std::vector<int64_t> sizes) {
  return Tensor::FromHost<int32_t>(values, sizes);
}

Tensor MakeFloat(DType dtype, const std::vector<float>& values, std::vector<int64_t> sizes) {
  std::vector<char> buf(values.size() * DTypeSize(dtype));
  ConvertElements(DType::kF32, values.data(), dtype, buf.data(),
                  static_cast<int64_t>(values.size()));
  return Tensor::FromHostBytes(dtype, sizes, buf.data(), buf.size());
}

Tensor MakeInt(DType dtype, const std::vector<int64_t>& values, std::vector<int64_t> sizes) {
  std::vector<char> buf(values.size() * DTypeSize(dtype));
  ConvertElements(DType::kI64, values.data(), dtype, buf.data(),
                  static_cast<int64_t>(values.size()));
  return Tensor::FromHostBytes(dtype, sizes, buf.data(), buf.size());
}

Tensor Vec(DType dtype, const std::vector<int64_t>& values) {
  return MakeInt(dtype, values, {static_cast<int64_t>(values.size())});
}

Tensor Bools(const std::vector<int64_t>& values, std::vector<int64_t> sizes) {
  return MakeInt(DType::kBool, values, sizes);
}

float RoundTo(DType dtype, float value) {
  float out = 0;
  std::vector<char> buf(DTypeSize(dtype));
  ConvertElements(DType::kF32, &value, dtype, buf.data(), 1);
  ConvertElements(dtype, buf.data(), DType::kF32, &out, 1);
  return out;
}

std::vector<uint16_t> Bits(const std::vector<Half>& v) {
  std::vector<uint16_t> out;
  for (Half h : v) out.push_back(h.bits);
  return out;
}

std::vector<uint16_t> Bits(const std::vector<BFloat16>& v) {
  std::vector<uint16_t> out;
  for (BFloat16 h : v) out.push_back(h.bits);
  return out;
}

const std::vector<NamedBinary>& ArithmeticOps() {
  static const std::vector<NamedBinary>* ops = new std::vector<NamedBinary>{
      {"add", &add},   {"sub", &sub},         {"mul", &mul},        {"div", &div},
      {"pow", &pow},   {"maximum", &maximum}, {"minimum", &minimum}};
  return *ops;
}

const std::vector<NamedBinary>& ComparisonOps() {
  static const std::vector<NamedBinary>* ops = new std::vector<NamedBinary>{
      {"eq", &eq}, {"ne", &ne}, {"lt", &lt}, {"le", &le}, {"gt", &gt}, {"ge", &ge}};
  return *ops;
}

std::vector<NamedBinary> AllBinaryOps() {
  std::vector<NamedBinary> all = ArithmeticOps();
  for (const NamedBinary& op : ComparisonOps()) all.push_back(op);
  return all;
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

::testing::AssertionResult SameFloats(const std::vector<float>& actual,
                                      const std::vector<float>& expected) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) && std::isnan(expected[i])) continue;
    if (actual[i] != expected[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

void ExpectInvalidArgument(const Tensor& t, absl::string_view op) {
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr(op));
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

int CountSubstr(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

std::string FreshTempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

ScopedTempDir::ScopedTempDir(absl::string_view prefix) {
  std::string pattern = absl::StrCat(::testing::TempDir(), prefix, "_XXXXXX");
  path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

ScopedTempDir::~ScopedTempDir() {
  if (!path_.empty()) std::filesystem::remove_all(path_);
}

int ExpectWithinScale(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return static_cast<int>(want.size());
  double scale = 1e-6;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= tolerance * scale) && bad++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
  return bad;
}

}  // namespace kiln::testing
