#include "tensor/node.h"

namespace kiln {

Node::~Node() {
  // The outermost destructor on this thread drains a worklist; nested ones
  // (triggered by dropping a list entry) only append their inputs to it.
  static thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  if (pending != nullptr) {
    for (auto& input : inputs) pending->push_back(std::move(input));
    return;
  }
  std::vector<std::shared_ptr<Node>> worklist = std::move(inputs);
  pending = &worklist;
  while (!worklist.empty()) {
    std::shared_ptr<Node> next = std::move(worklist.back());
    worklist.pop_back();
    next.reset();
  }
  pending = nullptr;
}

}  // namespace kiln
