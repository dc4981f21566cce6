#include "optimizer/search/finite_field.h"
