#include "optimizer/search/abstract_expr.h"
