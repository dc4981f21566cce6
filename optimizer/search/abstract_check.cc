#include "optimizer/search/abstract_check.h"

#include <z3++.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optimizer/search/guard_paths.h"
#include "tensor/check.h"

namespace kiln::search {
namespace {

using Kind = AbstractNode::Kind;

// One Z3 context with the algebra declared and axiomatized, and a solver that
// holds the axioms at its base level; each query is asked inside push/pop.
// Z3 contexts are not thread-safe: a session serves one query at a time.
//
// Encoding: values are an uninterpreted sort E; add/mul/div: E x E -> E,
// exp/sqrt: E -> E, sum: Real x E -> E, one E -> ... -> E function per opaque
// op and arity, one E constant per input and per program constant (by value).
// The relation "is a subexpression of the target" is asked with the target
// fixed, as a predicate within: E -> Bool: within(target) is asserted and
// within is closed downwards (every argument of a term within is within).
// That is subexpr(., target) with reflexivity and transitivity built in, at
// one instance per term instead of a cubic transitive closure. A second
// predicate, summed, stands for sums of any size (see AddAxioms).
//
// A query is proven when Z3 answers unsat. The axioms give no way to refute
// one, so a query that is not provable ends in "unknown" once E-matching has
// nothing left to instantiate, or when the time is up.
class Session {
 public:
  Session()
      : solver_(ctx_),
        value_(ctx_.uninterpreted_sort("E")),
        add_(ctx_.function("add", value_, value_, value_)),
        mul_(ctx_.function("mul", value_, value_, value_)),
        div_(ctx_.function("div", value_, value_, value_)),
        exp_(ctx_.function("exp", value_, value_)),
        sqrt_(ctx_.function("sqrt", value_, value_)),
        sum_(ctx_.function("sum", ctx_.real_sort(), value_, value_)),
        within_(ctx_.function("within", value_, ctx_.bool_sort())),
        summed_(ctx_.function("summed", value_, ctx_.bool_sort())),
        one_(ConstantTerm(1.0)) {
    AddAxioms();
  }

  enum class Outcome { kProven, kNotProven, kTimedOut };

  // Asks whether e = target (`equality`) or e is within target follows from
  // the axioms. `owner` names the checker (and so the pool) asking: terms
  // memoized for another one are dropped.
  Outcome Prove(uint64_t owner, const ExprPool& pool, int timeout_ms, ExprId e, ExprId target,
                bool equality) {
    if (owner != owner_) {
      LeaveTarget();
      terms_.clear();
      owner_ = owner;
    }
    SetTimeout(timeout_ms);
    z3::expr a = Term(pool, e);
    z3::expr b = Term(pool, target);
    if (!pending_axioms_.empty()) {
      // New opaque functions' axioms belong at the base level.
      LeaveTarget();
      for (const z3::expr& axiom : pending_axioms_) solver_.add(axiom);
      pending_axioms_.clear();
    }
    if (!equality && target != target_) {
      // The search asks about many prefixes of one target: saturating the
      // target's terms once, in a scope kept until the target changes, leaves
      // each query only the work its own terms bring.
      LeaveTarget();
      solver_.push();
      solver_.add(within_(b));
      target_ = target;
      solver_.check();
    }
    // An equality is asked on top of whatever target is in scope: within
    // facts are only ever concluded, never used to derive an equality.
    solver_.push();
    solver_.add(equality ? a != b : !within_(a));
    z3::check_result result = solver_.check();
    std::string reason = result == z3::unknown ? solver_.reason_unknown() : "";
    solver_.pop();
    if (result == z3::unsat) return Outcome::kProven;
    // "(incomplete quantifiers)": E-matching ran out of instances, no proof.
    bool saturated = result == z3::sat || reason.find("incomplete") != std::string::npos;
    return saturated ? Outcome::kNotProven : Outcome::kTimedOut;
  }

 private:
  void LeaveTarget() {
    if (target_ < 0) return;
    solver_.pop();
    target_ = -1;
  }

  void SetTimeout(int timeout_ms) {
    if (timeout_ms == timeout_ms_) return;
    z3::params p(ctx_);
    p.set("timeout", static_cast<unsigned>(timeout_ms));
    // Model-based instantiation would look for a countermodel of a query
    // that is not provable; without it Z3 stops as soon as E-matching has
    // nothing new to instantiate and says unknown ("not proven"), which the
    // orientation of the axioms makes quick.
    p.set("mbqi", false);
    solver_.set(p);
    timeout_ms_ = timeout_ms;
  }

