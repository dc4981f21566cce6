// Batched matmul reference kernel: f32 accumulation for floating dtypes,
// wrapping int64 accumulation for integers.
#include <cstdint>
#include <type_traits>

#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"

namespace kiln::cpu {
namespace {

// A dense row-major operand in compute type C: the stored data itself when
// it already is that, else a converted copy. Weights usually need no copy.
template <typename C>
struct DenseOperand {
  const C* data = nullptr;
  xt::xarray<C> owned;

  DenseOperand(const TensorData& view, DType dtype) {
    if (dtype == kComputeDType<C> && view.is_contiguous()) {
      data = view.ptr<C>();
    } else {
      owned = Load<C>(view, dtype);
      data = owned.data();
    }
  }
};

float Dot(const float* a, const float* b, int64_t k) {
  // Eight independent partial sums let the compiler vectorize.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < k; ++i) total += a[i] * b[i];
  return total;
}

int64_t Dot(const int64_t* a, const int64_t* b, int64_t k) {
  uint64_t total = 0;
  for (int64_t i = 0; i < k; ++i) {
    total += static_cast<uint64_t>(a[i]) * static_cast<uint64_t>(b[i]);
  }
  return static_cast<int64_t>(total);
}

// Linear index, within `batch` (right-aligned against the output's batch
// dims, size-1 dims broadcast), of the output batch element `index`.
int64_t BroadcastBatchIndex(absl::Span<const int64_t> out_batch, absl::Span<const int64_t> index,
                            absl::Span<const int64_t> batch) {
  int64_t linear = 0;
  const size_t lead = out_batch.size() - batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    linear = linear * batch[i] + (batch[i] == 1 ? 0 : index[lead + i]);
  }
  return linear;
}

template <typename C>
absl::StatusOr<TensorData> MatmulTyped(const Node& node, const TensorData& a,
                                       const TensorData& b, const Extents& sizes) {
  const int rank = static_cast<int>(sizes.size());
  const int64_t m = sizes[rank - 2];
  const int64_t n = sizes[rank - 1];
  const int64_t k = a.sizes.back();
  // B transposed to [..., N, K] so each output element is a dense dot product.
  TensorData bt = b;
  std::swap(bt.sizes[bt.sizes.size() - 1], bt.sizes[bt.sizes.size() - 2]);
  std::swap(bt.strides[bt.strides.size() - 1], bt.strides[bt.strides.size() - 2]);
  const DenseOperand<C> lhs(a, node.dtype);
  const DenseOperand<C> rhs(bt, node.dtype);

  const absl::Span<const int64_t> out_batch(sizes.data(), rank - 2);
  const absl::Span<const int64_t> a_batch(a.sizes.data(), a.sizes.size() - 2);
  const absl::Span<const int64_t> b_batch(b.sizes.data(), b.sizes.size() - 2);
  xt::xarray<C> out(ToArrayShape(sizes));
  Extents index(out_batch.size(), 0);
  const int64_t batches = NumElements(out_batch);
  for (int64_t batch = 0; batch < batches; ++batch) {
    const C* a_mat = lhs.data + BroadcastBatchIndex(out_batch, index, a_batch) * m * k;
    const C* b_mat = rhs.data + BroadcastBatchIndex(out_batch, index, b_batch) * n * k;
    C* o = out.data() + batch * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) o[i * n + j] = Dot(a_mat + i * k, b_mat + j * k, k);
    }
    for (int axis = static_cast<int>(index.size()) - 1; axis >= 0; --axis) {
      if (++index[axis] < out_batch[axis]) break;
      index[axis] = 0;
    }
  }
  return Store(out, node.dtype);
}

}  // namespace

absl::StatusOr<TensorData> RunMatmul(const Node& node, const TensorData& a, const TensorData& b,
                                     const Extents& sizes) {
  if (ComputesInFloat(node.dtype)) return MatmulTyped<float>(node, a, b, sizes);
  return MatmulTyped<int64_t>(node, a, b, sizes);
}

}  // namespace kiln::cpu
