#include "ops/record.h"

#include "absl/strings/str_cat.h"
#include "ops/cpu/cpu_executor.h"

namespace kiln::ops_internal {
namespace {

absl::Status CheckOne(absl::string_view op, const Tensor& t, const Device& device) {
  if (!t.defined()) {
    return absl::FailedPreconditionError(
        absl::StrCat(op, ": an input is an undefined (default-constructed) Tensor"));
  }
  if (!t.ok()) return t.status();
  if (!(t.device() == device)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": inputs are on different devices (",
                                                   device.ToString(), " and ",
                                                   t.device().ToString(), ")"));
  }
  return absl::OkStatus();
}

Tensor RecordNode(OpKind op, OpAttrs attrs, std::vector<Tensor> inputs, DType dtype,
                  Shape shape, Device device) {
  if (absl::Status s = shape.Validate(OpName(op)); !s.ok()) return Tensor::Error(s);
  // Any op may end up realized on the CPU, so the reference executor must be
  // registered by the time a node exists.
  cpu::EnsureCpuExecutorRegistered();
  auto node = std::make_shared<Node>();
  node->op = op;
  node->attrs = std::move(attrs);
  node->inputs.reserve(inputs.size());
  for (Tensor& t : inputs) node->inputs.push_back(t.node());
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->device = device;
  return Tensor(std::move(node));
}

}  // namespace

absl::Status CheckInputs(absl::string_view op, std::initializer_list<const Tensor*> inputs) {
  const Device device = (*inputs.begin())->device();
  for (const Tensor* t : inputs) {
    if (absl::Status s = CheckOne(op, *t, device); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckInputs(absl::string_view op, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) return absl::InvalidArgumentError(absl::StrCat(op, ": no inputs"));
  const Device device = inputs.front().device();
  for (const Tensor& t : inputs) {
    if (absl::Status s = CheckOne(op, t, device); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Tensor Record(OpKind op, OpAttrs attrs, std::vector<Tensor> inputs, DType dtype, Shape shape) {
  const Device device = inputs.front().device();
  return RecordNode(op, std::move(attrs), std::move(inputs), dtype, std::move(shape), device);
}

Tensor RecordOnDevice(OpKind op, std::vector<Tensor> inputs, DType dtype, Shape shape,
                      Device device) {
  return RecordNode(op, NoAttrs{}, std::move(inputs), dtype, std::move(shape), device);
}

Tensor RecordSource(OpKind op, OpAttrs attrs, DType dtype, Shape shape, Device device) {
  return RecordNode(op, std::move(attrs), {}, dtype, std::move(shape), device);
}

std::string Describe(const Tensor& t) {
  return absl::StrCat(DTypeName(t.dtype()), t.shape().ToString());
}

}  // namespace kiln::ops_internal
