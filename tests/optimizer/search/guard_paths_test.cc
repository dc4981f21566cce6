#include "optimizer/search/guard_paths.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "optimizer/search/abstract_check.h"
#include "optimizer/search/abstract_expr.h"

namespace kiln::search {
namespace {

Rational R(int64_t n) { return MakeRational(n, 1); }

// Attention with its softmax: sum_k exp(s) / sum_k exp(s) * v, s = sum q * k.
struct Attention {
  ExprPool p;
  ExprId q = p.Input(0), k = p.Input(1), v = p.Input(2);
  ExprId s = p.Sum(R(64), p.Mul(q, k));
  ExprId l = p.Sum(R(4096), p.Exp(s));
  ExprId target = p.Sum(R(4096), p.Mul(p.Div(p.Exp(s), l), v));
};

TEST(GuardPaths, AllowWhatTheAxiomsRelate) {
  Attention a;
  ExprPool& p = a.p;
  // Prefixes of FlashAttention and its rescaled accumulators.
  EXPECT_TRUE(GuardPathsAllowWithin(p, p.Sum(R(128), p.Mul(p.Exp(a.s), a.v)), a.target));
  EXPECT_TRUE(GuardPathsAllowWithin(p, a.l, a.target));
  EXPECT_TRUE(GuardPathsAllowWithin(p, a.s, a.target));
  EXPECT_TRUE(GuardPathsAllowWithin(p, a.v, a.target));
  EXPECT_TRUE(GuardPathsAllowEqual(p, p.Div(p.Sum(R(4096), p.Mul(p.Exp(a.s), a.v)), a.l), a.target));
  // Each axiom, both ways round.
  const ExprId x = a.q, y = a.k, z = a.v, one = p.Constant(1);
  const std::vector<std::pair<ExprId, ExprId>> equal = {
      {p.Mul(x, p.Add(y, z)), p.Add(p.Mul(x, y), p.Mul(x, z))},
      {p.Div(x, y), p.Mul(x, p.Div(one, y))},
      {p.Div(one, p.Mul(y, z)), p.Mul(p.Div(one, y), p.Div(one, z))},
      {p.Mul(one, x), x},
      {p.Sum(R(8), p.Add(x, y)), p.Add(p.Sum(R(8), x), p.Sum(R(8), y))},
      {p.Mul(p.Sum(R(8), x), y), p.Sum(R(8), p.Mul(x, y))},
      {p.Exp(p.Add(x, y)), p.Mul(p.Exp(x), p.Exp(y))},
      {p.Mul(p.Sqrt(x), p.Sqrt(y)), p.Sqrt(p.Mul(x, y))},
      {p.Div(p.Div(x, y), z), p.Div(x, p.Mul(y, z))},
  };
  for (const auto& [l, r] : equal) {
    EXPECT_TRUE(GuardPathsAllowEqual(p, l, r)) << p.ToString(l) << " = " << p.ToString(r);
    EXPECT_TRUE(GuardPathsAllowEqual(p, r, l)) << p.ToString(r) << " = " << p.ToString(l);
    EXPECT_TRUE(GuardPathsAllowWithin(p, l, r)) << p.ToString(l) << " in " << p.ToString(r);
  }
}

TEST(GuardPaths, AnswerNoWhereTheNestingCannotMatch) {
  Attention a;
  ExprPool& p = a.p;
  // v is never divided by, nor under an exp.
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Div(a.s, a.v), a.target));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Exp(p.Sum(R(64), p.Mul(a.q, a.v))), a.target));
  // The row sum divided by itself, then divided by: a denominator of a
  // denominator (MLA's search asked Z3 this for 0.2 s a time).
  const ExprId o = p.Sum(R(4096), p.Mul(p.Exp(a.s), a.v));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Div(o, p.Div(a.l, a.l)), a.target));
  // Divided by the output's sum: v under a denominator.
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Div(a.l, o), a.target));
  // Opaque ops: which function, and which argument, count.
  const ExprId m = p.Opaque(OpKind::kMaximum, {a.q, a.v});
  EXPECT_TRUE(GuardPathsAllowWithin(p, a.q, m));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Opaque(OpKind::kMaximum, {a.v, a.q}), m));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Opaque(OpKind::kMinimum, {a.q, a.v}), m));
  // Equality needs the same paths, not only the target's.
  EXPECT_FALSE(GuardPathsAllowEqual(p, a.l, a.target));
  EXPECT_FALSE(GuardPathsAllowEqual(p, p.Div(a.v, a.q), p.Div(a.q, a.v)));
  // The checker answers these without Z3.
  AbstractChecker checker(p);
  EXPECT_FALSE(checker.IsSubexpression(p.Div(o, p.Div(a.l, a.l)), a.target));
  EXPECT_FALSE(checker.IsSubexpression(p.Div(a.l, o), a.target));
  EXPECT_EQ(checker.stats().z3_seconds, 0);
}