  z3::expr ConstantTerm(double value) {
    // Named by value, so that the 1 of the division axiom is the program's 1.
    char name[64] = "c";
    char* end = std::to_chars(name + 1, name + sizeof(name) - 1, value).ptr;
    *end = '\0';
    return ctx_.constant(name, value_);
  }

  // forall vars. body, instantiated on each of `triggers` (each a
  // multi-pattern). `name` shows in Z3's instantiation profile.
  z3::expr Quantified(const char* name, const std::vector<z3::expr>& vars,
                      const std::vector<std::vector<z3::expr>>& triggers, const z3::expr& body) {
    std::vector<Z3_app> bound;
    for (const z3::expr& v : vars) bound.push_back(v);
    std::vector<Z3_pattern> patterns;
    std::vector<z3::ast> keep;  // holds a reference to each pattern until used
    for (const std::vector<z3::expr>& trigger : triggers) {
      std::vector<Z3_ast> terms(trigger.begin(), trigger.end());
      Z3_pattern p = Z3_mk_pattern(ctx_, static_cast<unsigned>(terms.size()), terms.data());
      ctx_.check_error();
      keep.emplace_back(ctx_, Z3_pattern_to_ast(ctx_, p));
      patterns.push_back(p);
    }
    Z3_ast q = Z3_mk_quantifier_const_ex(
        ctx_, /*is_forall=*/true, /*weight=*/0, Z3_mk_string_symbol(ctx_, name),
        Z3_mk_string_symbol(ctx_, ""), static_cast<unsigned>(bound.size()), bound.data(),
        static_cast<unsigned>(patterns.size()), patterns.data(), 0, nullptr, body);
    ctx_.check_error();
    return z3::expr(ctx_, q);
  }

  void Axiom(const char* name, const std::vector<z3::expr>& vars,
             const std::vector<std::vector<z3::expr>>& triggers, const z3::expr& body) {
    solver_.add(Quantified(name, vars, triggers, body));
  }

  // The axioms of abstract_check.h, oriented so that E-matching terminates
  // quickly on the ground terms of a query. An equation with one pattern
  // rewrites towards a normal form (division as a product with reciprocals,
  // sums outermost in products); one with a pattern on each side is used in
  // both directions. Either way Z3 only adds equalities, so each orientation
  // is the axiom itself. The header's axioms not stated here follow:
  //   (x * y) / z = x * (y / z) and (x / y) / z = x / (y * z) from
  //   x / y = x * (1 / y), 1 / (y * z) = (1 / y) * (1 / z) and AC;
  //   sum(n, x / y) = sum(n, x) / y from these and sum(n, x * y) = sum(n, x) * y.
  // Associativity in one direction suffices with commutativity (x * (y * z)
  // = (y * z) * x = y * (z * x)) and keeps the terms of an n-factor product
  // near n * 2^n rather than 3^n: the product of every subset gets a term.
  void AddAxioms() {
    z3::expr x = ctx_.constant("x", value_);
    z3::expr y = ctx_.constant("y", value_);
    z3::expr z = ctx_.constant("z", value_);
    z3::expr a = ctx_.real_const("a");
    z3::expr b = ctx_.real_const("b");
    auto both = [&](const char* name, const std::vector<z3::expr>& vars, const z3::expr& l,
                    const z3::expr& r) {
      Axiom(name, vars, {{l}, {r}}, l == r);
    };
    auto rewrite = [&](const char* name, const std::vector<z3::expr>& vars, const z3::expr& l,
                       const z3::expr& r) { Axiom(name, vars, {{l}}, l == r); };
    rewrite("add-comm", {x, y}, add_(x, y), add_(y, x));
    rewrite("add-assoc", {x, y, z}, add_(add_(x, y), z), add_(x, add_(y, z)));
    rewrite("mul-comm", {x, y}, mul_(x, y), mul_(y, x));
    rewrite("mul-assoc", {x, y, z}, mul_(mul_(x, y), z), mul_(x, mul_(y, z)));
    // Both ways: a candidate may compute x * (y + z) for a target x*y + x*z.
    both("distribute", {x, y, z}, mul_(x, add_(y, z)), add_(mul_(x, y), mul_(x, z)));
    // 1 * x = x: true, and it keeps 1 / y = 1 * (1 / y) from piling up 1s.
    rewrite("mul-one", {x}, mul_(one_, x), x);
    rewrite("div", {x, y}, div_(x, y), mul_(x, div_(one_, y)));
    rewrite("recip-mul", {y, z}, div_(one_, mul_(y, z)), mul_(div_(one_, y), div_(one_, z)));
    rewrite("sum-merge", {a, b, x}, sum_(a, sum_(b, x)), sum_(a * b, x));
    both("sum-add", {a, x, y}, sum_(a, add_(x, y)), add_(sum_(a, x), sum_(a, y)));
    // sum(n, x * y) = sum(n, x) * y, read right to left: sums move outwards.
    // (What the left-to-right reading adds to "within" is summed-mul below.)
    rewrite("sum-mul", {a, x, y}, mul_(sum_(a, x), y), sum_(a, mul_(x, y)));
    both("exp-add", {x, y}, exp_(add_(x, y)), mul_(exp_(x), exp_(y)));
    both("sqrt-mul", {x, y}, mul_(sqrt_(x), sqrt_(y)), sqrt_(mul_(x, y)));

    for (const z3::func_decl& f : {add_, mul_, div_}) {
      Axiom("within-arg2", {x, y}, {{f(x, y)}},
            z3::implies(within_(f(x, y)), within_(x) && within_(y)));
    }
    for (const z3::func_decl& f : {exp_, sqrt_}) {
      Axiom("within-arg1", {x}, {{f(x)}}, z3::implies(within_(f(x)), within_(x)));
    }
    // summed(x): some sum over x is within the target. Splitting, sum(b, x)
    // = sum(b / a, sum(a, x)) for every a, makes that any sum over x, of any
    // size: a fact about x, not about one size. And sum(n, x * y) = sum(n, x)
    // * y makes a sum over x within whenever a sum over x * y is. (Axioms
    // over sizes instead would have to invent them, or pair up every two
    // sums over one term.)
    Axiom("within-sum", {a, x}, {{sum_(a, x)}},
          z3::implies(within_(sum_(a, x)), summed_(x)) &&
              z3::implies(summed_(x), within_(sum_(a, x))));
    Axiom("summed-arg", {x}, {{summed_(x)}}, z3::implies(summed_(x), within_(x)));
    Axiom("summed-mul", {x, y}, {{mul_(x, y)}}, z3::implies(summed_(mul_(x, y)), summed_(x)));
  }

