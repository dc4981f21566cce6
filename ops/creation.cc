#include "ops/creation.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/movement.h"
#include "ops/record.h"

namespace kiln {

using ops_internal::RecordSource;

namespace {

absl::Status CheckRepresentable(absl::string_view op, double value, DType dtype) {
  if (IsFloating(dtype)) return absl::OkStatus();  // rounds; inf and NaN included
  if (dtype == DType::kBool) {
    if (value == 0 || value == 1) return absl::OkStatus();
  } else {
    double lo = 0, hi = 0;
    switch (dtype) {
      case DType::kI32:
        lo = std::numeric_limits<int32_t>::min();
        hi = std::numeric_limits<int32_t>::max();
        break;
      case DType::kI64:  // [-2^63, 2^63): a double that is an integer is exact
        lo = -9223372036854775808.0;
        hi = std::nextafter(9223372036854775808.0, 0.0);
        break;
      case DType::kU8:
        lo = 0;
        hi = 255;
        break;
      default:
        break;
    }
    if (value == std::trunc(value) && value >= lo && value <= hi) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(op, ": the value ", value,
                                                 " is not representable in ", DTypeName(dtype)));
}

absl::Status CheckConcreteFinite(absl::string_view op, std::initializer_list<double> values) {
  for (double v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": arguments must be finite, got ", v));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Tensor scalar(double value, DType dtype, Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckRepresentable("scalar", value, dtype));
  return RecordSource(OpKind::kConstant, ConstantAttrs{value}, dtype, Shape(), device);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(shape.Validate("full"));
  KILN_RETURN_IF_ERROR_TENSOR(CheckRepresentable("full", value, dtype));
  return expand(scalar(value, dtype, device), shape);
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0, dtype, device);
}

Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}

Tensor full_like(const Tensor& like, double value) {
  KILN_RETURN_IF_ERROR_TENSOR(ops_internal::CheckInputs("full_like", {&like}));
  return full(like.shape(), value, like.dtype(), like.device());
}

Tensor zeros_like(const Tensor& like) { return full_like(like, 0); }
Tensor ones_like(const Tensor& like) { return full_like(like, 1); }

namespace {

Tensor RecordIota(absl::string_view op, const Dim& length, const Dim& start, double offset,
                  double step, DType dtype, Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckConcreteFinite(op, {offset, step}));
  KILN_RETURN_IF_ERROR_TENSOR(start.Validate(absl::StrCat(op, " start")));
  if (dtype == DType::kBool) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(op, ": bool is not a valid dtype")));
  }
  return RecordSource(OpKind::kIota, IotaAttrs{start, offset, step}, dtype, Shape{length},
                      device);
}

}  // namespace

Tensor iota(const Dim& length, const Dim& start, double step, DType dtype, Device device) {
  return RecordIota("iota", length, start, 0, step, dtype, device);
}

Tensor arange(double start, double stop, double step, DType dtype, Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckConcreteFinite("arange", {start, stop, step}));
  if (step == 0) {
    return Tensor::Error(absl::InvalidArgumentError("arange: step must not be 0"));
  }
  const double count = std::max(0.0, std::ceil((stop - start) / step));
  if (count > static_cast<double>(kMaxDimValue)) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("arange: ", count, " elements is too many")));
  }
  return RecordIota("arange", static_cast<int64_t>(count), 0, start, step, dtype, device);
}

Tensor random_uniform(const Shape& shape, uint64_t seed, double low, double high, DType dtype,
                      Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckConcreteFinite("random_uniform", {low, high}));
  if (!IsFloating(dtype)) {
    return Tensor::Error(absl::InvalidArgumentError(absl::StrCat(
        "random_uniform: needs a floating dtype, got ", DTypeName(dtype))));
  }
  if (!(low < high)) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("random_uniform: low (", low, ") must be below high (", high, ")")));
  }
  return RecordSource(OpKind::kRandom,
                      RandomAttrs{seed, RandomDistribution::kUniform, low, high}, dtype, shape,
                      device);
}

Tensor random_normal(const Shape& shape, uint64_t seed, double mean, double stddev, DType dtype,
                     Device device) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckConcreteFinite("random_normal", {mean, stddev}));
  if (!IsFloating(dtype)) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("random_normal: needs a floating dtype, got ", DTypeName(dtype))));
  }
  if (stddev < 0) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("random_normal: stddev must not be negative, got ", stddev)));
  }
  return RecordSource(OpKind::kRandom,
                      RandomAttrs{seed, RandomDistribution::kNormal, mean, stddev}, dtype, shape,
                      device);
}

}  // namespace kiln
