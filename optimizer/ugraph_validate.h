// Structural validation of a uGraph: every reference resolves, shapes agree
// with what each kernel kind implies, and resources fit the device.
#ifndef KILN_OPTIMIZER_UGRAPH_VALIDATE_H_
#define KILN_OPTIMIZER_UGRAPH_VALIDATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "optimizer/ugraph.h"

namespace kiln::ugraph {

struct DeviceLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_memory_per_block = 227 * 1024;  // the opt-in limit on Hopper
};

// Shared memory a block of this graph uses, in bytes (static + dynamic); for
// a tiled block, a bound: a buffer per tile (the code generator plans less).
int64_t SharedMemoryBytes(const BlockGraph& block);

// InvalidArgument describing the first problem found.
absl::Status Validate(const KernelGraph& graph, const DeviceLimits& limits = {});

}  // namespace kiln::ugraph

#endif  // KILN_OPTIMIZER_UGRAPH_VALIDATE_H_
