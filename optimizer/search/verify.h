// Verification of candidates (after Mirage §6, made stronger):
//
// 1. Random tests over finite fields (finite_field.h): the region and the
//    candidate run on the same random inputs in exact arithmetic, each test
//    with fresh primes (q ~ 2^39..2^40, p = kq + 1 < 2^62) and fresh inputs.
//    Outputs are compared in their p components. Both sides are
//    polynomials in the inputs (exponents in Z_q; the opaque functions are
//    random oracles over their arguments), so by Schwartz-Zippel a
//    candidate that differs from the region passes one test with
//    probability at most d/q, d the degree (< 2^20 for any region the
//    search handles, q >= 2^39): with 3 tests, below (2^-19)^3 = 2^-57.
//    The sizes are small but keep the candidate's structure: every split
//    dim gets at least two blocks with a ragged tail, the for-loop at least
//    two steps with a ragged last one, a causal mask's keys at least as many
//    as its queries (VerificationSizes).
// 2. A floating-point check of the candidate (interpreted in f32, operands
//    and outputs rounded as the GPU rounds them) against kiln's CPU
//    reference executor running the region's ops, at the same small sizes.
#ifndef KILN_OPTIMIZER_SEARCH_VERIFY_H_
#define KILN_OPTIMIZER_SEARCH_VERIFY_H_

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/algebra.h"
#include "optimizer/search/candidate.h"
#include "optimizer/search/finite_field.h"
#include "optimizer/search/interpret.h"
#include "optimizer/search/region.h"

namespace kiln::search {

// Per class: tile + 1 for a split class (grid or loop), the real size for a
// class read whole, 1 for unit classes.
std::vector<Dim> VerificationSizes(const Region& region, const Schedule& schedule);

// One random test over a finite field: a fresh prime and fresh inputs from
// `rng`, the region at `sizes` (by class) against `other` on the same
// inputs. Whether their outputs agree in their p components (the q
// component of an exponential is a random function, so comparing it would
// reject exact rewrites of exp).
using FieldArray = DenseArray<FieldElement>;
absl::StatusOr<bool> FieldTest(
    const Region& region, const std::vector<int64_t>& sizes, std::mt19937_64& rng,
    const std::function<absl::StatusOr<FieldArray>(const std::vector<FieldArray>&, const FieldAlgebra&)>& other);

// Whether the candidate equals the region on `tests` independent random
// tests over finite fields (fresh primes and inputs from `seed`).
absl::StatusOr<bool> VerifyOverFiniteFields(const Region& region, const Candidate& candidate, int tests,
                                            uint64_t seed);

struct FloatCheck {
  double max_error = 0;   // max |candidate - reference| / (max |reference| + 1e-6)
  double tolerance = 0;   // for the output dtype
  bool passed = false;
};
absl::StatusOr<FloatCheck> CheckFloatingPoint(const Region& region, const Candidate& candidate, uint64_t seed);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_VERIFY_H_
