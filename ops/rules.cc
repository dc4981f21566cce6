#include "ops/rules.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/record.h"

namespace kiln::rules {

using ops_internal::Describe;

absl::Status RequireSameDType(absl::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(op, ": dtypes differ: ", Describe(a), " and ",
                                                 Describe(b), "; cast() one of them"));
}

absl::Status RequireFloating(absl::string_view op, const Tensor& t) {
  if (IsFloating(t.dtype())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": needs a floating-point tensor (f32, f16 or bf16), got ", Describe(t)));
}

absl::Status RequireNumeric(absl::string_view op, const Tensor& t) {
  if (t.dtype() != DType::kBool) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": does not apply to bool tensors, got ", Describe(t)));
}

absl::Status RequireIndex(absl::string_view op, const Tensor& t) {
  if (t.dtype() == DType::kI32 || t.dtype() == DType::kI64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": indices must be i32 or i64, got ", Describe(t)));
}

absl::StatusOr<Shape> BroadcastShapes(absl::string_view op, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const Dim da = ia >= 0 ? a[ia] : Dim(1);
    const Dim db = ib >= 0 ? b[ib] : Dim(1);
    if (da == db || db == Dim(1)) {
      out.push_back(da);
    } else if (da == Dim(1)) {
      out.push_back(db);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": shapes ", a.ToString(), " and ", b.ToString(), " do not broadcast (",
          da.ToString(), " vs ", db.ToString(), " at axis ", i - rank, ")"));
    }
  }
  return out;
}

absl::StatusOr<ReduceAttrs> ReduceAxes(absl::string_view op, const Shape& in,
                                       absl::Span<const int> axes, bool keepdim) {
  ReduceAttrs attrs;
  attrs.keepdim = keepdim;
  if (axes.empty()) {
    for (int i = 0; i < in.rank(); ++i) attrs.axes.push_back(i);
    return attrs;
  }
  for (int axis : axes) {
    absl::StatusOr<int> a = NormalizeAxis(axis, in.rank(), op);
    if (!a.ok()) return a.status();
    if (std::find(attrs.axes.begin(), attrs.axes.end(), *a) != attrs.axes.end()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": axis ", axis, " appears twice in [",
                                                     absl::StrJoin(axes, ","), "]"));
    }
    attrs.axes.push_back(*a);
  }
  std::sort(attrs.axes.begin(), attrs.axes.end());
  return attrs;
}

Shape ReducedShape(const Shape& in, const ReduceAttrs& attrs) {
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::find(attrs.axes.begin(), attrs.axes.end(), i) != attrs.axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (attrs.keepdim) {
      out.push_back(Dim(1));
    }
  }
  return out;
}

absl::StatusOr<Shape> MatmulShape(const Shape& a, const Shape& b) {
  if (a.rank() < 2 || b.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: inputs need rank >= 2, got ",
                                                   a.ToString(), " and ", b.ToString()));
  }
  const Dim& k_a = a[a.rank() - 1];
  const Dim& k_b = b[b.rank() - 2];
  if (!(k_a == k_b)) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: inner dimensions differ: ",
                                                   a.ToString(), " x ", b.ToString(), " (",
                                                   k_a.ToString(), " vs ", k_b.ToString(), ")"));
  }
  Shape batch_a(a.dims().subspan(0, a.rank() - 2));
  Shape batch_b(b.dims().subspan(0, b.rank() - 2));
  absl::StatusOr<Shape> batch = BroadcastShapes("matmul (batch dims)", batch_a, batch_b);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(batch.status().message(), " in ",
                                                   a.ToString(), " x ", b.ToString()));
  }
  Shape out = *batch;
  out.push_back(a[a.rank() - 2]);
  out.push_back(b[b.rank() - 1]);
  return out;
}

namespace {

// An element count as constant * product of primitive symbolic factors, each
// factor a Dim with coefficients of gcd 1 (so [2*n] and [2, n] agree).
struct Count {
  __int128 constant = 1;
  std::vector<Dim> factors;
};

void Multiply(Count& count, const Dim& d) {
  if (d.is_concrete()) {
    count.constant *= d.value();
    return;
  }
  int64_t g = d.offset() < 0 ? -d.offset() : d.offset();
  for (const Dim::Term& t : d.terms()) g = std::gcd(g, t.coeff);
  if (g <= 0) g = 1;
  Dim primitive(d.offset() / g);
  for (const Dim::Term& t : d.terms()) {
    primitive = primitive + Dim(Symbol(t.symbol->name, t.symbol->max_value)) * (t.coeff / g);
  }
  count.constant *= g;
  count.factors.push_back(primitive);
}

bool FactorLess(const Dim& a, const Dim& b) { return a.ToString() < b.ToString(); }

Count CountOf(const Shape& shape, int skip_axis) {
  Count count;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i != skip_axis) Multiply(count, shape[i]);
  }
  std::sort(count.factors.begin(), count.factors.end(), FactorLess);
  return count;
}

}  // namespace

