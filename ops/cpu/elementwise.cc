// Elementwise reference kernels: unary, binary, comparisons, cast, where.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/strided_loop.h"

namespace kiln::cpu {
namespace {

// An input read in compute type C: the stored data itself when it already
// is C, else a dense converted copy. Strides are broadcast to the output.
template <typename C>
struct Operand {
  const C* data = nullptr;
  Extents strides;
  xt::xarray<C> owned;

  Operand(const TensorData& in, DType dtype, const Extents& out_sizes) {
    if (dtype == kComputeDType<C>) {
      data = in.ptr<C>();
      strides = BroadcastStrides(in.sizes, in.strides, out_sizes);
    } else {
      owned = Load<C>(in, dtype);
      data = owned.data();
      strides = BroadcastStrides(in.sizes, ContiguousStrides(in.sizes), out_sizes);
    }
  }
};

// out[i] = f(inputs[i]...) over the broadcast index space, written in R and
// stored as `dtype` (directly when R is its storage type).
template <typename R, typename C, size_t N, typename F>
absl::StatusOr<TensorData> MapInto(DType dtype, const Extents& sizes,
                                   const std::array<const Operand<C>*, N>& in, F f) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, sizes);
  if (!out.ok()) return out.status();
  const bool direct = dtype == kComputeDType<R>;
  const int64_t n = NumElements(sizes);
  std::unique_ptr<R[]> staging;  // not std::vector: vector<bool> is packed
  R* dst = out->template ptr<R>();
  if (!direct) {
    staging = std::make_unique<R[]>(static_cast<size_t>(n));
    dst = staging.get();
  }
  std::array<Extents, N + 1> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = in[k]->strides;
  strides[N] = ContiguousStrides(sizes);
  ForEachRun<N + 1>(sizes, strides, [&](const auto& offsets, int64_t count, const auto& steps) {
    R* o = dst + offsets[N];
    if constexpr (N == 1) {
      const C* a = in[0]->data + offsets[0];
      if (steps[0] == 1) {
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i]);
      } else {
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i * steps[0]]);
      }
    } else if constexpr (N == 2) {
      const C* a = in[0]->data + offsets[0];
      const C* b = in[1]->data + offsets[1];
      if (steps[0] == 1 && steps[1] == 1) {
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i], b[i]);
      } else if (steps[0] == 1 && steps[1] == 0) {
        const C y = *b;
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i], y);
      } else {
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i * steps[0]], b[i * steps[1]]);
      }
    } else {
      const C* a = in[0]->data + offsets[0];
      const C* b = in[1]->data + offsets[1];
      const C* c = in[2]->data + offsets[2];
      for (int64_t i = 0; i < count; ++i) {
        o[i] = f(a[i * steps[0]], b[i * steps[1]], c[i * steps[2]]);
      }
    }
  });
  if (!direct) {
    ConvertElements(kComputeDType<R>, staging.get(), dtype, out->storage->data(), n);
  }
  return out;
}

// Two's-complement arithmetic without signed overflow.
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

int64_t UnaryInt(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::kNeg: return WrapSub(0, x);
    case OpKind::kAbs: return x < 0 ? WrapSub(0, x) : x;
    case OpKind::kSquare: return WrapMul(x, x);
    case OpKind::kRelu: return x > 0 ? x : 0;
    default: return 0;
  }
}

int64_t BinaryInt(OpKind op, int64_t a, int64_t b) {
  switch (op) {
    case OpKind::kAdd: return WrapAdd(a, b);
    case OpKind::kSub: return WrapSub(a, b);
    case OpKind::kMul: return WrapMul(a, b);
    case OpKind::kDiv:  // the caller rules out b == 0
      return (a == std::numeric_limits<int64_t>::min() && b == -1) ? a : a / b;
    case OpKind::kMaximum: return a > b ? a : b;
    case OpKind::kMinimum: return a < b ? a : b;
    default: return 0;
  }
}

template <typename C>
bool Compare(OpKind op, C a, C b) {
  switch (op) {
    case OpKind::kEq: return a == b;
    case OpKind::kNe: return a != b;
    case OpKind::kLt: return a < b;
    case OpKind::kLe: return a <= b;
    case OpKind::kGt: return a > b;
    case OpKind::kGe: return a >= b;
    default: return false;
  }
}

