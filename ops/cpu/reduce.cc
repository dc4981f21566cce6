// Reduction reference kernels: sum, max, mean over a set of axes.
#include <cmath>
#include <limits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"

namespace kiln::cpu {
namespace {

// Moves the reduced axes last, so every output element reduces one dense run.
TensorData ReducedAxesLast(const TensorData& in, const ReduceAttrs& attrs, int64_t* inner) {
  TensorData view = in;
  view.sizes.clear();
  view.strides.clear();
  *inner = 1;
  const int rank = static_cast<int>(in.sizes.size());
  std::vector<bool> reduced(rank, false);
  for (int a : attrs.axes) reduced[a] = true;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < rank; ++i) {
      if (reduced[i] != (pass == 1)) continue;
      view.sizes.push_back(in.sizes[i]);
      view.strides.push_back(in.strides[i]);
      if (pass == 1) *inner *= in.sizes[i];
    }
  }
  return view;
}

// Reduces consecutive runs of `inner` elements of `in` (dense).
template <typename C>
absl::StatusOr<TensorData> ReduceRows(const Node& node, DType out_dtype, const C* in, int64_t inner,
                                      const Extents& sizes) {
  xt::xarray<C> out(ToArrayShape(sizes));
  const int64_t rows = static_cast<int64_t>(out.size());
  for (int64_t r = 0; r < rows; ++r) {
    const C* row = in + r * inner;
    if constexpr (std::is_same_v<C, float>) {
      if (node.op == OpKind::kReduceMax) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < inner; ++i) {
          if (std::isnan(row[i]) || row[i] > m) m = row[i];
          if (std::isnan(m)) break;
        }
        out.data()[r] = m;
        continue;
      }
      double total = 0;
      for (int64_t i = 0; i < inner; ++i) total += row[i];
      if (node.op == OpKind::kReduceMean) total /= static_cast<double>(inner);
      out.data()[r] = static_cast<float>(total);
    } else {
      if (node.op == OpKind::kReduceMax) {
        int64_t m = std::numeric_limits<int64_t>::min();
        for (int64_t i = 0; i < inner; ++i) m = row[i] > m ? row[i] : m;
        out.data()[r] = m;
        continue;
      }
      uint64_t total = 0;  // wraps like the stored integer type
      for (int64_t i = 0; i < inner; ++i) total += static_cast<uint64_t>(row[i]);
      out.data()[r] = static_cast<int64_t>(total);
    }
  }
  return Store(out, out_dtype);
}

}  // namespace

absl::StatusOr<TensorData> RunReduce(const Node& node, const Types& types, const TensorData& input,
                                     const Extents& sizes) {
  const auto& attrs = std::get<ReduceAttrs>(node.attrs);
  int64_t inner = 0;
  const TensorData view = ReducedAxesLast(input, attrs, &inner);
  if (inner == 0 && node.op == OpKind::kReduceMax) {
    return absl::InvalidArgumentError(absl::StrCat("max: reducing an empty axis of ",
                                                   DTypeName(node.dtype),
                                                   node.inputs[0]->shape.ToString()));
  }
  if (ComputesInFloat(node.dtype)) {
    if (types.in[0] == DType::kF32 && view.is_contiguous()) {
      return ReduceRows<float>(node, types.out, view.ptr<float>(), inner, sizes);
    }
    return ReduceRows<float>(node, types.out, Load<float>(view, types.in[0]).data(), inner, sizes);
  }
  return ReduceRows<int64_t>(node, types.out, Load<int64_t>(view, types.in[0]).data(), inner,
                             sizes);
}

}  // namespace kiln::cpu