  // The function for an opaque op of `arity` arguments, declared (with its
  // "arguments are within" axiom) on first use.
  z3::func_decl OpaqueFn(OpKind fn, int arity) {
    auto key = std::make_pair(static_cast<int>(fn), arity);
    auto it = opaque_.find(key);
    if (it != opaque_.end()) return it->second;
    z3::sort_vector domain(ctx_);
    for (int i = 0; i < arity; ++i) domain.push_back(value_);
    std::string name = absl::StrCat("op_", OpName(fn), "_", arity);
    z3::func_decl f = ctx_.function(name.c_str(), domain, value_);
    if (arity > 0) {
      std::vector<z3::expr> vars;
      z3::expr_vector args(ctx_);
      for (int i = 0; i < arity; ++i) {
        vars.push_back(ctx_.constant(absl::StrCat("v", i).c_str(), value_));
        args.push_back(vars.back());
      }
      z3::expr args_within = ctx_.bool_val(true);
      for (const z3::expr& v : vars) args_within = args_within && within_(v);
      pending_axioms_.push_back(Quantified("within-opaque", vars, {{f(args)}},
                                           z3::implies(within_(f(args)), args_within)));
    }
    opaque_.emplace(key, f);
    return f;
  }

  z3::expr SizeTerm(Rational r) { return ctx_.real_val(absl::StrCat(r.num, "/", r.den).c_str()); }

  // The Z3 term of a pool expression, memoized (pool ids never change).
  z3::expr Term(const ExprPool& pool, ExprId id) {
    auto it = terms_.find(id);
    if (it != terms_.end()) return it->second;
    const AbstractNode& n = pool.node(id);
    std::vector<z3::expr> args;
    for (ExprId arg : n.args) args.push_back(Term(pool, arg));
    z3::expr t = [&]() -> z3::expr {
      switch (n.kind) {
        case Kind::kInput: return ctx_.constant(absl::StrCat("x", n.index).c_str(), value_);
        case Kind::kConstant: return ConstantTerm(n.value);
        case Kind::kAdd: return add_(args[0], args[1]);
        case Kind::kMul: return mul_(args[0], args[1]);
        case Kind::kDiv: return div_(args[0], args[1]);
        case Kind::kExp: return exp_(args[0]);
        case Kind::kSqrt: return sqrt_(args[0]);
        case Kind::kSum: return sum_(SizeTerm(n.size), args[0]);
        case Kind::kOpaque: {
          z3::expr_vector v(ctx_);
          for (const z3::expr& arg : args) v.push_back(arg);
          return OpaqueFn(n.fn, static_cast<int>(args.size()))(v);
        }
      }
      KILN_UNREACHABLE("AbstractChecker: unknown node kind");
    }();
    terms_.emplace(id, t);
    return t;
  }

