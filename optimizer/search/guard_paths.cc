#include "optimizer/search/guard_paths.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"

namespace kiln::search {
namespace {

using Kind = AbstractNode::Kind;

// A guard or a leaf: what it is, and which one (an input's index, a
// constant's bits, an opaque op's function, arity and argument position).
enum class Step : uint8_t { kInput, kConstant, kOpaqueLeaf, kExp, kSqrt, kDenominator, kOpaqueArg };
using Token = std::pair<Step, int64_t>;
using Path = std::vector<Token>;  // from the root's guard down to the leaf
using PathSet = absl::flat_hash_set<Path>;

// A value for each node of a pool, built once from its arguments' values
// (Derived::Build).
template <typename Derived, typename Value>
class PerNode {
 public:
  explicit PerNode(const ExprPool& pool) : pool_(pool) {}

  const Value& Of(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    Value value = static_cast<Derived*>(this)->Build(id);
    return memo_.emplace(id, std::move(value)).first->second;
  }

 protected:
  const ExprPool& pool_;

 private:
  absl::node_hash_map<ExprId, Value> memo_;  // stable: Of hands out references
};

class PathBuilder : public PerNode<PathBuilder, PathSet> {
 public:
  using PerNode::PerNode;

  PathSet Build(ExprId id) {
    const AbstractNode& n = pool_.node(id);
    PathSet out;
    // Copies `arg`'s paths into `out`, behind `guard` if there is one.
    auto take = [&](ExprId arg, const Token* guard) {
      for (const Path& p : Of(arg)) {
        Path q;
        q.reserve(p.size() + 1);
        if (guard != nullptr) q.push_back(*guard);
        q.insert(q.end(), p.begin(), p.end());
        out.insert(std::move(q));
      }
    };
    switch (n.kind) {
      case Kind::kInput: out.insert(Path{{Step::kInput, n.index}}); break;
      case Kind::kConstant:
        if (n.value != 1.0) out.insert(Path{{Step::kConstant, std::bit_cast<int64_t>(n.value)}});
        break;
      case Kind::kAdd:
      case Kind::kMul:
      case Kind::kSum:
        for (ExprId arg : n.args) take(arg, nullptr);
        break;
      case Kind::kDiv: {
        const Token den{Step::kDenominator, 0};
        take(n.args[0], nullptr);
        take(n.args[1], &den);
        break;
      }
      case Kind::kExp:
      case Kind::kSqrt: {
        const Token guard{n.kind == Kind::kExp ? Step::kExp : Step::kSqrt, 0};
        take(n.args[0], &guard);
        break;
      }
      case Kind::kOpaque: {
        const int64_t fn = static_cast<int64_t>(n.fn);
        const int64_t arity = static_cast<int64_t>(n.args.size());
        if (arity == 0) out.insert(Path{{Step::kOpaqueLeaf, fn}});
        for (int64_t i = 0; i < arity; ++i) {
          const Token guard{Step::kOpaqueArg, (fn << 32) | (arity << 16) | i};
          take(n.args[i], &guard);
        }
        break;
      }
    }
    return out;
  }
};

// The degree of each input, by index (missing ones are 0; indices may be
// large: normalizations' atoms).
using Degrees = absl::flat_hash_map<int, int64_t>;
// A term's degrees at each context: a chain of guards from the root (the
// empty chain is the root itself).
using DegreeMap = absl::flat_hash_map<Path, Degrees>;

// Whether products at `context` take the larger degree (under an exp or an
// opaque op) rather than the sum (the root, denominators, square roots).
bool TakesMax(const Path& context) {
  for (const Token& t : context) {
    if (t.first == Step::kExp || t.first == Step::kOpaqueArg) return true;
  }
  return false;
}

void Combine(Degrees& into, const Degrees& d, bool max) {
  for (const auto& [input, degree] : d) {
    int64_t& x = into[input];
    x = max ? std::max(x, degree) : x + degree;
  }
}

// Whether a <= b in every input (missing degrees 0; b may be null: all 0).
bool AtMost(const Degrees& a, const Degrees* b) {
  for (const auto& [input, degree] : a) {
    if (degree == 0) continue;
    if (b == nullptr) return false;
    auto it = b->find(input);
    if (it == b->end() || degree > it->second) return false;
  }
  return true;
}

const Degrees* Find(const DegreeMap& m, const Path& context) {
  auto it = m.find(context);
  return it == m.end() ? nullptr : &it->second;
}

class DegreeBuilder : public PerNode<DegreeBuilder, DegreeMap> {
 public:
  using PerNode::PerNode;