// The degrees: how many times each input is multiplied in, per context.
TEST(GuardPaths, AnswerNoWhereTheDegreesAreTooHigh) {
  ExprPool p;
  const ExprId x = p.Input(0), w = p.Input(1);
  const ExprId ms = p.Add(p.Mul(p.Sum(R(4096), p.Mul(x, x)), p.Constant(1.0 / 4096)), p.Constant(1e-6));
  const ExprId r = p.Opaque(OpKind::kRsqrt, {ms});
  const ExprId target = p.Sum(R(4096), p.Mul(p.Mul(x, r), w));  // RMSNorm, then a linear layer
  const ExprId product = p.Sum(R(4096), p.Mul(x, w));
  EXPECT_TRUE(GuardPathsAllowWithin(p, p.Mul(product, r), target));
  EXPECT_TRUE(GuardPathsAllowWithin(p, ms, target));  // x twice, under the rsqrt
  EXPECT_TRUE(GuardPathsAllowWithin(p, p.Opaque(OpKind::kRsqrt, {x}), target));
  // The sum of squares times the output: x three times at the root.
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Mul(ms, p.Mul(product, r)), target));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Sum(R(64), p.Mul(x, x)), product));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Mul(w, p.Mul(x, w)), product));
  // Under an opaque op, a product takes the larger degree: x * rsqrt(..) *
  // rsqrt(..) has x once at the root and twice under the rsqrt, as r does.
  EXPECT_TRUE(GuardPathsAllowWithin(p, p.Mul(p.Mul(x, r), r), target));
  // Equality needs the same degrees.
  EXPECT_FALSE(GuardPathsAllowEqual(p, p.Mul(product, product), p.Mul(product, w)));
  EXPECT_TRUE(GuardPathsAllowEqual(p, p.Mul(product, r), target));
  // Inputs with large indices (normalizations' atoms) cost nothing extra.
  const ExprId atom = p.Input(1 << 30);
  EXPECT_TRUE(GuardPathsAllowWithin(p, atom, p.Mul(atom, x)));
  EXPECT_FALSE(GuardPathsAllowWithin(p, p.Mul(atom, atom), p.Mul(atom, x)));
}

// A random term over the target's inputs and a few of its subterms.
class RandomTerms {
 public:
  RandomTerms(ExprPool& p, std::vector<ExprId> atoms, uint32_t seed) : p_(p), atoms_(std::move(atoms)), rng_(seed) {}

  ExprId Term(int depth) {
    std::uniform_int_distribution<int> pick(0, depth == 0 ? 0 : 8);
    auto sub = [&] { return Term(depth - 1); };
    switch (pick(rng_)) {
      case 0: return atoms_[std::uniform_int_distribution<size_t>(0, atoms_.size() - 1)(rng_)];
      case 1: return p_.Add(sub(), sub());
      case 2:
      case 3: return p_.Mul(sub(), sub());
      case 4: return p_.Div(sub(), sub());
      case 5: return p_.Exp(sub());
      case 6: return p_.Sum(R(64), sub());
      case 7: return p_.Sqrt(sub());
      default: return p_.Opaque(OpKind::kRsqrt, {sub()});
    }
  }

 private:
  ExprPool& p_;
  std::vector<ExprId> atoms_;
  std::mt19937 rng_;
};

// Soundness against Z3 itself: whatever Z3 proves (with the conditions
// off), the conditions allow. Random terms built from the targets' parts
// are proven now and then and refuted by the conditions more often.
TEST(GuardPaths, NeverRefuseWhatZ3Proves) {
  Attention a;
  ExprPool& p = a.p;
  const ExprId rms = p.Opaque(OpKind::kRsqrt, {p.Sum(R(64), p.Mul(a.q, a.q))});
  const ExprId norm = p.Sqrt(p.Sum(R(64), p.Mul(a.k, a.k)));
  const std::vector<ExprId> targets = {a.target, p.Sum(R(64), p.Mul(p.Mul(a.q, rms), a.k)),
                                       p.Div(p.Sum(R(64), p.Mul(a.q, a.k)), p.Mul(norm, a.v))};
  AbstractChecker z3_only(p, AbstractCheckOptions{.timeout_ms = 200, .necessary_conditions = false});
  int proven = 0, refused = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    RandomTerms terms(p, {a.q, a.k, a.v, a.s, a.l, rms, norm, p.Constant(1)}, 7 + t);
    for (int i = 0; i < 120; ++i) {
      const ExprId e = terms.Term(i % 3 + 1);
      const bool allowed = GuardPathsAllowWithin(p, e, targets[t]);
      refused += allowed ? 0 : 1;
      if (!z3_only.IsSubexpression(e, targets[t])) continue;
      ++proven;
      EXPECT_TRUE(allowed) << p.ToString(e) << " in " << p.ToString(targets[t]);
    }
  }
  EXPECT_GT(proven, 10);
  EXPECT_GT(refused, 30);
}

}  // namespace
}  // namespace kiln::search
