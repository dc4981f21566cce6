// A trace: the unrealized ancestors of some tensors, in topological order.
#ifndef KILN_TENSOR_TRACE_H_
#define KILN_TENSOR_TRACE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/node.h"
#include "tensor/stable_hash.h"

namespace kiln {

class Tensor;

class Trace {
 public:
  // Walks back from `outputs` to realized leaves. Fails with the first error
  // value found, or FailedPrecondition for an undefined tensor. Outputs that
  // are already realized appear as leaves.
  static absl::StatusOr<Trace> Collect(absl::Span<const Tensor> outputs);

  // Every node after its inputs; leaves (realized nodes) included. Output
  // nodes appear once even if requested twice.
  const std::vector<Node*>& nodes() const { return nodes_; }
  const std::vector<Node*>& outputs() const { return outputs_; }
  // Position of `node` in nodes(); -1 if absent.
  int IndexOf(const Node* node) const;

  // The symbols used by shapes and attributes, sorted by name.
  std::vector<Symbol> Symbols() const;

  // Structural hash: ops, attributes, dtypes, shapes (symbols by name and
  // bound), device types, the wiring, and the layout of leaves, but not leaf
  // data or symbol values. Equal for traces built by the same code on inputs
  // of the same shapes; this is the kernel-cache key.
  Hash128 StructuralHash() const;

  // One line per node: "%3 = mul f32[4,8] %1, %2".
  std::string ToText() const;
  // Graphviz DOT.
  std::string ToDot() const;

 private:
  std::vector<std::shared_ptr<Node>> roots_;  // keeps the graph alive
  std::vector<Node*> nodes_;
  std::vector<Node*> outputs_;
  absl::flat_hash_map<const Node*, int> index_;
};

}  // namespace kiln

#endif  // KILN_TENSOR_TRACE_H_
