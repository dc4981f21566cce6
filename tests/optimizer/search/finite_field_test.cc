// Finite-field arithmetic for random-test verification: primality, random
// field construction, the field laws, the exp homomorphism, opaque functions,
// constants, Make's validation and the false-pass bound.
#include "optimizer/search/finite_field.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::search {
namespace {

using ::testing::HasSubstr;

// Every constant below was checked with coreutils `factor`.
constexpr uint64_t kMersenne61 = (uint64_t{1} << 61) - 1;   // prime
constexpr uint64_t kBelow2To62 = (uint64_t{1} << 62) - 57;  // largest prime < 2^62
constexpr uint64_t kBelow2To64 = 18446744073709551557ULL;   // 2^64 - 59, largest prime < 2^64
constexpr uint64_t kFirstPrimeAbove2To62 = 4611686018427388039ULL;

bool IsPrimeByTrialDivision(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(FiniteFieldPrimeTest, AgreesWithSieveBelow100000) {
  constexpr int kN = 100000;
  std::vector<bool> composite(kN, false);
  composite[0] = composite[1] = true;
  for (int i = 2; i * i < kN; ++i) {
    if (!composite[i]) {
      for (int j = i * i; j < kN; j += i) composite[j] = true;
    }
  }
  for (int n = 0; n < kN; ++n) ASSERT_EQ(IsPrime64(n), !composite[n]) << n;
}

TEST(FiniteFieldPrimeTest, CarmichaelNumbersAndStrongPseudoprimes) {
  // Carmichael numbers fool the Fermat test for every coprime base.
  for (uint64_t n : {561ULL, 1105ULL, 1729ULL, 41041ULL, 825265ULL, 321197185ULL,
                     294409ULL /* 37*73*109 */, 56052361ULL /* 211*421*631 */,
                     10386066643795453969ULL /* 1200697*2401393*3602089, above 2^63 */}) {
    EXPECT_FALSE(IsPrime64(n)) << n;
  }
  // Strong pseudoprimes: 2047 to base 2; 3215031751 to bases 2, 3, 5, 7;
  // 3825123056546413051 to every prime base up to 23, so only 29, 31 or 37
  // can expose it.
  for (uint64_t n : {2047ULL, 3215031751ULL, 3825123056546413051ULL}) {
    EXPECT_FALSE(IsPrime64(n)) << n;
  }
}

TEST(FiniteFieldPrimeTest, LargePrimesAndComposites) {
  EXPECT_TRUE(IsPrime64(kMersenne61));
  EXPECT_TRUE(IsPrime64(kBelow2To62));
  EXPECT_TRUE(IsPrime64(kBelow2To64));
  EXPECT_TRUE(IsPrime64(kFirstPrimeAbove2To62));
  EXPECT_TRUE(IsPrime64(1000000007));
  EXPECT_TRUE(IsPrime64(4294967291ULL));  // largest prime < 2^32
  for (uint64_t n = kBelow2To62 + 1; n < (uint64_t{1} << 62); ++n) EXPECT_FALSE(IsPrime64(n)) << n;
  EXPECT_FALSE(IsPrime64(std::numeric_limits<uint64_t>::max()));
  EXPECT_FALSE(IsPrime64((uint64_t{1} << 62) - 1));        // 3 * 715827883 * 2147483647
  EXPECT_FALSE(IsPrime64(4294967291ULL * 4294967291ULL));  // square of a prime
  EXPECT_FALSE(IsPrime64(4294967291ULL * 4294967279ULL));  // two large primes
}

TEST(FiniteFieldPrimeTest, AgreesWithTrialDivisionOnRandomOddNumbers) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const uint64_t n = (rng() >> 30) | 1;  // < 2^34: trial division is quick
    ASSERT_EQ(IsPrime64(n), IsPrimeByTrialDivision(n)) << n;
  }
}

TEST(FiniteFieldPrimeTest, MulModAndPowModNearTheTop) {
  const uint64_t m = kBelow2To64;
  EXPECT_EQ(MulMod(m - 1, m - 1, m), 1u);  // (-1)^2
  EXPECT_EQ(MulMod(m - 1, 2, m), m - 2);
  EXPECT_EQ(MulMod(std::numeric_limits<uint64_t>::max(), 1, m), 58u);  // 2^64-1 = m + 58
  EXPECT_EQ(PowMod(3, m - 1, m), 1u);                                  // Fermat
  EXPECT_EQ(PowMod(2, 61, kMersenne61), 1u);
  EXPECT_EQ(PowMod(2, 10, 1000), 24u);
  EXPECT_EQ(PowMod(5, 0, 7), 1u);
  EXPECT_EQ(PowMod(5, 3, 1), 0u);
}

