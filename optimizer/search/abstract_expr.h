// Abstract expressions (after Mirage §5): what a tensor computes, as a term
// over the region's inputs that forgets indices: a matmul of A and B is
// sum(k, A * B), a reduction over n elements sum(n, x). The search prunes a
// partial candidate unless each of its tiles' expressions can be a
// subexpression of the region's output expression under the axioms below,
// asked of Z3 (abstract_check.h).
//
// Terms are hash-consed in an ExprPool: equal ids mean syntactically equal
// terms. Sizes of sums are exact positive rationals (a for-loop over K in
// steps of t contributes sum(K/t, sum(t, .)), which the axioms merge to
// sum(K, .) also when t does not divide K).
#ifndef KILN_OPTIMIZER_SEARCH_ABSTRACT_EXPR_H_
#define KILN_OPTIMIZER_SEARCH_ABSTRACT_EXPR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tensor/op.h"

namespace kiln::search {

using ExprId = int32_t;

struct Rational {
  int64_t num = 1;
  int64_t den = 1;  // > 0, gcd(num, den) = 1
  bool operator==(const Rational& o) const { return num == o.num && den == o.den; }
};
Rational MakeRational(int64_t num, int64_t den);  // normalized; den != 0
Rational operator*(Rational a, Rational b);

struct AbstractNode {
  enum class Kind : uint8_t {
    kInput,     // region input `index`
    kConstant,  // `value` (a constant of the program: eps, 1/n, ...)
    kAdd,       // args[0] + args[1]
    kMul,       // args[0] * args[1]
    kDiv,       // args[0] / args[1]
    kExp,       // exp(args[0])
    kSqrt,      // sqrt(args[0])
    kSum,       // sum over `size` elements of args[0]
    kOpaque,    // `fn`(args...): rsqrt, silu, max, ... (no axioms but congruence)
  };
  Kind kind = Kind::kInput;
  std::vector<ExprId> args;
  int index = 0;        // kInput
  double value = 0;     // kConstant
  Rational size;        // kSum
  OpKind fn = OpKind::kLeaf;  // kOpaque
};

class ExprPool {
 public:
  ExprId Input(int index);
  ExprId Constant(double value);
  ExprId Add(ExprId a, ExprId b);
  ExprId Sub(ExprId a, ExprId b);  // a + (-1) * b
  ExprId Neg(ExprId a);            // (-1) * a
  ExprId Mul(ExprId a, ExprId b);
  ExprId Div(ExprId a, ExprId b);
  ExprId Exp(ExprId a);
  ExprId Sqrt(ExprId a);
  ExprId Sum(Rational size, ExprId a);  // Sum(1, a) is a
  ExprId Opaque(OpKind fn, std::vector<ExprId> args);

  const AbstractNode& node(ExprId id) const { return nodes_[id]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  // e.g. "sum(4096, mul(x0, x1))".
  std::string ToString(ExprId id) const;

 private:
  ExprId Operation(AbstractNode::Kind kind, std::vector<ExprId> args);
  ExprId Intern(AbstractNode node);
  std::vector<AbstractNode> nodes_;
  absl::flat_hash_map<std::string, ExprId> index_;
};

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_ABSTRACT_EXPR_H_
