// Emits a thread graph: one C++ statement per scalar op, evaluated at given
// iteration coordinates.
#ifndef KILN_OPTIMIZER_CODEGEN_THREAD_EMITTER_H_
#define KILN_OPTIMIZER_CODEGEN_THREAD_EMITTER_H_

#include <string>
#include <vector>

#include "optimizer/codegen/emitter.h"

namespace kiln::codegen {

class ThreadEmitter {
 public:
  // `coords`: the iteration coordinates; `accumulators`: the variables
  // holding accumulator values (row totals, or the matmul product).
  ThreadEmitter(Emitter& e, const ugraph::BlockGraph& block, std::vector<std::string> coords,
                std::vector<std::string> accumulators)
      : e_(e), block_(block), coords_(std::move(coords)), accumulators_(std::move(accumulators)) {}

  // The variable holding each op's value. With `roots`, only the ops those
  // need are emitted (the others get an empty name).
  std::vector<std::string> Emit(const ugraph::ThreadGraph& graph, const std::vector<int>* roots = nullptr);

 private:
  std::string EmitOp(const ugraph::ScalarOp& op, const std::vector<std::string>& values);
  std::string EmitGather(const ugraph::ScalarOp& op, const std::string& index);
  std::string EmitSelect(const ugraph::ScalarOp& op);
  std::string EmitDequant(const ugraph::ScalarOp& op);
  // The load/store suffix of a DTensor's storage dtype.
  std::string StorageSuffix(int tensor) const;

  Emitter& e_;
  const ugraph::BlockGraph& block_;
  std::vector<std::string> coords_;
  std::vector<std::string> accumulators_;
  const ugraph::ThreadGraph* graph_ = nullptr;
};

// The name of an op's device function: op_exp, op_add, ...
std::string OpFunction(OpKind op);
// `value` (of `dtype`) as a kernel keeps it between ops.
std::string Round(DType dtype, const std::string& value);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_THREAD_EMITTER_H_