// The one-division reduction agrees with the compiler's 128-bit `%`, also
// where the quotient does not fit in 64 bits (it then takes that path).
TEST(FiniteFieldPrimeTest, Reduce128AgreesWithTheWideRemainder) {
  std::mt19937_64 rng(5);
  for (uint64_t m : {uint64_t{3}, kMersenne61, (uint64_t{1} << 62) - 57, kBelow2To64}) {
    for (int i = 0; i < 1000; ++i) {
      const unsigned __int128 v = (static_cast<unsigned __int128>(rng()) << 64) | rng();
      ASSERT_EQ(Reduce128(v, m), static_cast<uint64_t>(v % m)) << m;
      const unsigned __int128 low = v % (static_cast<unsigned __int128>(m) << 64);  // quotient below 2^64
      ASSERT_EQ(Reduce128(low, m), static_cast<uint64_t>(low % m)) << m;
    }
  }
}

void ExpectValidField(const Field& f) {
  EXPECT_TRUE(IsPrime64(f.p())) << f.p();
  EXPECT_TRUE(IsPrime64(f.q())) << f.q();
  EXPECT_GE(f.q(), uint64_t{1} << 39);
  EXPECT_LT(f.q(), uint64_t{1} << 40);
  EXPECT_LT(f.p(), uint64_t{1} << 62);
  EXPECT_EQ((f.p() - 1) % f.q(), 0u);
  EXPECT_NE(f.w(), 1u);
  EXPECT_LT(f.w(), f.p());
  EXPECT_EQ(PowMod(f.w(), f.q(), f.p()), 1u);
}

TEST(FiniteFieldRandomTest, FieldsAreValidAndDependOnTheSeed) {
  std::vector<uint64_t> qs;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Field f = Field::Random(seed);
    ExpectValidField(f);
    qs.push_back(f.q());
  }
  std::sort(qs.begin(), qs.end());
  EXPECT_EQ(std::unique(qs.begin(), qs.end()), qs.end()) << "two seeds gave the same q";

  const Field a = Field::Random(42), b = Field::Random(42), c = Field::Random(43);
  EXPECT_EQ(a.p(), b.p());
  EXPECT_EQ(a.q(), b.q());
  EXPECT_EQ(a.w(), b.w());
  EXPECT_EQ(a.Opaque(OpKind::kSilu, a.Integer(3)),
            b.Opaque(OpKind::kSilu, b.Integer(3)));  // same key
  EXPECT_NE(a.p(), c.p());
  EXPECT_NE(a.q(), c.q());
}

// Random elements of a fresh field, both components uniform.
class FiniteFieldLawsTest : public ::testing::Test {
 protected:
  FieldElement Next() { return f_.Uniform(rng_(), rng_()); }
  Field f_ = Field::Random(1234);
  std::mt19937_64 rng_{99};
};

TEST_F(FiniteFieldLawsTest, RingAxioms) {
  const FieldElement zero = f_.Integer(0), one = f_.Integer(1);
  for (int i = 0; i < 1000; ++i) {
    const FieldElement a = Next(), b = Next(), c = Next();
    ASSERT_LT(a.p, f_.p());
    ASSERT_LT(a.q, f_.q());
    EXPECT_EQ(f_.Add(a, b), f_.Add(b, a));
    EXPECT_EQ(f_.Mul(a, b), f_.Mul(b, a));
    EXPECT_EQ(f_.Add(f_.Add(a, b), c), f_.Add(a, f_.Add(b, c)));
    EXPECT_EQ(f_.Mul(f_.Mul(a, b), c), f_.Mul(a, f_.Mul(b, c)));
    EXPECT_EQ(f_.Mul(a, f_.Add(b, c)), f_.Add(f_.Mul(a, b), f_.Mul(a, c)));
    EXPECT_EQ(f_.Sub(a, a), zero);
    EXPECT_EQ(f_.Add(a, f_.Neg(a)), zero);
    EXPECT_EQ(f_.Sub(a, b), f_.Add(a, f_.Neg(b)));
    EXPECT_EQ(f_.Add(a, zero), a);
    EXPECT_EQ(f_.Mul(a, one), a);
  }
}

