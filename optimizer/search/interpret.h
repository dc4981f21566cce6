// Interpreters over dense arrays in any value algebra (algebra.h): a region
// program, and a kernel graph of kTiled kernels simulated block by block,
// loop step by loop step, exactly as the code generator's kernels run
// (tails predicated, reductions over in-range elements only). The verifier
// runs both over finite fields, the floating-point check over f32.
#ifndef KILN_OPTIMIZER_SEARCH_INTERPRET_H_
#define KILN_OPTIMIZER_SEARCH_INTERPRET_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "optimizer/search/region.h"
#include "optimizer/tile_analysis.h"
#include "optimizer/ugraph.h"

namespace kiln::search {

template <typename V>
struct DenseArray {
  std::vector<int64_t> shape;
  std::vector<V> data;  // row-major

  static DenseArray Filled(std::vector<int64_t> shape, V value) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return {std::move(shape), std::vector<V>(static_cast<size_t>(n), value)};
  }
};

namespace interpret_internal {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);
// Calls f(coords) for every coordinate of `shape` in row-major order.
template <typename F>
void ForEach(const std::vector<int64_t>& shape, F&& f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(c);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}
// Offset of `coords` of a broadcast result in an operand of `shape`
// (aligned right; size-1 axes broadcast).
int64_t BroadcastOffset(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& strides);
std::vector<int64_t> BroadcastShape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

template <typename Alg, typename V = typename Alg::Value>
DenseArray<V> Elementwise(const DenseArray<typename Alg::Value>& a, const DenseArray<typename Alg::Value>* b,
                          const Alg& alg, OpKind op) {
  const std::vector<int64_t> shape = b ? BroadcastShape(a.shape, b->shape) : a.shape;
  DenseArray<V> out = DenseArray<V>::Filled(shape, alg.Zero());
  const auto sa = RowMajorStrides(a.shape);
  const auto sb = b ? RowMajorStrides(b->shape) : std::vector<int64_t>();
  int64_t i = 0;
  ForEach(shape, [&](const std::vector<int64_t>& c) {
    const V x = a.data[BroadcastOffset(c, a.shape, sa)];
    out.data[i++] = b ? alg.Binary(op, x, b->data[BroadcastOffset(c, b->shape, sb)]) : alg.Unary(op, x);
  });
  return out;
}

// Stable exps (algebra.h): the max of each row of `in` (`rows`: its shape
// with the max's axes at 1) over the elements where counts(coords) holds,
// starting from NoShift; and exp(x - shift) with each element's row shift.
template <typename Alg, typename F, typename V = typename Alg::Value>
DenseArray<V> RowMaxima(const DenseArray<V>& in, const std::vector<int64_t>& rows, const Alg& alg, F&& counts) {
  DenseArray<V> out = DenseArray<V>::Filled(rows, alg.NoShift());
  const auto sr = RowMajorStrides(rows);
  int64_t k = 0;
  ForEach(in.shape, [&](const std::vector<int64_t>& c) {
    if (counts(c)) {
      V& m = out.data[BroadcastOffset(c, rows, sr)];
      m = alg.Maximum(m, in.data[k]);
    }
    ++k;
  });
  return out;
}

// (Masked elements, where kept(coords) fails, give 0.)
template <typename Alg, typename F, typename V = typename Alg::Value>
DenseArray<V> ShiftedExps(const DenseArray<V>& in, const DenseArray<V>& shifts, const Alg& alg, F&& kept) {
  DenseArray<V> out = DenseArray<V>::Filled(in.shape, alg.Zero());
  const auto sr = RowMajorStrides(shifts.shape);
  int64_t k = 0;
  ForEach(in.shape, [&](const std::vector<int64_t>& c) {
    if (kept(c)) out.data[k] = alg.ShiftedExp(in.data[k], shifts.data[BroadcastOffset(c, shifts.shape, sr)]);
    ++k;
  });
  return out;
}

}  // namespace interpret_internal

