// Matmul kernels: a tiled SIMT kernel (f32, integers) and a tensor-core
// kernel (mma.sync, f16/bf16 with f32 accumulation), both reading A and B
// through their views and running the epilogue thread graph per element.
#ifndef KILN_OPTIMIZER_CODEGEN_MATMUL_GEN_H_
#define KILN_OPTIMIZER_CODEGEN_MATMUL_GEN_H_

#include "absl/status/status.h"
#include "optimizer/codegen/emitter.h"

namespace kiln::codegen {

absl::Status GenerateMatmul(Emitter& e, const ugraph::BlockGraph& block);

// The dim of `view` along which consecutive elements are adjacent in memory,
// or -1 when that is unknown.
int ContiguousDim(const ugraph::KernelGraph& graph, const ugraph::View& view);

// Whether reshaping `in` to `out` only adds or drops size-1 axes (an
// unsqueeze): the other axes keep their order, sizes and strides.
bool ReshapesUnitAxesOnly(const Shape& in, const Shape& out);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_MATMUL_GEN_H_