  DegreeMap Build(ExprId id) {
    const AbstractNode& n = pool_.node(id);
    DegreeMap out;
    // Combines `arg`'s degrees into `out`, behind `guard` if there is one;
    // by the larger degree where `max`, else as a product.
    auto take = [&](ExprId arg, const Token* guard, bool max) {
      for (const auto& [context, d] : Of(arg)) {
        Path q;
        if (guard != nullptr) q.push_back(*guard);
        q.insert(q.end(), context.begin(), context.end());
        const bool at_max = max || TakesMax(q);
        Combine(out[q], d, at_max);
      }
    };
    switch (n.kind) {
      case Kind::kInput: out[Path{}][n.index] = 1; break;
      case Kind::kConstant: break;
      case Kind::kAdd:
        for (ExprId arg : n.args) take(arg, nullptr, /*max=*/true);
        break;
      case Kind::kMul:
      case Kind::kSum:
        for (ExprId arg : n.args) take(arg, nullptr, /*max=*/false);
        break;
      case Kind::kDiv: {
        const Token den{Step::kDenominator, 0};
        take(n.args[0], nullptr, false);
        take(n.args[1], &den, false);
        break;
      }
      case Kind::kExp:
      case Kind::kSqrt: {
        const Token guard{n.kind == Kind::kExp ? Step::kExp : Step::kSqrt, 0};
        take(n.args[0], &guard, false);
        break;
      }
      case Kind::kOpaque: {
        const int64_t fn = static_cast<int64_t>(n.fn);
        const int64_t arity = static_cast<int64_t>(n.args.size());
        for (int64_t i = 0; i < arity; ++i) {
          const Token guard{Step::kOpaqueArg, (fn << 32) | (arity << 16) | i};
          take(n.args[i], &guard, true);
        }
        break;
      }
    }
    return out;
  }
};

bool PathsAllowWithin(const ExprPool& pool, ExprId e, ExprId target) {
  PathBuilder paths(pool);
  // Every path of a subterm of the target is a suffix of one of the target's.
  absl::flat_hash_set<Path> suffixes;
  for (const Path& p : paths.Of(target)) {
    for (size_t k = 0; k < p.size(); ++k) suffixes.insert(Path(p.begin() + k, p.end()));
  }
  for (const Path& p : paths.Of(e)) {
    if (!suffixes.contains(p)) return false;
  }
  return true;
}

bool DegreesAllowWithin(const ExprPool& pool, ExprId e, ExprId target) {
  DegreeBuilder degrees(pool);
  const DegreeMap& t = degrees.Of(target);
  const DegreeMap& v = degrees.Of(e);
  // Some context c of the target (a prefix of one of its contexts) under
  // which every degree of e is at most the target's.
  absl::flat_hash_set<Path> places = {Path{}};
  for (const auto& [context, d] : t) {
    for (size_t k = 1; k <= context.size(); ++k) places.insert(Path(context.begin(), context.begin() + k));
  }
  for (const Path& c : places) {
    bool fits = true;
    for (const auto& [q, d] : v) {
      Path at = c;
      at.insert(at.end(), q.begin(), q.end());
      if (!AtMost(d, Find(t, at))) {
        fits = false;
        break;
      }
    }
    if (fits) return true;
  }
  return false;
}

bool DegreesAllowEqual(const ExprPool& pool, ExprId a, ExprId b) {
  DegreeBuilder degrees(pool);
  const DegreeMap& x = degrees.Of(a);
  const DegreeMap& y = degrees.Of(b);
  for (const auto& [q, d] : x) {
    if (!AtMost(d, Find(y, q))) return false;
  }
  for (const auto& [q, d] : y) {
    if (!AtMost(d, Find(x, q))) return false;
  }
  return true;
}

}  // namespace

bool GuardPathsAllowWithin(const ExprPool& pool, ExprId e, ExprId target) {
  return PathsAllowWithin(pool, e, target) && DegreesAllowWithin(pool, e, target);
}

bool GuardPathsAllowEqual(const ExprPool& pool, ExprId a, ExprId b) {
  PathBuilder paths(pool);
  return paths.Of(a) == paths.Of(b) && DegreesAllowEqual(pool, a, b);
}

}  // namespace kiln::search
