#include "optimizer/search/abstract_check.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "optimizer/search/abstract_expr.h"

namespace kiln::search {
namespace {

Rational R(int64_t n) { return MakeRational(n, 1); }

// ---- ExprPool

TEST(AbstractExpr, MakeRationalNormalizesSignAndGcd) {
  EXPECT_EQ(MakeRational(4096, 48), (Rational{256, 3}));
  EXPECT_EQ(MakeRational(6, -4), (Rational{-3, 2}));
  EXPECT_EQ(MakeRational(-6, -4), (Rational{3, 2}));
  EXPECT_EQ(MakeRational(0, 5), (Rational{0, 1}));
  EXPECT_EQ(MakeRational(256, 3) * R(3), R(256));
  EXPECT_EQ(MakeRational(2, 3) * MakeRational(9, 4), MakeRational(3, 2));
}

TEST(AbstractExpr, HashConsesEqualTerms) {
  ExprPool pool;
  ExprId x = pool.Input(0);
  ExprId w = pool.Input(1);
  EXPECT_EQ(pool.Input(0), x);
  EXPECT_NE(x, w);
  EXPECT_EQ(pool.Sum(R(64), pool.Mul(x, w)), pool.Sum(R(64), pool.Mul(x, w)));
  EXPECT_NE(pool.Sum(R(64), pool.Mul(x, w)), pool.Sum(R(32), pool.Mul(x, w)));
  EXPECT_EQ(pool.Constant(0.5), pool.Constant(0.5));
  EXPECT_EQ(pool.Constant(-0.0), pool.Constant(0.0));
  EXPECT_NE(pool.Opaque(OpKind::kSilu, {x}), pool.Opaque(OpKind::kRsqrt, {x}));
  EXPECT_EQ(pool.Opaque(OpKind::kSilu, {x}), pool.Opaque(OpKind::kSilu, {x}));
  // add and mul are stored with ordered arguments: one term either way round.
  EXPECT_EQ(pool.Mul(w, x), pool.Mul(x, w));
  EXPECT_EQ(pool.Add(w, x), pool.Add(x, w));
  EXPECT_NE(pool.Div(w, x), pool.Div(x, w));
}

TEST(AbstractExpr, SumOfOneIsItsArgumentAndNestedSumsMerge) {
  ExprPool pool;
  ExprId y = pool.Mul(pool.Input(0), pool.Input(1));
  EXPECT_EQ(pool.Sum(R(1), y), y);
  EXPECT_EQ(pool.Sum(R(64), pool.Sum(R(64), y)), pool.Sum(R(4096), y));
  EXPECT_EQ(pool.Sum(MakeRational(4096, 48), pool.Sum(R(48), y)), pool.Sum(R(4096), y));
  EXPECT_EQ(pool.Sum(MakeRational(1, 2), pool.Sum(R(2), y)), y);
}

TEST(AbstractExpr, ToString) {
  ExprPool pool;
  ExprId x = pool.Input(0);
  ExprId w = pool.Input(1);
  EXPECT_EQ(pool.ToString(pool.Sum(R(4096), pool.Mul(x, w))), "sum(4096, mul(x0, x1))");
  EXPECT_EQ(pool.ToString(pool.Sum(MakeRational(4096, 48), x)), "sum(256/3, x0)");
  EXPECT_EQ(pool.ToString(pool.Constant(1e-6)), "1e-06");
  EXPECT_EQ(pool.ToString(pool.Constant(1.0 / 4096)), "0.000244140625");
  EXPECT_EQ(pool.ToString(pool.Constant(0.1)), "0.1");
  EXPECT_EQ(pool.ToString(pool.Sub(x, w)), "add(x0, mul(x1, -1))");
  EXPECT_EQ(pool.ToString(pool.Neg(x)), "mul(x0, -1)");
  EXPECT_EQ(pool.ToString(pool.Div(pool.Exp(x), pool.Sqrt(w))), "div(exp(x0), sqrt(x1))");
  EXPECT_EQ(pool.ToString(pool.Opaque(OpKind::kMaximum, {x, w})), "maximum(x0, x1)");
}

// ---- AbstractChecker

// RMSNorm followed by a linear layer: sum_k x * rsqrt(mean(x*x) + eps) * w.
struct RmsNormLinear {
  ExprPool pool;
  ExprId x = pool.Input(0);
  ExprId w = pool.Input(1);
  ExprId r =
      pool.Opaque(OpKind::kRsqrt,
                  {pool.Add(pool.Mul(pool.Sum(R(4096), pool.Mul(x, x)), pool.Constant(1.0 / 4096)),
                            pool.Constant(1e-6))});
  ExprId target = pool.Sum(R(4096), pool.Mul(pool.Mul(x, r), w));
};

TEST(AbstractCheck, RmsNormLinearKnownGoodPrefixes) {
  RmsNormLinear t;
  ExprPool& p = t.pool;
  AbstractChecker checker(p);
  ExprId tile = p.Sum(R(64), p.Mul(t.x, t.w));
  EXPECT_TRUE(checker.IsSubexpression(tile, t.target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(64), tile), t.target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(4096), p.Mul(t.x, t.x)), t.target));
  EXPECT_TRUE(checker.IsSubexpression(t.r, t.target));
  // The seed's RMSNorm discovery: the normalization moved after the matmul.
  ExprId moved = p.Mul(p.Sum(R(4096), p.Mul(t.x, t.w)), t.r);
  EXPECT_TRUE(checker.Equivalent(moved, t.target));
  EXPECT_TRUE(checker.IsSubexpression(moved, t.target));
  // A tile of 48 that does not divide 4096.
  ExprId odd = p.Sum(MakeRational(4096, 48), p.Sum(R(48), p.Mul(t.x, t.w)));
  EXPECT_TRUE(checker.IsSubexpression(odd, t.target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(48), p.Mul(t.x, t.w)), t.target));
  // A partial sum already scaled by the norm.
  EXPECT_TRUE(checker.IsSubexpression(p.Mul(tile, t.r), t.target));
  EXPECT_GT(checker.stats().proven, 0);
}

