// A necessary condition for the abstract checker's questions, decided
// without Z3: what the axioms of abstract_check.h can never change about a
// term is which chains of "guards" lead from its root to each of its leaves.
//
// A guard is exp, sqrt, the denominator of a division, or an argument
// position of an opaque op; add, mul, sum and a division's numerator are
// transparent. A term's guard paths are the sequences of guards from its
// root down to each leaf (an input or a program constant), ending in the
// leaf; the constant 1 has none (x / y = x * (1 / y) brings a 1 in and
// 1 * x = x takes it out). E.g. div(x0, exp(add(x1, x2))) has the paths
// [x0], [den, exp, x1] and [den, exp, x2].
//
// Reading every value as its set of guard paths (add, mul: union; div(x, y):
// x's paths and y's behind a den; exp, sqrt, opaque ops: their arguments'
// behind the guard; sum: its argument's; 1: none) satisfies every axiom, so
// terms the axioms make equal have the same paths. Reading "within" as "each
// path is a suffix of one of the target's" satisfies the within axioms (an
// argument's paths are suffixes of its parent's). That reading is a model of
// the axioms in which the query is false whenever these checks say no, so Z3
// could never prove it: answering no at once loses no candidate.
//
// A second model counts: the degree of each input at each context (a chain
// of guards from the root). Products add degrees at the root, under
// denominators and under square roots (1 / (y z) = (1 / y)(1 / z) and
// sqrt(a) sqrt(b) = sqrt(a b) make those multiplicative) and take the
// larger under exp and opaque ops (exp(a + b) = exp(a) exp(b)); sums take
// the larger everywhere (x (y + z) = x y + x z then holds); sum(n, .) and
// constants change nothing. "Within" reads as: for some context c of the
// target, each of e's degrees at a context q is at most the target's at
// c q. So x * x is no subexpression of sum(x * w), nor is RMSNorm's sum of
// squares times its output: too high a degree of x at the root.
#ifndef KILN_OPTIMIZER_SEARCH_GUARD_PATHS_H_
#define KILN_OPTIMIZER_SEARCH_GUARD_PATHS_H_

#include "optimizer/search/abstract_expr.h"

namespace kiln::search {

// False only when `e` can be no subexpression of `target` under the axioms
// (by either model).
bool GuardPathsAllowWithin(const ExprPool& pool, ExprId e, ExprId target);

// False only when `a` = `b` cannot follow from the axioms.
bool GuardPathsAllowEqual(const ExprPool& pool, ExprId a, ExprId b);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_GUARD_PATHS_H_
