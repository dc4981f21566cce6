// Source reference kernels: constant, iota, random.
#include <variant>

#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"
#include "ops/random_bits.h"

namespace kiln::cpu {
namespace {

// Rounds the values to `dtype` once, then stores them as `storage`.
absl::StatusOr<TensorData> StoreValues(const std::vector<double>& values, DType dtype,
                                       DType storage, const Extents& sizes) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(storage, sizes);
  if (!out.ok()) return out.status();
  const int64_t n = static_cast<int64_t>(values.size());
  if (storage == dtype) {
    ConvertFromDouble(values.data(), dtype, out->storage->data(), n);
  } else {
    std::vector<char> rounded(static_cast<size_t>(n) * DTypeSize(dtype));
    ConvertFromDouble(values.data(), dtype, rounded.data(), n);
    ConvertElements(dtype, rounded.data(), storage, out->storage->data(), n);
  }
  return out;
}

}  // namespace

absl::StatusOr<TensorData> RunSource(const Node& node, const Types& types, const Extents& sizes,
                                     const Bindings& bindings) {
  std::vector<double> values(static_cast<size_t>(NumElements(sizes)));
  if (const auto* c = std::get_if<ConstantAttrs>(&node.attrs)) {
    for (double& v : values) v = c->value;
  } else if (const auto* iota = std::get_if<IotaAttrs>(&node.attrs)) {
    absl::StatusOr<int64_t> start = iota->start.Evaluate(bindings);
    if (!start.ok()) return start.status();
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<double>(*start) + iota->offset + static_cast<double>(i) * iota->step;
    }
  } else if (const auto* r = std::get_if<RandomAttrs>(&node.attrs)) {
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = r->distribution == RandomDistribution::kUniform
                      ? r->a + (r->b - r->a) * random_bits::Uniform(r->seed, i)
                      : r->a + r->b * random_bits::Normal(r->seed, i);
    }
  }
  return StoreValues(values, node.dtype, types.out, sizes);
}

}  // namespace kiln::cpu
