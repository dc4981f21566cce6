// The primitive operations a trace records, with their typed attributes.
// The KILN_*_OPS lists below are the one source of truth for the op set
// (`name` is both the op's printed name and its builder's identifier):
// builders, shape rules, the CPU reference and (later) code generation all
// switch over OpKind, and -Werror=switch makes a missing case a build error.
#ifndef KILN_TENSOR_OP_H_
#define KILN_TENSOR_OP_H_

#include <cstdint>
#include <optional>
#include <string>

#include <variant>

#include "absl/strings/string_view.h"
#include "absl/container/inlined_vector.h"
#include "tensor/dim.h"
#include "tensor/quant.h"
#include "tensor/shape.h"
#include "tensor/stable_hash.h"

namespace kiln {

// X(Enum, name) for elementwise ops of one input, same dtype out.
#define KILN_UNARY_OPS(X) \
  X(Neg, neg)           \
  X(Abs, abs)           \
  X(Exp, exp)           \
  X(Log, log)           \
  X(Sqrt, sqrt)         \
  X(Rsqrt, rsqrt)       \
  X(Recip, recip)       \
  X(Square, square)     \
  X(Sin, sin)           \
  X(Cos, cos)           \
  X(Tanh, tanh)         \
  X(Sigmoid, sigmoid)   \
  X(Silu, silu)         \
  X(Gelu, gelu)         \
  X(Relu, relu)

// X(Enum, name) for elementwise ops of two broadcast inputs, same dtype out.
#define KILN_ARITHMETIC_OPS(X) \
  X(Add, add)                \
  X(Sub, sub)                \
  X(Mul, mul)                \
  X(Div, div)                \
  X(Pow, pow)                \
  X(Maximum, maximum)        \
  X(Minimum, minimum)

// X(Enum, name) for elementwise comparisons of two broadcast inputs; bool out.
#define KILN_COMPARISON_OPS(X) \
  X(Eq, eq)                  \
  X(Ne, ne)                  \
  X(Lt, lt)                  \
  X(Le, le)                  \
  X(Gt, gt)                  \
  X(Ge, ge)

// X(Enum, name) for reductions over a set of axes.
#define KILN_REDUCE_OPS(X)    \
  X(ReduceSum, sum)         \
  X(ReduceMax, max)         \
  X(ReduceMean, mean)

// X(Enum, name) for everything else: sources, casts, matmul, data movement.
#define KILN_OTHER_OPS(X)              \
  X(Leaf, leaf)                      \
  X(Constant, constant)              \
  X(Iota, iota)                      \
  X(Random, random)                  \
  X(Cast, cast)                      \
  X(Where, where)                    \
  X(Matmul, matmul)                  \
  X(Reshape, reshape)                \
  X(Permute, permute)                \
  X(Slice, slice)                    \
  X(Expand, expand)                  \
  X(Contiguous, contiguous)          \
  X(Concat, concat)                  \
  X(IndexSelect, index_select)       \
  X(SliceUpdate, slice_update)        \
  X(Dequantize, dequantize)          \
  X(ToDevice, to_device)

#define KILN_OPS(X)         \
  KILN_OTHER_OPS(X)         \
  KILN_UNARY_OPS(X)         \
  KILN_ARITHMETIC_OPS(X)    \
  KILN_COMPARISON_OPS(X)    \
  KILN_REDUCE_OPS(X)

enum class OpKind : uint8_t {
#define KILN_OP_ENUM(e, name) k##e,
  KILN_OPS(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

absl::string_view OpName(OpKind op);
std::optional<OpKind> ParseOpKind(absl::string_view name);
bool IsUnary(OpKind op);
bool IsArithmetic(OpKind op);
bool IsComparison(OpKind op);
inline bool IsBinary(OpKind op) { return IsArithmetic(op) || IsComparison(op); }
bool IsReduce(OpKind op);
// constant, iota, random: values made from nothing but their attributes.
bool IsSource(OpKind op);
// Elementwise: unary, binary, cast and where.
bool IsElementwise(OpKind op);
// Ops whose result is a view of their input (no data movement).
bool IsView(OpKind op);

// ---- Attributes. Each type is equality-comparable, hashable and printable.

struct NoAttrs {
  friend bool operator==(const NoAttrs&, const NoAttrs&) = default;
  void Hash(StableHasher&) const {}
  std::string ToString() const { return ""; }
};

// A 0-d tensor holding `value` converted to the node's dtype.
struct ConstantAttrs {
  double value = 0;
  friend bool operator==(const ConstantAttrs&, const ConstantAttrs&) = default;
  void Hash(StableHasher& h) const { h.Add(value); }
  std::string ToString() const;
};

// A 1-d tensor: element i is start + offset + i * step, computed exactly (in
// double) and rounded once to the dtype. `start` may be symbolic.
struct IotaAttrs {
  Dim start;
  double offset = 0;
  double step = 1;
  friend bool operator==(const IotaAttrs&, const IotaAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

enum class RandomDistribution : uint8_t { kUniform, kNormal };

// Counter-based random numbers: element i depends only on (seed, i), so every
// device produces the same values. Uniform in [a, b) before rounding to the
// dtype, or normal(mean a, std b).
struct RandomAttrs {
  uint64_t seed = 0;
  RandomDistribution distribution = RandomDistribution::kUniform;
  double a = 0;
  double b = 1;
  friend bool operator==(const RandomAttrs&, const RandomAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

using AxisList = absl::InlinedVector<int, kMaxRank>;

// Axes are normalized (non-negative), sorted and unique.
struct ReduceAttrs {
  AxisList axes;
  bool keepdim = false;
  friend bool operator==(const ReduceAttrs&, const ReduceAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

// Output axis i is input axis perm[i].
struct PermuteAttrs {
  AxisList perm;
  friend bool operator==(const PermuteAttrs&, const PermuteAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

// Per input axis: output element j reads input element start + j * step; the
// output's size along the axis is the node's shape.
struct SliceAttrs {
  struct Range {
    Dim start;
    int64_t step = 1;
    friend bool operator==(const Range&, const Range&) = default;
  };
  absl::InlinedVector<Range, kMaxRank> ranges;
  friend bool operator==(const SliceAttrs&, const SliceAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

// For concat and index_select: the axis they work along.
struct AxisAttrs {
  int axis = 0;
  friend bool operator==(const AxisAttrs&, const AxisAttrs&) = default;
  void Hash(StableHasher& h) const { h.Add(axis); }
  std::string ToString() const;
};

// Input 0 with the block starting at `start` along `axis` replaced by input 1.
struct SliceUpdateAttrs {
  int axis = 0;
  Dim start;
  friend bool operator==(const SliceUpdateAttrs&, const SliceUpdateAttrs&) = default;
  void Hash(StableHasher& h) const;
  std::string ToString() const;
};

// dequantize: the block format of the packed u8 rows.
struct QuantAttrs {
  QuantFormat format = QuantFormat::kQ8_0;
  friend bool operator==(const QuantAttrs&, const QuantAttrs&) = default;
  void Hash(StableHasher& h) const { h.Add(static_cast<int64_t>(format)); }
  std::string ToString() const;
};

using OpAttrs = std::variant<NoAttrs, ConstantAttrs, IotaAttrs, RandomAttrs, ReduceAttrs,
                             PermuteAttrs, SliceAttrs, AxisAttrs, SliceUpdateAttrs, QuantAttrs>;

void HashAttrs(const OpAttrs& attrs, StableHasher& hasher);
std::string AttrsToString(const OpAttrs& attrs);

}  // namespace kiln

#endif  // KILN_TENSOR_OP_H_
