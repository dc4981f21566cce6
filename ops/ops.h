// The whole public op catalogue: include this to write model code.
#ifndef KILN_OPS_OPS_H_
#define KILN_OPS_OPS_H_

#include "ops/creation.h"     // IWYU pragma: export
#include "ops/elementwise.h"  // IWYU pragma: export
#include "ops/matmul.h"       // IWYU pragma: export
#include "ops/movement.h"     // IWYU pragma: export
#include "ops/nn.h"           // IWYU pragma: export
#include "ops/quant.h"        // IWYU pragma: export
#include "ops/reduce.h"       // IWYU pragma: export
#include "tensor/tensor.h"    // IWYU pragma: export
#include "tensor/trace.h"     // IWYU pragma: export

#endif  // KILN_OPS_OPS_H_