// The region's output for inputs of the sizes `class_sizes` implies.
template <typename Alg, typename V = typename Alg::Value>
absl::StatusOr<DenseArray<V>> EvaluateRegion(const Region& region, const std::vector<int64_t>& class_sizes,
                                             const std::vector<DenseArray<V>>& inputs, const Alg& alg) {
  using namespace interpret_internal;  // NOLINT
  std::vector<DenseArray<V>> v(region.ops.size());
  for (size_t i = 0; i < region.ops.size(); ++i) {
    const RegionOp& op = region.ops[i];
    const std::vector<int64_t> shape = region.Shape(static_cast<int>(i), class_sizes);
    switch (op.kind) {
      case RegionOp::Kind::kInput:
        if (inputs[op.input].shape != shape) {
          return absl::InvalidArgumentError(absl::StrCat("region input #", op.input, " has the wrong shape"));
        }
        v[i] = inputs[op.input];
        break;
      case RegionOp::Kind::kConstant:
        v[i] = DenseArray<V>::Filled({}, alg.Constant(op.value));
        break;
      case RegionOp::Kind::kUnary:
        v[i] = Elementwise(v[op.args[0]], nullptr, alg, op.op);
        break;
      case RegionOp::Kind::kBinary:
        v[i] = Elementwise(v[op.args[0]], &v[op.args[1]], alg, op.op);
        break;
      case RegionOp::Kind::kStableExp: {
        const DenseArray<V>& in = v[op.args[0]];
        std::vector<int64_t> rows = in.shape;
        for (int a : op.axes) rows[a] = 1;
        const auto kept = [&](const std::vector<int64_t>& c) {
          const ugraph::CausalMask& m = op.mask;
          return !m.on() || m.Keeps(c[m.row], c[m.col], in.shape[m.row], in.shape[m.col]);
        };
        DenseArray<V> shifts = RowMaxima(in, rows, alg, kept);
        for (V& m : shifts.data) m = alg.RegionShift(m);
        v[i] = ShiftedExps(in, shifts, alg, kept);
        break;
      }
      case RegionOp::Kind::kPermute: {
        const DenseArray<V>& in = v[op.args[0]];
        const auto strides = RowMajorStrides(in.shape);
        DenseArray<V> out = DenseArray<V>::Filled(shape, alg.Zero());
        int64_t k = 0;
        ForEach(shape, [&](const std::vector<int64_t>& c) {
          int64_t off = 0;
          for (size_t d = 0; d < c.size(); ++d) off += c[d] * strides[op.axes[d]];
          out.data[k++] = in.data[off];
        });
        v[i] = std::move(out);
        break;
      }
      case RegionOp::Kind::kReduce: {
        const DenseArray<V>& in = v[op.args[0]];
        std::vector<int64_t> kept = in.shape;  // reduced axes as 1
        int64_t n = 1;
        for (int a : op.axes) {
          n *= kept[a];
          kept[a] = 1;
        }
        DenseArray<V> out = DenseArray<V>::Filled(kept, alg.Zero());
        const auto so = RowMajorStrides(kept);
        int64_t k = 0;
        ForEach(in.shape, [&](const std::vector<int64_t>& c) {
          out.data[BroadcastOffset(c, kept, so)] = alg.Add(out.data[BroadcastOffset(c, kept, so)], in.data[k++]);
        });
        if (op.op == OpKind::kReduceMean) {
          const V scale = alg.Constant(1.0 / static_cast<double>(n));
          for (V& x : out.data) x = alg.Mul(x, scale);
        }
        out.shape = shape;  // drops the reduced axes unless keepdim; the data is the same
        v[i] = std::move(out);
        break;
      }
      case RegionOp::Kind::kMatmul: {
        const DenseArray<V>& a = v[op.args[0]];
        const DenseArray<V>& b = v[op.args[1]];
        const int64_t m = a.shape[a.shape.size() - 2], kk = a.shape.back(), n = b.shape.back();
        std::vector<int64_t> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
        batch_a.push_back(m * kk);
        batch_b.push_back(kk * n);
        const auto sa = RowMajorStrides(batch_a), sb = RowMajorStrides(batch_b);
        DenseArray<V> out = DenseArray<V>::Filled(shape, alg.Zero());
        std::vector<int64_t> batch(shape.begin(), shape.end() - 2);
        int64_t k_out = 0;
        ForEach(batch, [&](std::vector<int64_t> c) {
          c.push_back(0);
          const int64_t oa = BroadcastOffset(c, batch_a, sa), ob = BroadcastOffset(c, batch_b, sb);
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t col = 0; col < n; ++col) {
              out.data[k_out++] = alg.Dot(a.data.data() + oa + r * kk, 1, b.data.data() + ob + col, n, kk);
            }
          }
        });
        v[i] = std::move(out);
        break;
      }
    }
  }
  return std::move(v.back());
}

// Runs every (kTiled) kernel of `graph`. `tensors` holds each DTensor by id:
// inputs filled in, the rest are sized and filled here. Shapes must be
// concrete.
template <typename Alg, typename V = typename Alg::Value>
absl::Status RunTiledGraph(const ugraph::KernelGraph& graph, std::vector<DenseArray<V>>& tensors, const Alg& alg);

}  // namespace kiln::search

#include "optimizer/search/interpret_tiled.inc"  // IWYU pragma: keep

#endif  // KILN_OPTIMIZER_SEARCH_INTERPRET_H_