// Calls f(std::integral_constant<OpKind, op>) so that the per-element switch
// in the functions above folds away inside the loops.
template <typename F>
auto WithConstantOp(OpKind op, F&& f) {
  switch (op) {
#define KILN_CONSTANT_OP(e, name) \
  case OpKind::k##e:              \
    return f(std::integral_constant<OpKind, OpKind::k##e>{});
    KILN_UNARY_OPS(KILN_CONSTANT_OP)
    KILN_ARITHMETIC_OPS(KILN_CONSTANT_OP)
    KILN_COMPARISON_OPS(KILN_CONSTANT_OP)
#undef KILN_CONSTANT_OP
    default:
      return f(std::integral_constant<OpKind, OpKind::kLeaf>{});
  }
}

template <typename C>
absl::StatusOr<TensorData> RunComparison(const Node& node, const Types& types, Inputs inputs,
                                         const Extents& sizes) {
  const Operand<C> a(*inputs[0], types.in[0], sizes);
  const Operand<C> b(*inputs[1], types.in[1], sizes);
  return WithConstantOp(node.op, [&](auto op) {
    return MapInto<bool, C, 2>(DType::kBool, sizes, {&a, &b},
                               [](C x, C y) { return Compare(decltype(op)::value, x, y); });
  });
}

template <typename C>
absl::StatusOr<TensorData> RunWhere(const Types& types, Inputs inputs, const Extents& sizes) {
  // The condition is read as C too (0 or 1), so all three operands share a type.
  const Operand<C> cond(*inputs[0], types.in[0], sizes);
  const Operand<C> a(*inputs[1], types.in[1], sizes);
  const Operand<C> b(*inputs[2], types.in[2], sizes);
  return MapInto<C, C, 3>(types.out, sizes, {&cond, &a, &b},
                          [](C c, C x, C y) { return c != C(0) ? x : y; });
}

// Rounds to the node's dtype (a cast always does), then stores as types.out.
absl::StatusOr<TensorData> RunCast(const Node& node, const Types& types, const TensorData& input) {
  const DType from = types.in[0];
  const int64_t n = input.num_elements();
  std::vector<char> dense(static_cast<size_t>(n) * DTypeSize(from));
  CopyStridedToDense(input, DTypeSize(from), dense.data());
  absl::StatusOr<TensorData> out = AllocateHostTensor(types.out, input.sizes);
  if (!out.ok()) return out.status();
  if (types.out == node.dtype) {
    ConvertElements(from, dense.data(), node.dtype, out->storage->data(), n);
  } else {
    std::vector<char> rounded(static_cast<size_t>(n) * DTypeSize(node.dtype));
    ConvertElements(from, dense.data(), node.dtype, rounded.data(), n);
    ConvertElements(node.dtype, rounded.data(), types.out, out->storage->data(), n);
  }
  return out;
}

}  // namespace

float UnaryFloat(OpKind op, float x) {
  switch (op) {
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return std::fabs(x);
    case OpKind::kExp: return std::exp(x);
    case OpKind::kLog: return std::log(x);
    case OpKind::kSqrt: return std::sqrt(x);
    case OpKind::kRsqrt: return 1.0f / std::sqrt(x);
    case OpKind::kRecip: return 1.0f / x;
    case OpKind::kSquare: return x * x;
    case OpKind::kSin: return std::sin(x);
    case OpKind::kCos: return std::cos(x);
    case OpKind::kTanh: return std::tanh(x);
    case OpKind::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case OpKind::kSilu: return x / (1.0f + std::exp(-x));
    case OpKind::kGelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case OpKind::kRelu: return std::isnan(x) ? x : (x > 0 ? x : 0.0f);
    default: return std::numeric_limits<float>::quiet_NaN();
  }
}

float BinaryFloat(OpKind op, float a, float b) {
  switch (op) {
    case OpKind::kAdd: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    case OpKind::kDiv: return a / b;
    case OpKind::kPow: return std::pow(a, b);
    case OpKind::kMaximum: return std::isnan(a) || a > b ? a : b;
    case OpKind::kMinimum: return std::isnan(a) || a < b ? a : b;
    default: return std::numeric_limits<float>::quiet_NaN();
  }
}


absl::StatusOr<TensorData> RunElementwise(const Node& node, const Types& types, Inputs inputs,
                                          const Extents& sizes) {
  const OpKind op = node.op;
  if (op == OpKind::kCast) return RunCast(node, types, *inputs[0]);
  if (op == OpKind::kWhere) {
    return ComputesInFloat(node.dtype) ? RunWhere<float>(types, inputs, sizes)
                                       : RunWhere<int64_t>(types, inputs, sizes);
  }
  if (IsComparison(op)) {
    return ComputesInFloat(node.inputs[0]->dtype)
               ? RunComparison<float>(node, types, inputs, sizes)
               : RunComparison<int64_t>(node, types, inputs, sizes);
  }
  if (IsUnary(op)) {
    if (ComputesInFloat(node.dtype)) {
      const Operand<float> a(*inputs[0], types.in[0], sizes);
      return WithConstantOp(op, [&](auto k) {
        return MapInto<float, float, 1>(types.out, sizes, {&a}, [](float x) {
          return UnaryFloat(decltype(k)::value, x);
        });
      });
    }
    const Operand<int64_t> a(*inputs[0], types.in[0], sizes);
    return WithConstantOp(op, [&](auto k) {
      return MapInto<int64_t, int64_t, 1>(types.out, sizes, {&a}, [](int64_t x) {
        return UnaryInt(decltype(k)::value, x);
      });
    });
  }
  if (IsArithmetic(op)) {
    if (ComputesInFloat(node.dtype)) {
      const Operand<float> a(*inputs[0], types.in[0], sizes);
      const Operand<float> b(*inputs[1], types.in[1], sizes);
      return WithConstantOp(op, [&](auto k) {
        return MapInto<float, float, 2>(types.out, sizes, {&a, &b}, [](float x, float y) {
          return BinaryFloat(decltype(k)::value, x, y);
        });
      });
    }
    const Operand<int64_t> a(*inputs[0], types.in[0], sizes);
    const Operand<int64_t> b(*inputs[1], types.in[1], sizes);
    if (op == OpKind::kDiv) {
      bool zero = false;
      MapInto<bool, int64_t, 1>(DType::kBool, sizes, {&b}, [&](int64_t y) {
        zero |= y == 0;
        return false;
      }).IgnoreError();
      if (zero) {
        return absl::InvalidArgumentError(absl::StrCat(
            "div: integer division by zero (", DTypeName(node.dtype), node.shape.ToString(),
            ")"));
      }
    }
    return WithConstantOp(op, [&](auto k) {
      return MapInto<int64_t, int64_t, 2>(types.out, sizes, {&a, &b},
                                          [](int64_t x, int64_t y) {
                                            return BinaryInt(decltype(k)::value, x, y);
                                          });
    });
  }
  return absl::InternalError(absl::StrCat("RunElementwise: unexpected op ", OpName(op)));
}

}  // namespace kiln::cpu
