// Internal to ops/: recording a node, and the checks every builder shares.
#ifndef KILN_OPS_RECORD_H_
#define KILN_OPS_RECORD_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tensor/op.h"
#include "tensor/tensor.h"

namespace kiln::ops_internal {

// OK if every input is a defined, non-error tensor and all share a device.
// Otherwise the first input's error as it is (so the root cause surfaces), or
// a new error naming `op`.
absl::Status CheckInputs(absl::string_view op, std::initializer_list<const Tensor*> inputs);
absl::Status CheckInputs(absl::string_view op, const std::vector<Tensor>& inputs);

// Records a node after validating its result shape. Inputs must have passed
// CheckInputs. `device` defaults to the first input's.
Tensor Record(OpKind op, OpAttrs attrs, std::vector<Tensor> inputs, DType dtype, Shape shape);
Tensor RecordSource(OpKind op, OpAttrs attrs, DType dtype, Shape shape, Device device);
// A node on `device` whose inputs live elsewhere (a transfer).
Tensor RecordOnDevice(OpKind op, std::vector<Tensor> inputs, DType dtype, Shape shape,
                      Device device);

// "f32[2,3]" for messages.
std::string Describe(const Tensor& t);

}  // namespace kiln::ops_internal

// Returns an error Tensor from the enclosing builder if `expr` is not OK.
#define KILN_RETURN_IF_ERROR_TENSOR(expr)                \
  do {                                                   \
    if (::absl::Status _kiln_s = (expr); !_kiln_s.ok()) { \
      return ::kiln::Tensor::Error(std::move(_kiln_s));  \
    }                                                    \
  } while (false)

#endif  // KILN_OPS_RECORD_H_
