// Batched matmul reference kernel: f32 accumulation for floating dtypes,
// wrapping int64 accumulation for integers.
#include <cstdint>
#include <memory>
#include <type_traits>

#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/strided_loop.h"

namespace kiln::cpu {
namespace {

// The matrices of one operand as rows of `cols` dense elements of compute
// type C: the stored data itself when its rows already are that (any batch
// and row strides), else a dense converted copy. Weights, and transposed
// views of them, usually need no copy.
template <typename C>
struct MatrixOperand {
  const C* data = nullptr;
  Extents batch_strides;  // broadcast to the output's batch dims
  int64_t row_stride = 0;
  xt::xarray<C> owned;

  MatrixOperand(const TensorData& view, DType dtype, absl::Span<const int64_t> out_batch) {
    const size_t rank = view.sizes.size();
    const absl::Span<const int64_t> batch(view.sizes.data(), rank - 2);
    const bool rows_dense = view.strides[rank - 1] == 1 || view.sizes[rank - 1] == 1;
    if (dtype == kComputeDType<C> && rows_dense) {
      data = view.ptr<C>();
      row_stride = view.strides[rank - 2];
      batch_strides = BroadcastStrides(batch, absl::Span<const int64_t>(view.strides.data(), rank - 2),
                                       out_batch);
    } else {
      owned = Load<C>(view, dtype);
      data = owned.data();
      const Extents dense = ContiguousStrides(view.sizes);
      row_stride = dense[rank - 2];
      batch_strides =
          BroadcastStrides(batch, absl::Span<const int64_t>(dense.data(), rank - 2), out_batch);
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

template <typename C>
absl::StatusOr<TensorData> MatmulTyped(const Types& types, const TensorData& a,
                                       const TensorData& b, const Extents& sizes) {
  const int rank = static_cast<int>(sizes.size());
  const int64_t m = sizes[rank - 2];
  const int64_t n = sizes[rank - 1];
  const int64_t k = a.sizes.back();
  const absl::Span<const int64_t> out_batch(sizes.data(), rank - 2);
  // B transposed to [..., N, K] so each output element is a dense dot product.
  TensorData bt = b;
  std::swap(bt.sizes[bt.sizes.size() - 1], bt.sizes[bt.sizes.size() - 2]);
  std::swap(bt.strides[bt.strides.size() - 1], bt.strides[bt.strides.size() - 2]);
  const MatrixOperand<C> lhs(a, types.in[0], out_batch);
  const MatrixOperand<C> rhs(bt, types.in[1], out_batch);

  absl::StatusOr<TensorData> out = AllocateHostTensor(types.out, sizes);
  if (!out.ok()) return out.status();
  const bool direct = types.out == kComputeDType<C>;
  const int64_t total = NumElements(sizes);
  std::unique_ptr<C[]> staging;
  C* dst = direct ? out->template ptr<C>() : (staging = std::make_unique<C[]>(total)).get();
  if (total == 0) return out;

  std::array<Extents, 2> batch_strides = {lhs.batch_strides, rhs.batch_strides};
  int64_t batch = 0;
  ForEachRun<2>(out_batch, batch_strides,
                [&](const std::array<int64_t, 2>& offsets, int64_t count,
                    const std::array<int64_t, 2>& steps) {
                  for (int64_t r = 0; r < count; ++r, ++batch) {
                    const C* a_mat = lhs.data + offsets[0] + r * steps[0];
                    const C* b_mat = rhs.data + offsets[1] + r * steps[1];
                    C* o = dst + batch * m * n;
                    for (int64_t i = 0; i < m; ++i) {
                      for (int64_t j = 0; j < n; ++j) {
                        o[i * n + j] =
                            Dot(a_mat + i * lhs.row_stride, b_mat + j * rhs.row_stride, k);
                      }
                    }
                  }
                });
  if (!direct) ConvertElements(kComputeDType<C>, dst, types.out, out->storage->data(), total);
  return out;
}

}  // namespace

absl::StatusOr<TensorData> RunMatmul(const Node& node, const Types& types, const TensorData& a,
                                     const TensorData& b, const Extents& sizes) {
  if (!ComputesInFloat(node.dtype)) return MatmulTyped<int64_t>(types, a, b, sizes);
  // Operands kept wider than the matmul's dtype are rounded to it first: a
  // 16-bit product takes 16-bit operands, as the GPU's tensor cores do.
  TensorData operands[2] = {a, b};
  Types rounded = types;
  for (int k = 0; k < 2; ++k) {
    if (types.in[k] == node.dtype) continue;
    absl::StatusOr<TensorData> narrow = AllocateHostTensor(node.dtype, operands[k].sizes);
    if (!narrow.ok()) return narrow.status();
    const int64_t n = operands[k].num_elements();
    std::vector<char> dense(static_cast<size_t>(n) * DTypeSize(types.in[k]));
    CopyStridedToDense(operands[k], DTypeSize(types.in[k]), dense.data());
    ConvertElements(types.in[k], dense.data(), node.dtype, narrow->storage->data(), n);
    operands[k] = *std::move(narrow);
    rounded.in[k] = node.dtype;
  }
  return MatmulTyped<float>(rounded, operands[0], operands[1], sizes);
}

}  // namespace kiln::cpu
