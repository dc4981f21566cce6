// A node of a trace: one recorded operation, or a realized value (a leaf).
#ifndef KILN_TENSOR_NODE_H_
#define KILN_TENSOR_NODE_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/op.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace kiln {

struct Node {
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the input chain iteratively: a trace thousands of ops deep must
  // not overflow the stack when it is dropped.
  ~Node();

  OpKind op = OpKind::kLeaf;
  OpAttrs attrs;
  std::vector<std::shared_ptr<Node>> inputs;
  DType dtype = DType::kF32;
  Shape shape;
  Device device;

  // Set once realized, when op is kLeaf: the value, with concrete sizes.
  TensorData data;
  // Non-OK for an error value: an op that was given bad arguments records the
  // error here and every op downstream passes it on, up to realize().
  absl::Status error;

  bool is_realized() const { return data.storage != nullptr; }
};

}  // namespace kiln

#endif  // KILN_TENSOR_NODE_H_
