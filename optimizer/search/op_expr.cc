#include "optimizer/search/op_expr.h"

namespace kiln::search {

ExprId UnaryExpr(ExprPool& pool, OpKind op, ExprId x) {
  switch (op) {
    case OpKind::kNeg: return pool.Neg(x);
    case OpKind::kSquare: return pool.Mul(x, x);
    case OpKind::kRecip: return pool.Div(pool.Constant(1), x);
    case OpKind::kExp: return pool.Exp(x);
    case OpKind::kSqrt: return pool.Sqrt(x);
    default: return pool.Opaque(op, {x});
  }
}

ExprId BinaryExpr(ExprPool& pool, OpKind op, ExprId a, ExprId b) {
  switch (op) {
    case OpKind::kAdd: return pool.Add(a, b);
    case OpKind::kSub: return pool.Sub(a, b);
    case OpKind::kMul: return pool.Mul(a, b);
    case OpKind::kDiv: return pool.Div(a, b);
    default: return pool.Opaque(op, {a, b});
  }
}

}  // namespace kiln::search