// Dot, which reduces three products at a time, is the sum of the
// products one at a time: on random residues and on the largest (p - 1,
// q - 1: the bound its grouping relies on), at every length around its
// groups of three, with strides.
TEST_F(FiniteFieldLawsTest, DotIsTheSumOfTheProducts) {
  const FieldElement top = {f_.p() - 1, f_.q() - 1};
  for (bool largest : {false, true}) {
    for (int64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 17, 128}) {
      for (int64_t stride : {1, 3}) {
        std::vector<FieldElement> a(n * stride), b(n * stride);
        for (FieldElement& x : a) x = largest ? top : Next();
        for (FieldElement& x : b) x = largest ? top : Next();
        FieldElement sum = f_.Integer(0);
        for (int64_t i = 0; i < n; ++i) sum = f_.Add(sum, f_.Mul(a[i * stride], b[i * stride]));
        EXPECT_EQ(f_.Dot(a.data(), stride, b.data(), stride, n), sum) << n << " " << stride << " " << largest;
      }
    }
  }
}

TEST_F(FiniteFieldLawsTest, DivisionInvertsMultiplication) {
  const FieldElement one = f_.Integer(1);
  for (int i = 0; i < 1000; ++i) {
    const FieldElement a = Next(), b = Next();
    ASSERT_NE(b.p, 0u);
    ASSERT_NE(b.q, 0u);
    EXPECT_EQ(f_.Mul(f_.Div(a, b), b), a);
    EXPECT_EQ(f_.Mul(f_.Div(one, b), b), one);
  }
  // Extremes of each component: -1 and 1 are their own inverses.
  const FieldElement minus_one = f_.Integer(-1);
  EXPECT_EQ(f_.Div(one, minus_one), minus_one);
  EXPECT_EQ(f_.Div(minus_one, one), minus_one);
}

TEST_F(FiniteFieldLawsTest, ZeroDivisorGivesZeroInThatComponentOnly) {
  const FieldElement a = Next();
  EXPECT_EQ(f_.Div(a, f_.Integer(0)), (FieldElement{0, 0}));
  // p == 1 (mod q): Integer(p) is 0 in the p component and 1 in the q one.
  const FieldElement p_itself = f_.Integer(static_cast<int64_t>(f_.p()));
  ASSERT_EQ(p_itself, (FieldElement{0, 1}));
  EXPECT_EQ(f_.Div(a, p_itself), (FieldElement{0, a.q}));
}

TEST_F(FiniteFieldLawsTest, ExpIsAHomomorphismInThePComponent) {
  EXPECT_EQ(f_.Exp(f_.Integer(0)).p, 1u);
  EXPECT_EQ(f_.Exp(f_.Integer(1)).p, f_.w());
  // Exponents live mod q: exp(q) = exp(0).
  EXPECT_EQ(f_.Exp(f_.Integer(static_cast<int64_t>(f_.q()))).p, 1u);
  for (int i = 0; i < 300; ++i) {
    const FieldElement a = Next(), b = Next();
    EXPECT_EQ(f_.Exp(f_.Add(a, b)).p, f_.Mul(f_.Exp(a), f_.Exp(b)).p);
    EXPECT_EQ(f_.Exp(f_.Neg(a)).p, f_.Div(f_.Integer(1), f_.Exp(a)).p);
    // The q component is a fixed function of a, never the homomorphism
    // (none exists), so it is deterministic but unrelated.
    EXPECT_EQ(f_.Exp(a), f_.Exp(a));
    EXPECT_LT(f_.Exp(a).q, f_.q());
  }
}

TEST(FiniteFieldExpTest, MatchesPowersOfWInASmallField) {
  // p = 607 = 6 * 101 + 1, and 64 = 2^6 has order 101 mod 607.
  absl::StatusOr<Field> f = Field::Make(607, 101, 64, 5);
  ASSERT_TRUE(f.ok()) << f.status();
  uint64_t power = 1;
  for (int x = 0; x < 300; ++x) {
    EXPECT_EQ(f->Exp(f->Integer(x)).p, power) << x;
    power = power * 64 % 607;
  }
  // Negative exponents: w^-1 * w == 1.
  EXPECT_EQ(f->Exp(f->Integer(-1)).p * 64 % 607, 1u);
}

