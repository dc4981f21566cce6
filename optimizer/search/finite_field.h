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
  Field(uint64_t p, uint64_t q, uint64_t w, uint64_t key) : p_(p), q_(q), w_(w), key_(key) {}
  uint64_t p_, q_, w_, key_;
};

// Deterministic Miller-Rabin for 64-bit integers.
bool IsPrime64(uint64_t n);
// (a * b) mod m and a^e mod m without overflow.
uint64_t MulMod(uint64_t a, uint64_t b, uint64_t m);
uint64_t PowMod(uint64_t a, uint64_t e, uint64_t m);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_FINITE_FIELD_H_
