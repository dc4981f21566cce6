// The abstract expression of one elementwise op: the algebra's own
// operations where there is one (add, sub, mul, div, neg, square, recip,
// exp, sqrt), an opaque function otherwise. One definition for regions and
// candidates alike, so the two are compared in the same terms.
#ifndef KILN_OPTIMIZER_SEARCH_OP_EXPR_H_
#define KILN_OPTIMIZER_SEARCH_OP_EXPR_H_

#include "optimizer/search/abstract_expr.h"

namespace kiln::search {

ExprId UnaryExpr(ExprPool& pool, OpKind op, ExprId x);
ExprId BinaryExpr(ExprPool& pool, OpKind op, ExprId a, ExprId b);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_OP_EXPR_H_