absl::StatusOr<Shape> ReshapeShape(const Shape& in, const Shape& requested) {
  int inferred = -1;
  for (int i = 0; i < requested.rank(); ++i) {
    if (requested[i] == Dim(-1)) {
      if (inferred >= 0) {
        return absl::InvalidArgumentError(absl::StrCat("reshape: ", requested.ToString(),
                                                       " has more than one -1"));
      }
      inferred = i;
    }
  }
  const auto mismatch = [&]() {
    return absl::InvalidArgumentError(absl::StrCat("reshape: cannot view ", in.ToString(),
                                                   " as ", requested.ToString(),
                                                   ": element counts differ"));
  };
  const Count have = CountOf(in, -1);
  const Count want = CountOf(requested, inferred);
  Shape out = requested;
  if (inferred < 0) {
    if (have.constant != want.constant || have.factors != want.factors) return mismatch();
    return out;
  }
  // The -1 takes whatever factors `requested` lacks.
  std::vector<Dim> rest;
  std::vector<Dim> remaining = have.factors;
  for (const Dim& f : want.factors) {
    auto it = std::find(remaining.begin(), remaining.end(), f);
    if (it == remaining.end()) return mismatch();
    remaining.erase(it);
  }
  if (want.constant == 0 || have.constant % want.constant != 0 || remaining.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("reshape: cannot infer the -1 in ",
                                                   requested.ToString(), " from ",
                                                   in.ToString()));
  }
  const int64_t quotient = static_cast<int64_t>(have.constant / want.constant);
  out[inferred] = remaining.empty() ? Dim(quotient) : remaining.front() * quotient;
  return out;
}

absl::StatusOr<PermuteAttrs> Permutation(absl::string_view op, int rank,
                                         absl::Span<const int> perm) {
  if (static_cast<int>(perm.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": permutation [",
                                                   absl::StrJoin(perm, ","), "] has ",
                                                   perm.size(), " entries for rank ", rank));
  }
  PermuteAttrs attrs;
  std::vector<bool> seen(rank, false);
  for (int axis : perm) {
    absl::StatusOr<int> a = NormalizeAxis(axis, rank, op);
    if (!a.ok()) return a.status();
    if (seen[*a]) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": [", absl::StrJoin(perm, ","),
                                                     "] is not a permutation"));
    }
    seen[*a] = true;
    attrs.perm.push_back(*a);
  }
  return attrs;
}

Shape PermutedShape(const Shape& in, const PermuteAttrs& attrs) {
  Shape out;
  for (int axis : attrs.perm) out.push_back(in[axis]);
  return out;
}

absl::StatusOr<Shape> ExpandShape(const Shape& in, const Shape& target) {
  if (target.rank() < in.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("expand: cannot expand ", in.ToString(),
                                                   " to the lower rank ", target.ToString()));
  }
  Shape out = target;
  const int lead = target.rank() - in.rank();
  for (int i = 0; i < target.rank(); ++i) {
    if (i < lead) {
      if (target[i] == Dim(-1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "expand: -1 is not allowed for the new leading axis ", i, " of ", target.ToString()));
      }
      continue;
    }
    const Dim& have = in[i - lead];
    if (target[i] == Dim(-1)) {
      out[i] = have;
    } else if (!(have == target[i]) && !(have == Dim(1))) {
      return absl::InvalidArgumentError(absl::StrCat("expand: cannot expand ", in.ToString(),
                                                     " to ", target.ToString(), " (axis ", i,
                                                     ": ", have.ToString(), " is not 1)"));
    }
  }
  return out;
}

absl::StatusOr<Shape> ConcatShape(absl::Span<const Tensor> inputs, int axis) {
  const Tensor& first = inputs.front();
  absl::StatusOr<int> a = NormalizeAxis(axis, first.rank(), "concat");
  if (!a.ok()) return a.status();
  Shape out = first.shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (absl::Status s = RequireSameDType("concat", first, t); !s.ok()) return s;
    bool compatible = t.rank() == first.rank();
    for (int d = 0; compatible && d < first.rank(); ++d) {
      if (d != *a && !(t.shape()[d] == first.shape()[d])) compatible = false;
    }
    if (!compatible) {
      return absl::InvalidArgumentError(absl::StrCat("concat: ", Describe(first), " and ",
                                                     Describe(t), " differ outside axis ",
                                                     axis));
    }
    out[*a] = out[*a] + t.shape()[*a];
  }
  return out;
}

}  // namespace kiln::rules