  z3::context ctx_;
  z3::solver solver_;
  z3::sort value_;
  z3::func_decl add_, mul_, div_, exp_, sqrt_, sum_, within_, summed_;
  z3::expr one_;
  std::map<std::pair<int, int>, z3::func_decl> opaque_;
  std::vector<z3::expr> pending_axioms_;  // not yet asserted
  uint64_t owner_ = 0;
  int timeout_ms_ = -1;
  ExprId target_ = -1;  // the target whose within-scope is pushed, if any
  std::unordered_map<ExprId, z3::expr> terms_;
};

// Sessions outlive checkers: a Z3 context takes tens of milliseconds to
// create, far more than a typical query, and a search makes a checker per
// region. Never destroyed, so that no context is torn down during static
// destruction, after Z3's own globals may be gone.
class SessionPool {
 public:
  static SessionPool& Get() {
    static SessionPool* pool = new SessionPool;
    return *pool;
  }

  // An idle session, or null (the caller creates one).
  std::unique_ptr<Session> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Session> s = std::move(idle_.back());
    idle_.pop_back();
    return s;
  }

  void Give(std::unique_ptr<Session> s) {
    std::lock_guard<std::mutex> lock(mu_);
    // As many as threads ever asked at once, within reason.
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(s));
  }

 private:
  static constexpr size_t kMaxIdle = 16;
  std::mutex mu_;
  std::vector<std::unique_ptr<Session>> idle_;
};

// Whether `e` occurs in `target`'s term DAG (ids are hash-consed).
bool Occurs(const ExprPool& pool, ExprId e, ExprId target) {
  std::vector<ExprId> stack = {target};
  absl::flat_hash_set<ExprId> seen;
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (id == e) return true;
    if (!seen.insert(id).second) continue;
    for (ExprId arg : pool.node(id).args) stack.push_back(arg);
  }
  return false;
}

// The symbols that no axiom creates or removes: inputs, program constants
// other than 1 (which x / y = x * (1 / y) introduces and 1 * x = x removes),
// exp, sqrt and opaque ops. Every term the axioms relate to the target uses
// only the target's symbols (each axiom has the same ones on both sides), so
// an expression using any other one is answered "no" without asking Z3.
using Symbol = std::pair<Kind, int64_t>;

absl::flat_hash_set<Symbol> SymbolsOf(const ExprPool& pool, ExprId root) {
  absl::flat_hash_set<Symbol> symbols;
  absl::flat_hash_set<ExprId> seen;
  std::vector<ExprId> stack = {root};
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const AbstractNode& n = pool.node(id);
    switch (n.kind) {
      case Kind::kInput: symbols.insert({n.kind, n.index}); break;
      case Kind::kConstant:
        if (n.value != 1.0) symbols.insert({n.kind, std::bit_cast<int64_t>(n.value)});
        break;
      case Kind::kExp:
      case Kind::kSqrt: symbols.insert({n.kind, 0}); break;
      case Kind::kOpaque: symbols.insert({n.kind, static_cast<int64_t>(n.fn)}); break;
      default: break;
    }
    for (ExprId arg : n.args) stack.push_back(arg);
  }
  return symbols;
}

// A term's text with the arguments of add and mul in text order: the same
// for the same term in any pool (ToString orders them by id, which depends
// on the order a pool was built in).
std::string CanonicalText(const ExprPool& pool, ExprId id, absl::flat_hash_map<ExprId, std::string>& memo) {
  auto it = memo.find(id);
  if (it != memo.end()) return it->second;
  const AbstractNode& n = pool.node(id);
  std::string text;
  if (n.args.empty()) {
    text = pool.ToString(id);
  } else {
    std::vector<std::string> args;
    for (ExprId a : n.args) args.push_back(CanonicalText(pool, a, memo));
    if (n.kind == Kind::kAdd || n.kind == Kind::kMul) std::sort(args.begin(), args.end());
    // The kind, a sum's size, an opaque op's function, then the arguments.
    const std::string size = n.kind == Kind::kSum ? absl::StrCat(n.size.num, "/", n.size.den) : "";
    const std::string fn = n.kind == Kind::kOpaque ? std::string(OpName(n.fn)) : "";
    text = absl::StrCat(static_cast<int>(n.kind), ":", size, fn, "(", absl::StrJoin(args, ","), ")");
  }
  memo.emplace(id, text);
  return text;
}

