// Cutting a trace into groups, each of which becomes one kernel under the
// default rules:
//   - elementwise ops (and the data movement ops concat, index_select,
//     slice_update, contiguous) fuse into one pointwise kernel per output
//     shape; views and sources (constants, iota, random) are folded into the
//     reads of whatever uses them;
//   - a reduction joins its elementwise producers and consumers over the same
//     row structure in one row kernel (rms_norm, softmax: one kernel each);
//   - a matmul is a tiled kernel with its elementwise consumers fused as an
//     epilogue.
// A node is materialized (gets a buffer) when another group reads it, when
// the trace outputs it, or when its reader needs a buffer (matmul operands,
// gather and concat sources). A dequantized weight that only products read
// gets none: they decode its blocks as they load them.
#ifndef KILN_OPTIMIZER_PARTITION_H_
#define KILN_OPTIMIZER_PARTITION_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "tensor/trace.h"

namespace kiln::lowering {

enum class GroupKind {
  kPointwise,
  kRowReduce,
  kMatmul,
  kInPlaceUpdate,  // slice_update written into its destination's buffer
  kFused,          // a region the superoptimizer replaced: one searched kernel
};

struct Group {
  GroupKind kind = GroupKind::kPointwise;
  std::vector<const Node*> members;  // in trace order
  const Node* anchor = nullptr;      // the matmul, the first reduction, the update
  Shape space;                       // the iteration space (row: the reduced input's shape)
  std::vector<int> reduced_axes;     // kRowReduce
};

struct PartitionOptions {
  // slice_update nodes whose destination buffer may be overwritten.
  absl::flat_hash_set<const Node*> in_place_updates;
  // Nodes to materialize regardless of the rules (used to retry a lowering
  // that found a fusion it cannot express).
  absl::flat_hash_set<const Node*> force_materialize;
  // Regions computed by searched kernels: root -> the region's input nodes
  // (which get buffers); `fused_interior` are the nodes inside them, which
  // no group computes.
  absl::flat_hash_map<const Node*, std::vector<const Node*>> fused;
  absl::flat_hash_set<const Node*> fused_interior;
};

struct Partition {
  std::vector<Group> groups;  // in an order that respects their dependencies
  absl::flat_hash_map<const Node*, int> group_of;
  // Computed nodes that get a buffer (leaves always have one).
  absl::flat_hash_set<const Node*> materialized;
  // Dequantize nodes that no group computes: every use is a product's second
  // operand, which decodes the packed blocks (a buffer) where it loads them.
  // The lowering forces one to materialize where its product cannot.
  absl::flat_hash_set<const Node*> decoded_in_loads;
};

// The node a chain of views starts from.
const Node* ThroughViews(const Node* node);
// Whether the views between `node` and ThroughViews(node) include a reshape.
bool ChainHasReshape(const Node* node);
// Whether the partition may recompute `node` wherever it is read instead of
// giving it a buffer: a source, or elementwise ops on nothing but such
// values (a causal mask from two iotas). It does unless the node is an
// output or forced to materialize.
bool RecomputedWhereRead(const Node* node);

Partition PartitionTrace(const Trace& trace, const PartitionOptions& options);

}  // namespace kiln::lowering

#endif  // KILN_OPTIMIZER_PARTITION_H_
