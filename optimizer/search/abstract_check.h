// Asks Z3 whether an abstract expression can be a subexpression of another
// (or equal to it) under the axioms of the algebra:
//   add and mul commutative and associative; mul distributes over add;
//   x / y = x * (1 / y) and (x * y) / z = x * (y / z), (x / y) / z = x / (y * z);
//   sum(a, sum(b, x)) = sum(a * b, x) (merging and splitting sums);
//   sum(n, x + y) = sum(n, x) + sum(n, y); sum(n, x * y) = sum(n, x) * y and
//   sum(n, x / y) = sum(n, x) / y (an over-approximation: the abstraction
//   forgets which index y depends on, and pruning must never lose a valid
//   candidate; verification is exact);
//   exp(a + b) = exp(a) * exp(b); sqrt(a) * sqrt(b) = sqrt(a * b);
//   subexpr is reflexive, transitive, and every argument of a term is a
//   subexpression of it.
// Terms are built with Z3's typed API from the ExprPool (one Z3 function per
// node kind, an uninterpreted sort for values, reals for sizes), never from
// strings. Answers are cached: the same question is put to Z3 once. Questions
// that cheap necessary conditions answer no (symbols no axiom creates, the
// guard paths of guard_paths.h) never reach Z3.
#ifndef KILN_OPTIMIZER_SEARCH_ABSTRACT_CHECK_H_
#define KILN_OPTIMIZER_SEARCH_ABSTRACT_CHECK_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"

#include "optimizer/search/abstract_expr.h"

namespace kiln::search {

// Answers shared by checkers on different pools, keyed by the terms' text:
// the mappings of one region, each searched with its own pool, ask many of
// the same questions. Thread-safe.
class SharedAnswers {
 public:
  std::optional<bool> Find(const std::string& key) const;
  void Add(std::string key, bool answer);

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, bool> answers_;
};

struct AbstractCheckOptions {
  // Per Z3 query; a query Z3 cannot answer in time counts as "not proven".
  int timeout_ms = 200;
  // Answer "no" without Z3 where a cheap necessary condition fails (the
  // symbols of SymbolsOf, the guard paths of guard_paths.h). Off only to
  // test those conditions against Z3.
  bool necessary_conditions = true;
  // Where answers are looked up before they are worked out, and kept; may
  // be null. Must outlive the checker.
  SharedAnswers* shared = nullptr;
};

struct AbstractCheckStats {
  int64_t queries = 0;     // questions asked (syntactic answers included)
  int64_t cache_hits = 0;  // answered from the cache
  int64_t shared_hits = 0;  // answered from the shared answers (another pool asked first)
  int64_t proven = 0;      // Z3 proved the relation
  int64_t timeouts = 0;    // Z3 ran out of time (not: ran out of instances)
  double z3_seconds = 0;   // time inside Z3
};

// Thread-safe: each thread uses its own Z3 context; the cache is shared.
// The pool must outlive the checker and may grow while it is used (the
// caller serializes pool growth with its queries).
class AbstractChecker {
 public:
  AbstractChecker(const ExprPool& pool, AbstractCheckOptions options = {});
  ~AbstractChecker();

  // Whether `e` is provably a subexpression of `target` (false: prune).
  bool IsSubexpression(ExprId e, ExprId target);
  // Whether `a` = `b` is provable under the axioms.
  bool Equivalent(ExprId a, ExprId b);

  AbstractCheckStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_ABSTRACT_CHECK_H_