TEST(AbstractCheck, RmsNormLinearKnownBadPrefixesArePruned) {
  RmsNormLinear t;
  ExprPool& p = t.pool;
  AbstractChecker checker(p);
  ExprId v = p.Input(2);
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(4096), p.Mul(t.w, t.w)), t.target));
  EXPECT_FALSE(checker.IsSubexpression(p.Exp(t.x), t.target));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(64), p.Mul(t.x, v)), t.target));
  ExprId silu = p.Opaque(
      OpKind::kSilu,
      {p.Add(p.Mul(p.Sum(R(4096), p.Mul(t.x, t.x)), p.Constant(1.0 / 4096)), p.Constant(1e-6))});
  EXPECT_FALSE(checker.IsSubexpression(silu, t.target));
  EXPECT_FALSE(checker.Equivalent(p.Sum(R(4096), p.Mul(t.x, t.w)), t.target));
  EXPECT_EQ(checker.stats().proven, 0);
}

// Bad prefixes that use only the target's symbols, so that Z3 itself (not
// the symbol filter) has to answer.
TEST(AbstractCheck, Z3RefutesPrefixesWithTheTargetsSymbols) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  AbstractChecker checker(p);
  ExprId target = p.Sum(R(4096), p.Mul(x, w));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(4096), p.Mul(x, x)), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Add(x, w), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Div(x, w), target));
  EXPECT_FALSE(checker.Equivalent(p.Add(x, w), p.Mul(x, w)));
  // Splitting a sum is fine (sum(4096, y) = sum(2048, sum(2, y))).
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(2), p.Mul(x, w)), target));
  AbstractCheckStats s = checker.stats();
  EXPECT_EQ(s.proven, 1);
  EXPECT_GT(s.z3_seconds, 0);
}

TEST(AbstractCheck, GatedMlp) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w1 = p.Input(1);
  ExprId w2 = p.Input(2);
  const Rational k = R(2048);
  ExprId gate = p.Opaque(OpKind::kSilu, {p.Sum(k, p.Mul(x, w1))});
  ExprId target = p.Mul(gate, p.Sum(k, p.Mul(x, w2)));
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(64), p.Mul(x, w1)), target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(64), p.Mul(x, w2)), target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(k, p.Mul(x, w2)), target));
  EXPECT_TRUE(checker.IsSubexpression(gate, target));
  EXPECT_FALSE(checker.IsSubexpression(p.Opaque(OpKind::kSilu, {p.Sum(k, p.Mul(x, w2))}), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(k, p.Mul(w1, w2)), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Opaque(OpKind::kSilu, {p.Mul(x, w1)}), target));
}