TEST_F(FiniteFieldLawsTest, OpaqueFunctionsAreDeterministicAndDistinct) {
  const FieldElement a = Next(), b = Next();
  EXPECT_EQ(f_.Opaque(OpKind::kRsqrt, a), f_.Opaque(OpKind::kRsqrt, a));
  EXPECT_NE(f_.Opaque(OpKind::kRsqrt, a), f_.Opaque(OpKind::kSqrt, a));
  EXPECT_NE(f_.Opaque(OpKind::kRsqrt, a), f_.Opaque(OpKind::kRsqrt, b));
  EXPECT_EQ(f_.Opaque(OpKind::kMaximum, a, b), f_.Opaque(OpKind::kMaximum, a, b));
  EXPECT_NE(f_.Opaque(OpKind::kMaximum, a, b), f_.Opaque(OpKind::kMaximum, b, a));
  EXPECT_NE(f_.Opaque(OpKind::kMaximum, a, b), f_.Opaque(OpKind::kMinimum, a, b));
  // The arity is part of the function; so is the q component of the input.
  EXPECT_NE(f_.Opaque(OpKind::kMaximum, a), f_.Opaque(OpKind::kMaximum, a, a));
  const FieldElement same_p{a.p, (a.q + 1) % f_.q()};
  EXPECT_NE(f_.Opaque(OpKind::kSilu, a), f_.Opaque(OpKind::kSilu, same_p));
  // Same primes, another key: another function.
  absl::StatusOr<Field> rekeyed = Field::Make(f_.p(), f_.q(), f_.w(), 1);
  ASSERT_TRUE(rekeyed.ok()) << rekeyed.status();
  EXPECT_NE(f_.Opaque(OpKind::kSilu, a), rekeyed->Opaque(OpKind::kSilu, a));
  EXPECT_NE(f_.Constant(0.5), rekeyed->Constant(0.5));
  EXPECT_NE(f_.Exp(a).q, rekeyed->Exp(a).q);
  EXPECT_EQ(f_.Exp(a).p, rekeyed->Exp(a).p);
}

TEST_F(FiniteFieldLawsTest, OpaqueOutputsLookUniform) {
  // A weak mix would show up as collisions or stuck components on inputs
  // 0, 1, 2, ...: check both components are in range and spread out.
  std::vector<uint64_t> ps, qs;
  uint64_t high_half = 0;
  constexpr int kN = 4000;
  for (int i = 0; i < kN; ++i) {
    const FieldElement y = f_.Opaque(OpKind::kTanh, f_.Integer(i));
    ASSERT_LT(y.p, f_.p());
    ASSERT_LT(y.q, f_.q());
    ps.push_back(y.p);
    qs.push_back(y.q);
    if (y.q >= f_.q() / 2) ++high_half;
  }
  std::sort(ps.begin(), ps.end());
  std::sort(qs.begin(), qs.end());
  EXPECT_EQ(std::unique(ps.begin(), ps.end()), ps.end());
  EXPECT_EQ(std::unique(qs.begin(), qs.end()), qs.end());
  // Binomial(4000, 1/2): the standard deviation is ~32.
  EXPECT_NEAR(static_cast<double>(high_half), kN / 2.0, 200);
}

TEST_F(FiniteFieldLawsTest, Constants) {
  EXPECT_EQ(f_.Constant(2.0), f_.Integer(2));
  EXPECT_EQ(f_.Constant(0.0), f_.Integer(0));
  EXPECT_EQ(f_.Constant(-0.0), f_.Integer(0));
  EXPECT_EQ(f_.Add(f_.Constant(-1.0), f_.Integer(1)), f_.Integer(0));
  EXPECT_EQ(f_.Constant(-1.0), (FieldElement{f_.p() - 1, f_.q() - 1}));
  EXPECT_EQ(f_.Constant(0x1p53 - 1), f_.Integer((int64_t{1} << 53) - 1));
  // Non-integers are fixed random elements: stable, and distinct per value.
  EXPECT_EQ(f_.Constant(1e-6), f_.Constant(1e-6));
  EXPECT_NE(f_.Constant(1e-6), f_.Constant(1e-5));
  EXPECT_NE(f_.Constant(0.5), f_.Div(f_.Integer(1), f_.Integer(2)));
  EXPECT_NE(f_.Constant(0.5), f_.Constant(-0.5));
  // Not integers of the program's arithmetic: 2^53 and beyond, inf, NaN.
  EXPECT_NE(f_.Constant(0x1p53), f_.Integer(int64_t{1} << 53));
  EXPECT_EQ(f_.Constant(INFINITY), f_.Constant(INFINITY));
  EXPECT_NE(f_.Constant(INFINITY), f_.Constant(-INFINITY));
  EXPECT_EQ(f_.Constant(NAN), f_.Constant(NAN));
}

