// The code generator: one kernel of a uGraph -> CUDA C++ source that
// includes the device tile library (kiln/tiles.cuh). Views become index
// arithmetic, sizes that depend on symbols are kernel arguments, and every
// shape works (tails are predicated).
#ifndef KILN_OPTIMIZER_CODEGEN_GENERATE_H_
#define KILN_OPTIMIZER_CODEGEN_GENERATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/ugraph.h"

namespace kiln::codegen {

inline constexpr char kKernelName[] = "kiln_kernel";

struct KernelSource {
  std::string source;
  // The kernel takes one struct: { char* t[]; long long s[]; int* err; }.
  std::vector<int> slots;                  // the DTensor behind t[i]
  std::vector<const SymbolInfo*> symbols;  // the symbol behind s[i]
  int threads = 0;
  // Dynamic shared memory per block, in bytes (the launch passes it).
  int64_t dynamic_shared_bytes = 0;
  // Whether the kernel can report an error (index out of range, integer
  // division by zero) through err.
  bool reports_errors = false;
};

// Unimplemented for a block graph outside what the generator supports.
absl::StatusOr<KernelSource> GenerateKernel(const ugraph::KernelGraph& graph, int kernel);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_GENERATE_H_
