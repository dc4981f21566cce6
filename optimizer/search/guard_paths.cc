#include "optimizer/search/guard_paths.h"

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

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

class PathBuilder {
 public:
  explicit PathBuilder(const ExprPool& pool) : pool_(pool) {}

  const PathSet& Of(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    PathSet paths = Build(id);
    return memo_.emplace(id, std::move(paths)).first->second;
  }

 private:
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

  const ExprPool& pool_;
  absl::node_hash_map<ExprId, PathSet> memo_;  // stable: Of hands out references
};

}  // namespace

bool GuardPathsAllowWithin(const ExprPool& pool, ExprId e, ExprId target) {
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

bool GuardPathsAllowEqual(const ExprPool& pool, ExprId a, ExprId b) {
  PathBuilder paths(pool);
  return paths.Of(a) == paths.Of(b);
}

}  // namespace kiln::search
