#include "optimizer/search/finite_field.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::search {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio
constexpr uint64_t kPLimit = uint64_t{1} << 62;

// A bijective 64-bit mixer with full avalanche (the splitmix64 finalizer).
// Mix64(0) == 0, so callers add a constant before mixing.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64: a tiny deterministic generator, good enough to pick primes.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += kGolden;
    return Mix64(state_);
  }

 private:
  uint64_t state_;
};

// Separates the random functions of different purposes (and arities), so
// that e.g. Opaque(kExp, a) and Exp(a).q are unrelated.
enum Domain : uint64_t { kOpaque1 = 1, kOpaque2 = 2, kExpQ = 3, kConstant = 4, kArbitrary = 5 };

// A keyed random function of (tag, words) into Z_p x Z_q. Words are absorbed
// one at a time through the bijection Mix64, so order matters and two
// different inputs collide only if the key-dependent states line up (about
// 2^-64). Reducing 64 random bits mod p leaves a bias of at most a factor
// 5/4 on some residues (p >= 2^61), which does not matter for a random
// function: it only has to differ from every other value with high
// probability.
FieldElement RandomElement(uint64_t key, uint64_t tag, std::initializer_list<uint64_t> words,
                           uint64_t p, uint64_t q) {
  uint64_t h = Mix64((key ^ tag) + kGolden);
  for (uint64_t w : words) h = Mix64((h ^ w) + kGolden);
  return {Mix64(h + 2 * kGolden) % p, Mix64(h + 3 * kGolden) % q};
}

uint64_t OpTag(Domain domain, OpKind op) {
  return static_cast<uint64_t>(domain) | (uint64_t{static_cast<uint8_t>(op)} << 8);
}

// v mod m for a signed v, in [0, m). The magnitude is taken in unsigned
// arithmetic so INT64_MIN is fine.
uint64_t ReduceSigned(int64_t v, uint64_t m) {
  const bool negative = v < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const uint64_t r = magnitude % m;
  return (negative && r != 0) ? m - r : r;
}

// b^-1 mod m for 0 < b < m < 2^63, m prime. Extended Euclid rather than
// b^(m-2): ~40 word divisions instead of ~120 128-bit ones. The Bezout
// coefficient stays within (-m, m), so it is tracked modulo 2^64 in
// unsigned arithmetic (no signed overflow) and its sign read off bit 63.
uint64_t InverseMod(uint64_t b, uint64_t m) {
  uint64_t r0 = m, r1 = b;
  uint64_t t0 = 0, t1 = 1;
  while (r1 != 0) {
    const uint64_t quotient = r0 / r1;
    const uint64_t r2 = r0 - quotient * r1;
    const uint64_t t2 = t0 - quotient * t1;
    r0 = r1;
    r1 = r2;
    t0 = t1;
    t1 = t2;
  }
  // r0 == gcd == 1 since m is prime; t0 * b == 1 (mod m).
  return (t0 >> 63) ? t0 + m : t0;
}

// The inverse of b mod m; a row's elements mostly share their divisor
// (softmax's row sum), so each thread keeps its last one per component.
uint64_t CachedInverse(uint64_t b, uint64_t m, int component) {
  thread_local uint64_t last_m[2] = {0, 0}, last_b[2] = {0, 0}, last_inverse[2] = {0, 0};
  if (last_m[component] != m || last_b[component] != b) {
    last_m[component] = m;
    last_b[component] = b;
    last_inverse[component] = InverseMod(b, m);
  }
  return last_inverse[component];
}

}  // namespace

uint64_t PowMod(uint64_t a, uint64_t e, uint64_t m) {
  if (m == 1) return 0;
  uint64_t result = 1;
  a %= m;
  while (e != 0) {
    if (e & 1) result = MulMod(result, a, m);
    a = MulMod(a, a, m);
    e >>= 1;
  }
  return result;
}

bool IsPrime64(uint64_t n) {
  // The first 12 primes as Miller-Rabin bases decide every n below
  // 3.18 * 10^23 (Sorenson & Webster 2015), so every 64-bit n. Trial division by the same
  // primes first handles small n and guarantees no base is 0 mod n.
  static constexpr uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return false;
  for (uint64_t b : kBases) {
    if (n % b == 0) return n == b;
  }
  if (n < 41 * 41) return true;  // no prime factor <= 37 and below 41^2

  // n - 1 = d * 2^s with d odd.
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (uint64_t a : kBases) {
    uint64_t x = PowMod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool witness = true;  // a proves n composite unless some x^(2^i) == -1
    for (int i = 1; i < s && witness; ++i) {
      x = MulMod(x, x, n);
      if (x == n - 1) witness = false;
    }
    if (witness) return false;
  }
  return true;
}