TEST(AbstractCheck, LoraAsOneKernel) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  ExprId a = p.Input(2);
  ExprId b = p.Input(3);
  ExprId xa = p.Sum(R(256), p.Mul(x, a));
  ExprId target = p.Add(p.Sum(R(256), p.Mul(x, w)), p.Sum(R(16), p.Mul(xa, b)));
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.IsSubexpression(xa, target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(16), p.Mul(xa, b)), target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(64), p.Mul(x, a)), target));
  EXPECT_TRUE(
      checker.Equivalent(p.Add(p.Sum(R(16), p.Mul(xa, b)), p.Sum(R(256), p.Mul(x, w))), target));
  // The candidate's accumulator order: x * a * b summed over both loops.
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(16), p.Mul(p.Mul(x, a), b)), target));
  // The abstraction forgets indices, so x * b over 256 is "in" there (x * a * b
  // is, with a factored out); but w and a are never multiplied.
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(256), p.Mul(x, b)), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(256), p.Mul(w, a)), target));
  EXPECT_FALSE(checker.Equivalent(p.Sum(R(16), p.Mul(xa, b)), target));
}

TEST(AbstractCheck, ExpAndSqrtAxioms) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.Equivalent(p.Mul(p.Exp(x), p.Exp(w)), p.Exp(p.Add(x, w))));
  EXPECT_TRUE(checker.Equivalent(p.Mul(p.Sqrt(x), p.Sqrt(w)), p.Sqrt(p.Mul(x, w))));
  EXPECT_TRUE(checker.IsSubexpression(p.Exp(x), p.Exp(p.Add(x, w))));
  EXPECT_FALSE(checker.Equivalent(p.Exp(p.Mul(x, w)), p.Mul(p.Exp(x), p.Exp(w))));
  EXPECT_FALSE(checker.Equivalent(p.Sqrt(p.Add(x, w)), p.Add(p.Sqrt(x), p.Sqrt(w))));
}

TEST(AbstractCheck, RingAndDivisionAxioms) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  ExprId v = p.Input(2);
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.Equivalent(p.Mul(p.Mul(x, w), v), p.Mul(x, p.Mul(w, v))));
  EXPECT_TRUE(checker.Equivalent(p.Add(p.Add(v, w), x), p.Add(p.Add(x, v), w)));
  EXPECT_TRUE(checker.Equivalent(p.Mul(x, p.Add(w, v)), p.Add(p.Mul(x, w), p.Mul(x, v))));
  EXPECT_TRUE(checker.Equivalent(p.Div(p.Mul(x, w), v), p.Mul(x, p.Div(w, v))));
  EXPECT_TRUE(checker.Equivalent(p.Div(p.Div(x, w), v), p.Div(x, p.Mul(w, v))));
  EXPECT_TRUE(checker.Equivalent(p.Div(x, w), p.Mul(x, p.Div(p.Constant(1), w))));
  EXPECT_TRUE(checker.IsSubexpression(p.Mul(x, v), p.Mul(p.Mul(x, w), v)));
  EXPECT_TRUE(checker.IsSubexpression(p.Div(x, w), p.Div(x, p.Mul(w, v))));
  EXPECT_FALSE(checker.Equivalent(p.Add(x, w), p.Mul(x, w)));
  EXPECT_FALSE(checker.Equivalent(p.Div(x, w), p.Div(w, x)));
  EXPECT_FALSE(checker.Equivalent(p.Add(p.Mul(x, w), v), p.Mul(x, p.Add(w, v))));
}

TEST(AbstractCheck, SumAxioms) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.Equivalent(p.Sum(R(8), p.Add(x, w)), p.Add(p.Sum(R(8), x), p.Sum(R(8), w))));
  EXPECT_TRUE(checker.Equivalent(p.Sum(R(8), p.Mul(x, w)), p.Mul(p.Sum(R(8), x), w)));
  EXPECT_TRUE(checker.Equivalent(p.Sum(R(8), p.Div(x, w)), p.Div(p.Sum(R(8), x), w)));
  EXPECT_TRUE(checker.Equivalent(p.Mul(p.Sum(R(8), x), p.Sum(R(4), w)), p.Sum(R(32), p.Mul(x, w))));
  EXPECT_FALSE(checker.Equivalent(p.Sum(R(8), x), p.Sum(R(4), x)));
}

TEST(AbstractCheck, SoftmaxFactorsTheDivisionOutOfTheSum) {
  ExprPool p;
  ExprId q = p.Input(0);
  ExprId k = p.Input(1);
  ExprId v = p.Input(2);
  ExprId s = p.Sum(R(64), p.Mul(q, k));
  ExprId target = p.Sum(R(4096), p.Mul(p.Div(p.Exp(s), p.Sum(R(4096), p.Exp(s))), v));
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(4096), p.Mul(p.Exp(s), v)), target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(4096), p.Exp(s)), target));
  // FlashAttention's tiles: partial sums over 128 keys.
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(128), p.Mul(p.Exp(s), v)), target));
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(128), p.Exp(s)), target));
  EXPECT_TRUE(checker.Equivalent(
      p.Div(p.Sum(R(4096), p.Mul(p.Exp(s), v)), p.Sum(R(4096), p.Exp(s))), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(4096), p.Mul(p.Exp(q), v)), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Exp(p.Sum(R(64), p.Mul(q, v))), target));
}

