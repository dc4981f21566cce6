#include "tensor/op.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensor/check.h"

namespace kiln {

absl::string_view OpName(OpKind op) {
  switch (op) {
#define KILN_OP_NAME(e, name) \
  case OpKind::k##e:          \
    return #name;
    KILN_OPS(KILN_OP_NAME)
#undef KILN_OP_NAME
  }
  KILN_UNREACHABLE("unknown OpKind value");
}

std::optional<OpKind> ParseOpKind(absl::string_view name) {
#define KILN_OP_PARSE(e, n) \
  if (name == #n) return OpKind::k##e;
  KILN_OPS(KILN_OP_PARSE)
#undef KILN_OP_PARSE
  return std::nullopt;
}

#define KILN_OP_CASE(e, name) case OpKind::k##e:

bool IsUnary(OpKind op) {
  switch (op) {
    KILN_UNARY_OPS(KILN_OP_CASE)
    return true;
    default:
      return false;
  }
}

bool IsArithmetic(OpKind op) {
  switch (op) {
    KILN_ARITHMETIC_OPS(KILN_OP_CASE)
    return true;
    default:
      return false;
  }
}

bool IsComparison(OpKind op) {
  switch (op) {
    KILN_COMPARISON_OPS(KILN_OP_CASE)
    return true;
    default:
      return false;
  }
}

bool IsSource(OpKind op) {
  return op == OpKind::kConstant || op == OpKind::kIota || op == OpKind::kRandom;
}

bool IsReduce(OpKind op) {
  switch (op) {
    KILN_REDUCE_OPS(KILN_OP_CASE)
    return true;
    default:
      return false;
  }
}

#undef KILN_OP_CASE

bool IsElementwise(OpKind op) {
  return IsUnary(op) || IsBinary(op) || op == OpKind::kCast || op == OpKind::kWhere;
}

bool IsView(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kPermute || op == OpKind::kSlice ||
         op == OpKind::kExpand;
}

std::string ConstantAttrs::ToString() const { return absl::StrCat("value=", value); }

void IotaAttrs::Hash(StableHasher& h) const {
  start.Hash(h);
  h.Add(offset).Add(step);
}

std::string IotaAttrs::ToString() const {
  return absl::StrCat("start=", start.ToString(), offset != 0 ? absl::StrCat("+", offset) : "",
                      " step=", step);
}

void RandomAttrs::Hash(StableHasher& h) const {
  h.Add(seed).Add(static_cast<uint64_t>(distribution)).Add(a).Add(b);
}

std::string RandomAttrs::ToString() const {
  if (distribution == RandomDistribution::kUniform) {
    return absl::StrCat("uniform[", a, ",", b, ") seed=", seed);
  }
  return absl::StrCat("normal(mean=", a, ",std=", b, ") seed=", seed);
}

void ReduceAttrs::Hash(StableHasher& h) const {
  h.Add(static_cast<uint64_t>(axes.size()));
  for (int a : axes) h.Add(a);
  h.Add(keepdim);
}

std::string ReduceAttrs::ToString() const {
  return absl::StrCat("axes=[", absl::StrJoin(axes, ","), "]", keepdim ? " keepdim" : "");
}

void PermuteAttrs::Hash(StableHasher& h) const {
  h.Add(static_cast<uint64_t>(perm.size()));
  for (int a : perm) h.Add(a);
}

std::string PermuteAttrs::ToString() const {
  return absl::StrCat("perm=[", absl::StrJoin(perm, ","), "]");
}

void SliceAttrs::Hash(StableHasher& h) const {
  h.Add(static_cast<uint64_t>(ranges.size()));
  for (const Range& r : ranges) {
    r.start.Hash(h);
    h.Add(r.step);
  }
}

std::string SliceAttrs::ToString() const {
  std::string out = "start=[";
  for (size_t i = 0; i < ranges.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", ranges[i].start.ToString());
  }
  absl::StrAppend(&out, "] step=[");
  for (size_t i = 0; i < ranges.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", ranges[i].step);
  }
  return out + "]";
}

std::string AxisAttrs::ToString() const { return absl::StrCat("axis=", axis); }

std::string QuantAttrs::ToString() const { return absl::StrCat("format=", QuantName(format)); }

void SliceUpdateAttrs::Hash(StableHasher& h) const {
  h.Add(axis);
  start.Hash(h);
}

std::string SliceUpdateAttrs::ToString() const {
  return absl::StrCat("axis=", axis, " start=", start.ToString());
}

void HashAttrs(const OpAttrs& attrs, StableHasher& hasher) {
  hasher.Add(static_cast<uint64_t>(attrs.index()));
  std::visit([&](const auto& a) { a.Hash(hasher); }, attrs);
}

std::string AttrsToString(const OpAttrs& attrs) {
  return std::visit([](const auto& a) { return a.ToString(); }, attrs);
}

}  // namespace kiln