bool IsSubset(const absl::flat_hash_set<Symbol>& a, const absl::flat_hash_set<Symbol>& b) {
  for (const Symbol& s : a) {
    if (!b.contains(s)) return false;
  }
  return true;
}

}  // namespace

struct AbstractChecker::Impl {
  const ExprPool& pool;
  const AbstractCheckOptions options;
  const uint64_t id;  // tells sessions whose memoized terms they hold

  std::mutex mu;  // guards the cache and the stats
  absl::flat_hash_map<std::tuple<bool, ExprId, ExprId>, bool> cache;
  AbstractCheckStats stats;

  Impl(const ExprPool& p, AbstractCheckOptions o) : pool(p), options(o), id(NextId()) {}

  static uint64_t NextId() {
    static std::atomic<uint64_t> next{1};
    return next++;
  }

  bool Ask(ExprId e, ExprId target, bool equality);
  // The answer, without the cache.
  bool Decide(ExprId e, ExprId target, bool equality);
  bool AskZ3(ExprId e, ExprId target, bool equality);
};

bool AbstractChecker::Impl::AskZ3(ExprId e, ExprId target, bool equality) {
  auto start = std::chrono::steady_clock::now();
  Session::Outcome outcome = Session::Outcome::kNotProven;
  std::unique_ptr<Session> session = SessionPool::Get().Take();
  try {
    if (session == nullptr) session = std::make_unique<Session>();
    outcome = session->Prove(id, pool, options.timeout_ms, e, target, equality);
  } catch (const z3::exception&) {
    // Not proven; the session may be left mid-query, so it is dropped.
    session.reset();
  }
  if (session != nullptr) SessionPool::Get().Give(std::move(session));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mu);
  stats.z3_seconds += seconds;
  if (outcome == Session::Outcome::kProven) ++stats.proven;
  if (outcome == Session::Outcome::kTimedOut) ++stats.timeouts;
  return outcome == Session::Outcome::kProven;
}

bool AbstractChecker::Impl::Ask(ExprId e, ExprId target, bool equality) {
  auto key = std::make_tuple(equality, e, target);
  {
    std::lock_guard<std::mutex> lock(mu);
    ++stats.queries;
    auto it = cache.find(key);
    if (it != cache.end()) {
      ++stats.cache_hits;
      return it->second;
    }
  }
  std::string text;
  std::optional<bool> shared;
  if (options.shared != nullptr) {
    absl::flat_hash_map<ExprId, std::string> memo;
    text = absl::StrCat(equality ? "=" : "<", CanonicalText(pool, e, memo), "|", CanonicalText(pool, target, memo));
    shared = options.shared->Find(text);
  }
  const bool answer = shared.has_value() ? *shared : Decide(e, target, equality);
  if (options.shared != nullptr && !shared.has_value()) options.shared->Add(std::move(text), answer);
  std::lock_guard<std::mutex> lock(mu);
  stats.shared_hits += shared.has_value() ? 1 : 0;
  cache.emplace(key, answer);
  return answer;
}

bool AbstractChecker::Impl::Decide(ExprId e, ExprId target, bool equality) {
  if (equality ? e == target : Occurs(pool, e, target)) return true;
  if (!options.necessary_conditions) return AskZ3(e, target, equality);
  // Z3 is asked only what the cheap necessary conditions leave open.
  absl::flat_hash_set<Symbol> have = SymbolsOf(pool, e);
  absl::flat_hash_set<Symbol> want = SymbolsOf(pool, target);
  if (!IsSubset(have, want) || (equality && !IsSubset(want, have))) return false;
  if (!(equality ? GuardPathsAllowEqual(pool, e, target) : GuardPathsAllowWithin(pool, e, target))) return false;
  return AskZ3(e, target, equality);
}

std::optional<bool> SharedAnswers::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = answers_.find(key);
  if (it == answers_.end()) return std::nullopt;
  return it->second;
}

void SharedAnswers::Add(std::string key, bool answer) {
  std::lock_guard<std::mutex> lock(mu_);
  answers_.emplace(std::move(key), answer);
}

AbstractChecker::AbstractChecker(const ExprPool& pool, AbstractCheckOptions options)
    : impl_(std::make_unique<Impl>(pool, options)) {}

AbstractChecker::~AbstractChecker() = default;

bool AbstractChecker::IsSubexpression(ExprId e, ExprId target) {
  return impl_->Ask(e, target, /*equality=*/false);
}

bool AbstractChecker::Equivalent(ExprId a, ExprId b) {
  // One cache entry for a = b and b = a.
  return impl_->Ask(std::min(a, b), std::max(a, b), /*equality=*/true);
}

AbstractCheckStats AbstractChecker::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace kiln::search
