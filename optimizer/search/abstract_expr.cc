#include "optimizer/search/abstract_expr.h"

#include <charconv>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tensor/check.h"

namespace kiln::search {

Rational MakeRational(int64_t num, int64_t den) {
  KILN_CHECK(den != 0, "MakeRational: zero denominator");
  if (den < 0) {
    num = -num;
    den = -den;
  }
  int64_t g = std::gcd(num, den);  // > 0 since den > 0
  return Rational{num / g, den / g};
}

Rational operator*(Rational a, Rational b) {
  // Cancel crosswise first so that products of normalized sizes stay small.
  int64_t g1 = std::gcd(a.num, b.den);
  int64_t g2 = std::gcd(b.num, a.den);
  __int128 num = static_cast<__int128>(a.num / g1) * (b.num / g2);
  __int128 den = static_cast<__int128>(a.den / g2) * (b.den / g1);
  KILN_CHECK(num >= INT64_MIN && num <= INT64_MAX && den <= INT64_MAX,
             "Rational product overflows int64");
  return Rational{static_cast<int64_t>(num), static_cast<int64_t>(den)};
}

namespace {

// Shortest decimal that reads back as the same double ("1e-06", "0.5").
std::string FormatDouble(double v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, result.ptr);
}

std::string FormatRational(Rational r) {
  return r.den == 1 ? absl::StrCat(r.num) : absl::StrCat(r.num, "/", r.den);
}

bool IsCommutative(AbstractNode::Kind kind) {
  return kind == AbstractNode::Kind::kAdd || kind == AbstractNode::Kind::kMul;
}

}  // namespace

ExprId ExprPool::Input(int index) {
  AbstractNode n;
  n.kind = AbstractNode::Kind::kInput;
  n.index = index;
  return Intern(std::move(n));
}

ExprId ExprPool::Constant(double value) {
  AbstractNode n;
  n.kind = AbstractNode::Kind::kConstant;
  n.value = value + 0.0;  // -0 and +0 are one constant
  return Intern(std::move(n));
}

ExprId ExprPool::Operation(AbstractNode::Kind kind, std::vector<ExprId> args) {
  AbstractNode n;
  n.kind = kind;
  n.args = std::move(args);
  return Intern(std::move(n));
}

ExprId ExprPool::Add(ExprId a, ExprId b) { return Operation(AbstractNode::Kind::kAdd, {a, b}); }

ExprId ExprPool::Sub(ExprId a, ExprId b) { return Add(a, Neg(b)); }

ExprId ExprPool::Neg(ExprId a) { return Mul(Constant(-1), a); }

ExprId ExprPool::Mul(ExprId a, ExprId b) { return Operation(AbstractNode::Kind::kMul, {a, b}); }

ExprId ExprPool::Div(ExprId a, ExprId b) { return Operation(AbstractNode::Kind::kDiv, {a, b}); }

ExprId ExprPool::Exp(ExprId a) { return Operation(AbstractNode::Kind::kExp, {a}); }

ExprId ExprPool::Sqrt(ExprId a) { return Operation(AbstractNode::Kind::kSqrt, {a}); }

ExprId ExprPool::Sum(Rational size, ExprId a) {
  KILN_CHECK(size.num > 0 && size.den > 0, "Sum: the size must be positive");
  KILN_CHECK(a >= 0 && a < this->size(), "Sum: argument id out of range");
  // A for-loop accumulating sums of tiles is one sum over all the elements:
  // merging here makes such terms syntactically equal to the target's.
  if (node(a).kind == AbstractNode::Kind::kSum) {
    size = size * node(a).size;
    a = node(a).args[0];
  }
  if (size == Rational{1, 1}) return a;
  AbstractNode n;
  n.kind = AbstractNode::Kind::kSum;
  n.size = size;
  n.args = {a};
  return Intern(std::move(n));
}

ExprId ExprPool::Opaque(OpKind fn, std::vector<ExprId> args) {
  AbstractNode n;
  n.kind = AbstractNode::Kind::kOpaque;
  n.fn = fn;
  n.args = std::move(args);
  return Intern(std::move(n));
}

ExprId ExprPool::Intern(AbstractNode node) {
  for (ExprId arg : node.args) {
    KILN_CHECK(arg >= 0 && arg < size(), "ExprPool: argument id out of range");
  }
  // Ordering the arguments of add and mul makes a + b and b + a one term, so
  // most commutativity questions never reach Z3.
  if (IsCommutative(node.kind) && node.args[0] > node.args[1]) {
    std::swap(node.args[0], node.args[1]);
  }
  std::string key = absl::StrCat(static_cast<int>(node.kind), ":");
  switch (node.kind) {
    case AbstractNode::Kind::kInput: absl::StrAppend(&key, node.index); break;
    case AbstractNode::Kind::kConstant: absl::StrAppend(&key, FormatDouble(node.value)); break;
    case AbstractNode::Kind::kSum: absl::StrAppend(&key, FormatRational(node.size)); break;
    case AbstractNode::Kind::kOpaque: absl::StrAppend(&key, static_cast<int>(node.fn)); break;
    default: break;
  }
  for (ExprId arg : node.args) absl::StrAppend(&key, ",", arg);
  auto [it, inserted] = index_.try_emplace(std::move(key), size());
  if (inserted) nodes_.push_back(std::move(node));
  return it->second;
}

std::string ExprPool::ToString(ExprId id) const {
  const AbstractNode& n = node(id);
  auto call = [&](absl::string_view name, std::string first) {
    std::string s = absl::StrCat(name, "(", first);
    for (ExprId arg : n.args) {
      if (s.back() != '(') s += ", ";
      s += ToString(arg);
    }
    return s + ")";
  };
  switch (n.kind) {
    case AbstractNode::Kind::kInput: return absl::StrCat("x", n.index);
    case AbstractNode::Kind::kConstant: return FormatDouble(n.value);
    case AbstractNode::Kind::kAdd: return call("add", "");
    case AbstractNode::Kind::kMul: return call("mul", "");
    case AbstractNode::Kind::kDiv: return call("div", "");
    case AbstractNode::Kind::kExp: return call("exp", "");
    case AbstractNode::Kind::kSqrt: return call("sqrt", "");
    case AbstractNode::Kind::kSum: return call("sum", FormatRational(n.size));
    case AbstractNode::Kind::kOpaque: return call(OpName(n.fn), "");
  }
  KILN_UNREACHABLE("ExprPool::ToString: unknown node kind");
}

}  // namespace kiln::search