TEST_F(FiniteFieldLawsTest, IntegersReduceSignedValues) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(f_.Add(f_.Integer(kMin), f_.Integer(kMax)), f_.Integer(-1));
  EXPECT_EQ(f_.Add(f_.Integer(-5), f_.Integer(5)), f_.Integer(0));
  EXPECT_EQ(f_.Integer(-static_cast<int64_t>(f_.q())).q, 0u);
  EXPECT_EQ(f_.Mul(f_.Integer(-3), f_.Integer(-4)), f_.Integer(12));
}

TEST(FiniteFieldMakeTest, AcceptsAValidFieldAndRejectsEachViolation) {
  EXPECT_TRUE(Field::Make(607, 101, 64, 0).ok());
  EXPECT_TRUE(Field::Make(11, 5, 3, 0).ok());  // 3^5 = 243 = 22 * 11 + 1

  auto expect_rejected = [](absl::StatusOr<Field> f, const char* what) {
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(f.status().message(), HasSubstr(what));
  };
  expect_rejected(Field::Make(12, 5, 3, 0), "p = 12 is not prime");
  expect_rejected(Field::Make(11, 4, 3, 0), "q = 4 is not prime");
  expect_rejected(Field::Make(11, 3, 3, 0), "does not divide p - 1");
  expect_rejected(Field::Make(11, 5, 10, 0), "w = 10 does not have order q");  // order 2
  expect_rejected(Field::Make(11, 5, 2, 0), "w = 2 does not have order q");    // order 10
  expect_rejected(Field::Make(11, 5, 1, 0), "w = 1 does not have order q");
  expect_rejected(Field::Make(11, 5, 0, 0), "w = 0 does not have order q");
  expect_rejected(Field::Make(11, 5, 14, 0), "w = 14 is not below p");  // 14 = 3 mod 11
  // A prime above the limit, with q = 2 and w = -1 otherwise valid.
  expect_rejected(Field::Make(kFirstPrimeAbove2To62, 2, kFirstPrimeAbove2To62 - 1, 0),
                  "not below 2^62");
}

// Why random evaluation is a sound verifier. Two expressions that are not the
// same polynomial differ by a nonzero polynomial of degree d; Schwartz–Zippel
// bounds the chance that uniform random inputs are a root of it by d/q (q the
// smaller modulus, q >= 2^39 for Field::Random). With d <= 2^20 that is
// 2^-19 per test, and 3 tests in independent fields pass a wrong candidate
// with probability at most 2^-57. The test checks the bound empirically in a
// tiny field where it is observable.
TEST(FiniteFieldSchwartzZippelTest, FalsePassRateIsBoundedByDegreeOverQ) {
  absl::StatusOr<Field> f = Field::Make(607, 101, 64, 9);
  ASSERT_TRUE(f.ok()) << f.status();
  std::mt19937_64 rng(3);
  // (x + y)^2 vs x^2 + y^2 (differ by 2xy, degree 2) and x^3 vs x (degree 3,
  // three roots in each component).
  int pass_square = 0, pass_cube = 0;
  constexpr int kTrials = 20000;
  for (int i = 0; i < kTrials; ++i) {
    const FieldElement x = f->Uniform(rng(), rng()), y = f->Uniform(rng(), rng());
    const FieldElement s = f->Add(x, y);
    if (f->Mul(s, s).q == f->Add(f->Mul(x, x), f->Mul(y, y)).q) ++pass_square;
    if (f->Mul(x, f->Mul(x, x)).q == x.q) ++pass_cube;
  }
  const double bound_square = 2.0 / 101, bound_cube = 3.0 / 101;
  EXPECT_LE(pass_square, kTrials * bound_square * 1.2);
  EXPECT_LE(pass_cube, kTrials * bound_cube * 1.2);
  EXPECT_GT(pass_cube, 0);  // x in {0, 1, -1} does pass: the bound is tight here
  // In a real field the same non-identities are never seen to pass.
  const Field big = Field::Random(77);
  for (int i = 0; i < 1000; ++i) {
    const FieldElement x = big.Uniform(rng(), rng()), y = big.Uniform(rng(), rng());
    const FieldElement s = big.Add(x, y);
    EXPECT_NE(big.Mul(s, s), big.Add(big.Mul(x, x), big.Mul(y, y)));
  }
}

}  // namespace
}  // namespace kiln::search
