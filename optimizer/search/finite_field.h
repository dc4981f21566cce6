// Arithmetic for verifying candidates by random tests over finite fields
// (after Mirage §6): a value is a pair (a mod p, b mod q) for primes p and q
// with q | p - 1, and w an element of order q mod p, so that exp(x) =
// w^(x mod q) mod p satisfies exp(x + y) = exp(x) * exp(y) exactly.
// Functions outside that algebra (sqrt, rsqrt, silu, max, ...) are seeded
// random functions of their arguments: a rewrite that keeps them opaque is
// checked exactly, one that relies on their properties fails.
#ifndef KILN_OPTIMIZER_SEARCH_FINITE_FIELD_H_
#define KILN_OPTIMIZER_SEARCH_FINITE_FIELD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tensor/op.h"

namespace kiln::search {

struct FieldElement {
  uint64_t p = 0;  // the value mod p
  uint64_t q = 0;  // the value mod q (the exponent field)
  bool operator==(const FieldElement& o) const { return p == o.p && q == o.q; }
  bool operator!=(const FieldElement& o) const { return !(*this == o); }
};

class Field {
 public:
  // Fresh random primes from `seed`: q prime in [2^39, 2^40), p = k*q + 1
  // prime below 2^62, w = g^((p-1)/q) != 1 for a random g; and a random key
  // for the opaque functions.
  static Field Random(uint64_t seed);
  // The given primes (tests); InvalidArgument unless p, q are prime, q | p-1,
  // p < 2^62 and w has order q.
  static absl::StatusOr<Field> Make(uint64_t p, uint64_t q, uint64_t w, uint64_t key);

  uint64_t p() const { return p_; }
  uint64_t q() const { return q_; }
  uint64_t w() const { return w_; }

  // A uniformly random element (both components) from a 64-bit random word pair.
  FieldElement Uniform(uint64_t r1, uint64_t r2) const;
  // A constant of the program: integers map to themselves (mod p, mod q);
  // any other value to a fixed random element (the same for the same value).
  FieldElement Constant(double value) const;
  FieldElement Integer(int64_t value) const;

  FieldElement Add(FieldElement a, FieldElement b) const;
  FieldElement Sub(FieldElement a, FieldElement b) const;
  FieldElement Neg(FieldElement a) const;
  FieldElement Mul(FieldElement a, FieldElement b) const;
  // The sum of a[i * sa] * b[i * sb] for i < n, reduced a few products at
  // a time rather than once per product.
  FieldElement Dot(const FieldElement* a, int64_t sa, const FieldElement* b, int64_t sb, int64_t n) const;
  // a * b^-1 in each component; b = 0 in a component gives 0 there (the
  // probability of meeting it on random inputs is below 2^-39 per division).
  FieldElement Div(FieldElement a, FieldElement b) const;
  // (w^(a.q) mod p, r(a) mod q): the q component of an exponential is a
  // random function of a (no homomorphism from Z_q into Z_q^* exists), so
  // exponentials of exponentials are compared, not rewritten.
  FieldElement Exp(FieldElement a) const;
  // A fixed random element for `site` (any 64-bit label): a value the
  // program may choose freely, such as the shift that stabilizes a softmax.
  FieldElement Arbitrary(uint64_t site) const;
  // A seeded random function of `op` and its arguments (1 or 2).
  FieldElement Opaque(OpKind op, FieldElement a) const;
  FieldElement Opaque(OpKind op, FieldElement a, FieldElement b) const;

 private:
  Field(uint64_t p, uint64_t q, uint64_t w, uint64_t key);
  uint64_t p_, q_, w_, key_;
  // w^(j * 2^(8i)) mod p at [256 * i + j], for the bytes i of an exponent
  // below q: an exponential is a product of one entry per byte (4
  // products for q below 2^40, not PowMod's 60 or so).
  std::shared_ptr<const std::vector<uint64_t>> powers_;
};

// Deterministic Miller-Rabin for 64-bit integers.
bool IsPrime64(uint64_t n);
// a^e mod m without overflow.
uint64_t PowMod(uint64_t a, uint64_t e, uint64_t m);
// v mod m.
inline uint64_t Reduce128(unsigned __int128 v, uint64_t m) {
#if defined(__x86_64__)
  // One hardware division, where the quotient fits in 64 bits (the high
  // word below m: always for a product of two residues). The compiler's
  // own `%` calls __umodti3, which took a quarter of the verifier's time
  // (causal prefill, 2 cores).
  const uint64_t high = static_cast<uint64_t>(v >> 64), low = static_cast<uint64_t>(v);
  if (high < m) {
    uint64_t quotient, remainder;
    asm("divq %4" : "=a"(quotient), "=d"(remainder) : "a"(low), "d"(high), "rm"(m) : "cc");
    return remainder;
  }
#endif
  return static_cast<uint64_t>(v % m);
}
// (a * b) mod m without overflow.
inline uint64_t MulMod(uint64_t a, uint64_t b, uint64_t m) {
  return Reduce128(static_cast<unsigned __int128>(a) * b, m);
}
inline uint64_t AddMod(uint64_t a, uint64_t b, uint64_t m) {  // a, b < m < 2^63
  const uint64_t s = a + b;
  return s >= m ? s - m : s;
}
inline uint64_t SubMod(uint64_t a, uint64_t b, uint64_t m) {  // a, b < m
  return a >= b ? a - b : a + (m - b);
}

// The ring operations, inline: the interpreter runs them once per element
// and product term.
inline FieldElement Field::Add(FieldElement a, FieldElement b) const {
  return {AddMod(a.p, b.p, p_), AddMod(a.q, b.q, q_)};
}
inline FieldElement Field::Sub(FieldElement a, FieldElement b) const {
  return {SubMod(a.p, b.p, p_), SubMod(a.q, b.q, q_)};
}
inline FieldElement Field::Neg(FieldElement a) const { return {SubMod(0, a.p, p_), SubMod(0, a.q, q_)}; }
inline FieldElement Field::Mul(FieldElement a, FieldElement b) const {
  return {MulMod(a.p, b.p, p_), MulMod(a.q, b.q, q_)};
}
inline FieldElement Field::Dot(const FieldElement* a, int64_t sa, const FieldElement* b, int64_t sb,
                               int64_t n) const {
  // Residues below m < 2^62: the running remainder and three products stay
  // below m * 2^64, so one division (with its quotient in 64 bits) reduces
  // them: a third of the divisions of a product at a time.
  using U = unsigned __int128;
  uint64_t rp = 0, rq = 0;
  int64_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const FieldElement &a0 = a[i * sa], &a1 = a[(i + 1) * sa], &a2 = a[(i + 2) * sa];
    const FieldElement &b0 = b[i * sb], &b1 = b[(i + 1) * sb], &b2 = b[(i + 2) * sb];
    rp = Reduce128(U{rp} + U{a0.p} * b0.p + U{a1.p} * b1.p + U{a2.p} * b2.p, p_);
    rq = Reduce128(U{rq} + U{a0.q} * b0.q + U{a1.q} * b1.q + U{a2.q} * b2.q, q_);
  }
  for (; i < n; ++i) {
    rp = Reduce128(U{rp} + U{a[i * sa].p} * b[i * sb].p, p_);
    rq = Reduce128(U{rq} + U{a[i * sa].q} * b[i * sb].q, q_);
  }
  return {rp, rq};
}

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_FINITE_FIELD_H_
