// Elementwise reference kernels: unary, binary, comparisons, cast, where.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xtensor/xbroadcast.hpp>

#include "absl/strings/str_cat.h"
#include "ops/cpu/arrays.h"
#include "ops/cpu/kernels.h"

namespace kiln::cpu {
namespace {

template <typename C>
xt::xarray<C> LoadBroadcast(const TensorData& data, DType dtype, const ArrayShape& shape) {
  xt::xarray<C> a = Load<C>(data, dtype);
  if (a.shape() == shape) return a;
  return xt::broadcast(a, shape);
}

template <typename R, typename C, typename F>
xt::xarray<R> Map(const xt::xarray<C>& a, F f) {
  xt::xarray<R> out(a.shape());
  const C* in = a.data();
  R* o = out.data();
  for (size_t i = 0; i < a.size(); ++i) o[i] = f(in[i]);
  return out;
}

template <typename R, typename C, typename F>
xt::xarray<R> Map2(const xt::xarray<C>& a, const xt::xarray<C>& b, F f) {
  xt::xarray<R> out(a.shape());
  const C* x = a.data();
  const C* y = b.data();
  R* o = out.data();
  for (size_t i = 0; i < a.size(); ++i) o[i] = f(x[i], y[i]);
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

int64_t UnaryInt(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::kNeg: return WrapSub(0, x);
    case OpKind::kAbs: return x < 0 ? WrapSub(0, x) : x;
    case OpKind::kSquare: return WrapMul(x, x);
    case OpKind::kRelu: return x > 0 ? x : 0;
    default: return 0;
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
absl::StatusOr<TensorData> RunComparison(const Node& node, Inputs inputs,
                                         const ArrayShape& shape) {
  const DType in = node.inputs[0]->dtype;
  const xt::xarray<C> a = LoadBroadcast<C>(*inputs[0], in, shape);
  const xt::xarray<C> b = LoadBroadcast<C>(*inputs[1], in, shape);
  return WithConstantOp(node.op, [&](auto op) {
    return Store(Map2<bool>(a, b, [](C x, C y) { return Compare(decltype(op)::value, x, y); }),
                 DType::kBool);
  });
}

template <typename C>
absl::StatusOr<TensorData> RunWhere(const Node& node, Inputs inputs, const ArrayShape& shape) {
  const xt::xarray<bool> cond = LoadBroadcast<bool>(*inputs[0], DType::kBool, shape);
  const xt::xarray<C> a = LoadBroadcast<C>(*inputs[1], node.dtype, shape);
  const xt::xarray<C> b = LoadBroadcast<C>(*inputs[2], node.dtype, shape);
  xt::xarray<C> out(shape);
  for (size_t i = 0; i < out.size(); ++i) out.data()[i] = cond.data()[i] ? a.data()[i] : b.data()[i];
  return Store(out, node.dtype);
}

absl::StatusOr<TensorData> RunCast(const Node& node, const TensorData& input) {
  const DType from = node.inputs[0]->dtype;
  const int64_t n = input.num_elements();
  std::vector<char> dense(static_cast<size_t>(n) * DTypeSize(from));
  CopyStridedToDense(input, DTypeSize(from), dense.data());
  absl::StatusOr<TensorData> out = AllocateHostTensor(node.dtype, input.sizes);
  if (!out.ok()) return out.status();
  ConvertElements(from, dense.data(), node.dtype, out->storage->data(), n);
  return out;
}

}  // namespace

absl::StatusOr<TensorData> RunElementwise(const Node& node, Inputs inputs,
                                          const Extents& sizes) {
  const OpKind op = node.op;
  const ArrayShape shape = ToArrayShape(sizes);
  if (op == OpKind::kCast) return RunCast(node, *inputs[0]);
  if (op == OpKind::kWhere) {
    return ComputesInFloat(node.dtype) ? RunWhere<float>(node, inputs, shape)
                                       : RunWhere<int64_t>(node, inputs, shape);
  }
  if (IsComparison(op)) {
    return ComputesInFloat(node.inputs[0]->dtype) ? RunComparison<float>(node, inputs, shape)
                                                  : RunComparison<int64_t>(node, inputs, shape);
  }
  if (IsUnary(op)) {
    if (ComputesInFloat(node.dtype)) {
      const xt::xarray<float> a = Load<float>(*inputs[0], node.dtype);
      return WithConstantOp(op, [&](auto k) {
        return Store(Map<float>(a, [](float x) { return UnaryFloat(decltype(k)::value, x); }),
                     node.dtype);
      });
    }
    const xt::xarray<int64_t> a = Load<int64_t>(*inputs[0], node.dtype);
    return WithConstantOp(op, [&](auto k) {
      return Store(Map<int64_t>(a, [](int64_t x) { return UnaryInt(decltype(k)::value, x); }),
                   node.dtype);
    });
  }
  if (IsArithmetic(op)) {
    if (ComputesInFloat(node.dtype)) {
      const xt::xarray<float> a = LoadBroadcast<float>(*inputs[0], node.dtype, shape);
      const xt::xarray<float> b = LoadBroadcast<float>(*inputs[1], node.dtype, shape);
      return WithConstantOp(op, [&](auto k) {
        return Store(Map2<float>(a, b, [](float x, float y) {
                       return BinaryFloat(decltype(k)::value, x, y);
                     }),
                     node.dtype);
      });
    }
    const xt::xarray<int64_t> a = LoadBroadcast<int64_t>(*inputs[0], node.dtype, shape);
    const xt::xarray<int64_t> b = LoadBroadcast<int64_t>(*inputs[1], node.dtype, shape);
    if (op == OpKind::kDiv) {
      for (size_t i = 0; i < b.size(); ++i) {
        if (b.data()[i] == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "div: integer division by zero (", DTypeName(node.dtype), node.shape.ToString(),
              ")"));
        }
      }
    }
    return WithConstantOp(op, [&](auto k) {
      return Store(Map2<int64_t>(a, b, [](int64_t x, int64_t y) {
                     return BinaryInt(decltype(k)::value, x, y);
                   }),
                   node.dtype);
    });
  }
  return absl::InternalError(absl::StrCat("RunElementwise: unexpected op ", OpName(op)));
}

}  // namespace kiln::cpu