TEST(AbstractCheck, OpaqueFunctionsOfSeveralArguments) {
  ExprPool p;
  ExprId x = p.Input(0);
  ExprId w = p.Input(1);
  ExprId v = p.Input(2);
  ExprId target = p.Opaque(OpKind::kMaximum, {p.Sum(R(256), p.Mul(x, w)), v});
  AbstractChecker checker(p);
  EXPECT_TRUE(checker.IsSubexpression(p.Sum(R(32), p.Mul(x, w)), target));
  EXPECT_TRUE(checker.Equivalent(p.Opaque(OpKind::kMaximum, {p.Mul(p.Sum(R(256), x), w), v}),
                                 target));
  EXPECT_FALSE(checker.Equivalent(p.Opaque(OpKind::kMaximum, {v, p.Sum(R(256), p.Mul(x, w))}),
                                  target));
  EXPECT_FALSE(checker.IsSubexpression(p.Opaque(OpKind::kMinimum, {v, v}), target));
  EXPECT_FALSE(checker.IsSubexpression(p.Sum(R(32), p.Mul(x, v)), target));
}

// Z3 contexts are reused across checkers; what one memoized for its pool
// must not leak into another pool whose ids mean other terms.
TEST(AbstractCheck, CheckersOnDifferentPoolsDoNotMix) {
  ExprPool a;
  ExprId xa = a.Input(0);
  ExprId wa = a.Input(1);
  ExprId target_a = a.Sum(R(4096), a.Mul(xa, wa));
  ExprId e_a = a.Sum(R(64), a.Mul(xa, wa));
  ExprPool b;
  ExprId xb = b.Input(0);
  ExprId wb = b.Input(1);
  ExprId target_b = b.Sum(R(4096), b.Add(xb, wb));  // the same ids as target_a
  ASSERT_EQ(target_a, target_b);
  for (int round = 0; round < 2; ++round) {
    AbstractChecker checker_a(a);
    EXPECT_TRUE(checker_a.IsSubexpression(e_a, target_a));
    AbstractChecker checker_b(b);
    EXPECT_FALSE(checker_b.IsSubexpression(b.Sum(R(64), b.Mul(xb, wb)), target_b));
    EXPECT_TRUE(checker_b.IsSubexpression(b.Add(b.Sum(R(64), xb), b.Sum(R(64), wb)), target_b));
  }
}

// x and w, and sum(4096, x * w), in a pool of their own; `w_first`
// interns w first, so that the same terms get other ids.
struct DotProduct {
  explicit DotProduct(bool w_first) {
    w = w_first ? p.Input(1) : -1;
    x = p.Input(0);
    if (!w_first) w = p.Input(1);
    target = p.Sum(R(4096), p.Mul(x, w));
  }
  ExprPool p;
  ExprId x, w, target;
};

// Checkers on different pools share answers by the terms' text (the
// mappings of one region): the second asks Z3 nothing the first answered,
// although its ids differ.
TEST(AbstractCheck, SharedAnswersGoByTheTermsNotTheirIds) {
  SharedAnswers shared;
  DotProduct a(/*w_first=*/false), b(/*w_first=*/true);
  ASSERT_NE(a.x, b.x);
  AbstractChecker first(a.p, AbstractCheckOptions{.shared = &shared});
  EXPECT_TRUE(first.IsSubexpression(a.p.Sum(R(2), a.p.Mul(a.x, a.w)), a.target));
  EXPECT_FALSE(first.IsSubexpression(a.p.Sum(R(4096), a.p.Mul(a.x, a.x)), a.target));
  EXPECT_GT(first.stats().z3_seconds, 0);
  AbstractChecker second(b.p, AbstractCheckOptions{.shared = &shared});
  EXPECT_FALSE(second.IsSubexpression(b.p.Sum(R(4096), b.p.Mul(b.x, b.x)), b.target));
  EXPECT_TRUE(second.IsSubexpression(b.p.Sum(R(2), b.p.Mul(b.x, b.w)), b.target));
  EXPECT_EQ(second.stats().shared_hits, 2);
  EXPECT_EQ(second.stats().z3_seconds, 0);
  // A term new to both goes to Z3.
  EXPECT_FALSE(second.IsSubexpression(b.p.Add(b.x, b.w), b.target));
  EXPECT_EQ(second.stats().shared_hits, 2);
  EXPECT_GT(second.stats().z3_seconds, 0);
}

