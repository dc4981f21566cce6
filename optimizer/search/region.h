// A region of a trace as the search sees it: a shape-generic program over
// the region's inputs, in the ops the search understands (elementwise,
// sum/mean reductions, matmul, permute, a softmax's max-stabilized exp;
// float casts are dropped since tiles
// compute in f32), with every axis assigned a dim class: axes that must have
// equal sizes (matmul's contracted axes, broadcast partners) share a class.
// Classes let the verifier run a candidate at small sizes that keep its
// tiling structure, and give the search the dims it may map to the grid and
// the for-loop.
#ifndef KILN_OPTIMIZER_SEARCH_REGION_H_
#define KILN_OPTIMIZER_SEARCH_REGION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizer/search/abstract_expr.h"
#include "optimizer/ugraph.h"
#include "tensor/node.h"
#include "tensor/tensor.h"

namespace kiln::search {

struct RegionOp {
  // kStableExp: exp(x - max(x, axes, keepdim)) of args[0], as softmax
  // writes it; the max is a shift the algebra treats as arbitrary
  // (algebra.h), so its abstract expression is exp(x). With a causal
  // `mask` (its axes the op's own; its keys the max's one axis), masked
  // elements are out of the max and give 0: softmax of where(mask, x,
  // -inf), whose abstract expression is M exp(x), M an input of its own
  // (StableExpExpr).
  enum class Kind : uint8_t { kInput, kConstant, kUnary, kBinary, kReduce, kMatmul, kPermute, kStableExp };
  Kind kind = Kind::kInput;
  OpKind op = OpKind::kLeaf;  // kUnary, kBinary; kReduce: kReduceSum or kReduceMean
  std::vector<int> args;      // earlier ops
  int input = -1;             // kInput
  double value = 0;           // kConstant
  std::vector<int> axes;      // kReduce, kStableExp: reduced axes (sorted); kPermute: the permutation
  bool keepdim = false;       // kReduce
  std::vector<int> classes;   // the dim class of each axis of the result
  ugraph::CausalMask mask;    // kStableExp
};

struct Region {
  std::vector<RegionOp> ops;  // topological; the last is the output
  std::vector<const Node*> inputs;
  std::vector<DType> input_dtypes;
  // By input: its axes from the slowest- to the fastest-varying in memory,
  // where a realized input is not row-major (the model's weights, realized
  // transposed); empty: row-major. The kernels are timed, and the cache
  // keyed, with the layout the region will read.
  std::vector<std::vector<int>> input_layouts;
  std::vector<Dim> class_size;       // by class
  std::vector<bool> class_reduced;   // summed over somewhere (matmul or reduction)
  const Node* output = nullptr;
  DType output_dtype = DType::kF32;
  // The trace nodes the region computes (output included; inputs not).
  std::vector<const Node*> nodes;

  int output_op() const { return static_cast<int>(ops.size()) - 1; }
  // The concrete size of every class with `sizes` (by class) substituted.
  std::vector<int64_t> Shape(int op, const std::vector<int64_t>& sizes) const;
  // The shape of input #`input` at those sizes.
  std::vector<int64_t> InputShape(int input, const std::vector<int64_t>& sizes) const;
  std::string ToString() const;
};

// The region computing `output`, walking back through the ops the search
// understands; a node where `is_boundary` holds, a realized leaf, or an op
// outside that set becomes an input. Unimplemented when the output itself is
// not searchable or the region has no matmul or reduction worth searching.
absl::StatusOr<Region> ExtractRegion(const Node* output,
                                     const std::function<bool(const Node*)>& is_boundary);

// The region's ops recorded again with kiln's ops on `inputs` (by region
// input; any device), float casts left out: the CPU reference for the
// floating-point check, and the default lowering's version of the region.
Tensor ReplayRegion(const Region& region, const std::vector<Tensor>& inputs);

// The abstract expression of each op (by op index), at the region's real
// sizes. Ops marked in `atoms` (by op; empty: none) are opaque: each is a
// fresh input of its own, numbered after the region's inputs.
std::vector<ExprId> RegionExpressions(const Region& region, ExprPool& pool, const std::vector<bool>& atoms = {});

// The abstract expression of a stable exp of x: exp(x), the shift dropped
// (algebra.h); under a causal mask M exp(x), M an input of its own.
ExprId StableExpExpr(ExprPool& pool, ExprId x, const ugraph::CausalMask& mask);

// The abstract expression of sum over `n` elements; a class of symbolic size
// counts with its upper bound.
int64_t NominalSize(const Dim& d);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_REGION_H_
