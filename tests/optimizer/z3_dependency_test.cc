// The optimizer proves rewrites with Z3: check the library links and answers.
#include <z3.h>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(Z3Dependency, ProvesCommutativityOfRealAddition) {
  Z3_config config = Z3_mk_config();
  Z3_context ctx = Z3_mk_context(config);
  Z3_del_config(config);
  Z3_sort real = Z3_mk_real_sort(ctx);
  Z3_ast x = Z3_mk_const(ctx, Z3_mk_string_symbol(ctx, "x"), real);
  Z3_ast y = Z3_mk_const(ctx, Z3_mk_string_symbol(ctx, "y"), real);
  Z3_ast xy[] = {x, y};
  Z3_ast yx[] = {y, x};
  Z3_ast differ = Z3_mk_not(ctx, Z3_mk_eq(ctx, Z3_mk_add(ctx, 2, xy), Z3_mk_add(ctx, 2, yx)));
  Z3_solver solver = Z3_mk_solver(ctx);
  Z3_solver_inc_ref(ctx, solver);
  Z3_solver_assert(ctx, solver, differ);
  EXPECT_EQ(Z3_solver_check(ctx, solver), Z3_L_FALSE);
  Z3_solver_dec_ref(ctx, solver);
  Z3_del_context(ctx);
}

}  // namespace
}  // namespace kiln
