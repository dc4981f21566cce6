#include "optimizer/search/abstract_check.h"