TEST(AbstractCheck, TimeoutCountsAsNotProven) {
  ExprPool p;
  ExprId q = p.Input(0);
  ExprId k = p.Input(1);
  ExprId v = p.Input(2);
  ExprId rq = p.Opaque(OpKind::kRsqrt, {p.Sum(R(64), p.Mul(q, q))});
  ExprId s = p.Mul(p.Sum(R(64), p.Mul(p.Mul(q, rq), k)), p.Constant(0.125));
  ExprId l = p.Sum(R(4096), p.Exp(s));
  ExprId target = p.Sum(R(4096), p.Mul(p.Div(p.Exp(s), l), v));
  // The row sum times the output over the row sum: the guard paths and
  // degrees allow it (they cannot cancel l / l), and Z3's E-matching over
  // its products takes far more than 1 ms to run dry.
  AbstractChecker checker(p, AbstractCheckOptions{.timeout_ms = 1});
  const ExprId o = p.Sum(R(4096), p.Mul(p.Exp(s), v));
  EXPECT_FALSE(checker.IsSubexpression(p.Mul(l, p.Div(o, l)), target));
  EXPECT_EQ(checker.stats().timeouts, 1);
  EXPECT_EQ(checker.stats().proven, 0);
}

TEST(AbstractCheck, CachesAnswers) {
  RmsNormLinear t;
  ExprPool& p = t.pool;
  AbstractChecker checker(p);
  ExprId tile = p.Sum(R(64), p.Mul(t.x, t.w));
  ExprId bad = p.Sum(R(4096), p.Mul(t.x, p.Mul(t.x, t.w)));
  EXPECT_TRUE(checker.IsSubexpression(tile, t.target));
  EXPECT_FALSE(checker.IsSubexpression(bad, t.target));
  AbstractCheckStats first = checker.stats();
  EXPECT_EQ(first.queries, 2);
  EXPECT_EQ(first.cache_hits, 0);
  EXPECT_TRUE(checker.IsSubexpression(tile, t.target));
  EXPECT_FALSE(checker.IsSubexpression(bad, t.target));
  AbstractCheckStats second = checker.stats();
  EXPECT_EQ(second.queries, 4);
  EXPECT_EQ(second.cache_hits, 2);
  EXPECT_EQ(second.proven, first.proven);
  EXPECT_EQ(second.z3_seconds, first.z3_seconds);
  // Equivalence is symmetric: one entry serves both orders.
  ExprId moved = p.Mul(p.Sum(R(4096), p.Mul(t.x, t.w)), t.r);
  EXPECT_TRUE(checker.Equivalent(moved, t.target));
  EXPECT_TRUE(checker.Equivalent(t.target, moved));
  EXPECT_EQ(checker.stats().cache_hits, 3);
}

TEST(AbstractCheck, ConcurrentQueriesAgreeWithSequentialOnes) {
  RmsNormLinear t;
  ExprPool& p = t.pool;
  ExprId v = p.Input(2);
  std::vector<ExprId> questions = {
      p.Sum(R(64), p.Mul(t.x, t.w)),   p.Sum(R(4096), p.Mul(t.x, t.x)),
      p.Sum(R(32), p.Mul(t.x, t.w)),   p.Mul(p.Sum(R(4096), p.Mul(t.x, t.w)), t.r),
      p.Sum(R(4096), p.Mul(t.w, t.w)), p.Exp(t.x),
      p.Sum(R(64), p.Mul(t.x, v)),     p.Sum(R(4096), p.Mul(t.r, t.r)),
  };
  std::vector<bool> sequential;
  {
    AbstractChecker checker(p);
    for (ExprId q : questions) sequential.push_back(checker.IsSubexpression(q, t.target));
  }
  AbstractChecker shared(p);
  constexpr int kThreads = 3;
  std::vector<std::vector<bool>> answers(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Each thread walks the questions from a different start.
      answers[i].resize(questions.size());
      for (size_t j = 0; j < questions.size(); ++j) {
        size_t q = (j + i * 3) % questions.size();
        answers[i][q] = shared.IsSubexpression(questions[q], t.target);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(answers[i], sequential) << "thread " << i;
  AbstractCheckStats s = shared.stats();
  EXPECT_EQ(s.queries, kThreads * static_cast<int64_t>(questions.size()));
}

}  // namespace
}  // namespace kiln::search