Field Field::Random(uint64_t seed) {
  SplitMix64 rng(seed);

  // q: a random prime with bit 39 set (top 40 bits of a word, forced odd).
  uint64_t q;
  do {
    q = (rng.Next() >> 24) | (uint64_t{1} << 39) | 1;
  } while (!IsPrime64(q));

  // p = k*q + 1 in [2^61, 2^62): the top of the allowed range, so the p
  // component's error bound d/p is as small as it can be. Odd k makes p even
  // and IsPrime64 rejects it at once.
  const uint64_t k_lo = ((uint64_t{1} << 61) - 1 + q - 1) / q;  // ceil((2^61-1)/q)
  const uint64_t k_hi = (kPLimit - 2) / q;                      // k*q + 1 < 2^62
  uint64_t p;
  do {
    const uint64_t k = k_lo + rng.Next() % (k_hi - k_lo + 1);
    p = k * q + 1;
  } while (!IsPrime64(p));

  // w = g^((p-1)/q) has order dividing q, so order q unless it is 1
  // (probability 1/q per try).
  uint64_t w;
  do {
    const uint64_t g = 2 + rng.Next() % (p - 3);  // [2, p-1)
    w = PowMod(g, (p - 1) / q, p);
  } while (w == 1);

  return Field(p, q, w, rng.Next());
}

absl::StatusOr<Field> Field::Make(uint64_t p, uint64_t q, uint64_t w, uint64_t key) {
  if (p >= kPLimit) {
    return absl::InvalidArgumentError(absl::StrCat("p = ", p, " is not below 2^62"));
  }
  if (!IsPrime64(p)) return absl::InvalidArgumentError(absl::StrCat("p = ", p, " is not prime"));
  if (!IsPrime64(q)) return absl::InvalidArgumentError(absl::StrCat("q = ", q, " is not prime"));
  if ((p - 1) % q != 0) {
    return absl::InvalidArgumentError(absl::StrCat("q = ", q, " does not divide p - 1 = ", p - 1));
  }
  if (w >= p) return absl::InvalidArgumentError(absl::StrCat("w = ", w, " is not below p = ", p));
  // q is prime, so w^q == 1 with w != 1 means the order is exactly q.
  if (w <= 1 || PowMod(w, q, p) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("w = ", w, " does not have order q = ", q, " mod p = ", p));
  }
  return Field(p, q, w, key);
}

// Plain reduction: q < 2^40 leaves a bias below 2^-24; for p in [2^61, 2^62)
// no residue is more than 5/4 as likely as another, which scales the
// p-component Schwartz-Zippel bound d/p by at most 5/4.
FieldElement Field::Uniform(uint64_t r1, uint64_t r2) const { return {r1 % p_, r2 % q_}; }

FieldElement Field::Integer(int64_t value) const {
  return {ReduceSigned(value, p_), ReduceSigned(value, q_)};
}

FieldElement Field::Constant(double value) const {
  // Integers below 2^53 are exact in double, so they are values of the
  // program's integer arithmetic; anything else (fractions, huge values,
  // inf, NaN) is an opaque symbol, the same for the same bits. -0.0 takes
  // the integer path and equals 0.
  if (std::fabs(value) < 0x1p53 && value == std::trunc(value)) {
    return Integer(static_cast<int64_t>(value));
  }
  return RandomElement(key_, kConstant, {std::bit_cast<uint64_t>(value)}, p_, q_);
}


Field::Field(uint64_t p, uint64_t q, uint64_t w, uint64_t key) : p_(p), q_(q), w_(w), key_(key) {
  const int bytes = (std::bit_width(q - 1) + 7) / 8;
  auto powers = std::make_shared<std::vector<uint64_t>>(256 * std::max(bytes, 1));
  uint64_t base = w;  // w^(2^(8i))
  for (int i = 0; i < std::max(bytes, 1); ++i) {
    uint64_t power = 1;
    for (int j = 0; j < 256; ++j) {
      (*powers)[256 * i + j] = power;
      power = MulMod(power, base, p);
    }
    base = power;  // w^(256 * 2^(8i))
  }
  powers_ = std::move(powers);
}

FieldElement Field::Div(FieldElement a, FieldElement b) const {
  return {b.p == 0 ? 0 : MulMod(a.p, CachedInverse(b.p, p_, 0), p_),
          b.q == 0 ? 0 : MulMod(a.q, CachedInverse(b.q, q_, 1), q_)};
}

FieldElement Field::Exp(FieldElement a) const {
  // One table entry per byte of a.q (below q, so the table covers it).
  const std::vector<uint64_t>& powers = *powers_;
  const uint64_t q_component = RandomElement(key_, kExpQ, {a.p, a.q}, p_, q_).q;
  if (a.q >= q_) return {PowMod(w_, a.q, p_), q_component};  // (not a residue: never from this class)
  uint64_t result = powers[a.q & 255];
  for (uint64_t rest = a.q >> 8, i = 1; rest != 0; rest >>= 8, ++i) {
    result = MulMod(result, powers[256 * i + (rest & 255)], p_);
  }
  return {result, q_component};
}

FieldElement Field::Arbitrary(uint64_t site) const { return RandomElement(key_, kArbitrary, {site}, p_, q_); }

FieldElement Field::Opaque(OpKind op, FieldElement a) const {
  return RandomElement(key_, OpTag(kOpaque1, op), {a.p, a.q}, p_, q_);
}

FieldElement Field::Opaque(OpKind op, FieldElement a, FieldElement b) const {
  return RandomElement(key_, OpTag(kOpaque2, op), {a.p, a.q, b.p, b.q}, p_, q_);
}

}  // namespace kiln::search
