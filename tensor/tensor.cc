#include "tensor/tensor.h"

#include <cstring>
#include <vector>

#include "tensor/convert.h"
#include "tensor/executor.h"

namespace kiln {
namespace {

const Shape& EmptyShape() {
  static const Shape* shape = new Shape();
  return *shape;
}

absl::Status ValidateHostSizes(absl::string_view op, DType dtype,
                               absl::Span<const int64_t> sizes, size_t bytes) {
  for (int64_t s : sizes) {
    if (s < 0 || s > kMaxDimValue) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": size ", s, " in ", Shape::FromExtents(sizes).ToString(),
          " is negative or too large"));
    }
  }
  const Shape shape = Shape::FromExtents(sizes);
  if (absl::Status s = shape.Validate(op); !s.ok()) return s;
  const size_t expected = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (bytes != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": ", DTypeName(dtype), shape.ToString(), " needs ", expected, " bytes of data, got ",
        bytes));
  }
  return absl::OkStatus();
}

Tensor MakeLeaf(DType dtype, absl::Span<const int64_t> sizes, std::shared_ptr<Storage> storage) {
  auto node = std::make_shared<Node>();
  node->op = OpKind::kLeaf;
  node->dtype = dtype;
  node->shape = Shape::FromExtents(sizes);
  node->device = storage->device();
  node->data.storage = std::move(storage);
  node->data.sizes.assign(sizes.begin(), sizes.end());
  node->data.strides = ContiguousStrides(sizes);
  return Tensor(std::move(node));
}

}  // namespace

Tensor Tensor::Error(absl::Status status) {
  auto node = std::make_shared<Node>();
  node->error = status.ok() ? absl::InternalError("Tensor::Error called with an OK status")
                            : std::move(status);
  return Tensor(std::move(node));
}

Tensor Tensor::FromHostBytes(DType dtype, absl::Span<const int64_t> sizes, const void* data,
                             size_t bytes) {
  if (absl::Status s = ValidateHostSizes("FromHost", dtype, sizes, bytes); !s.ok()) {
    return Error(s);
  }
  if (bytes > 0 && data == nullptr) {
    return Error(absl::InvalidArgumentError("FromHost: data is null"));
  }
  absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::AllocateHost(bytes);
  if (!storage.ok()) return Error(storage.status());
  if (bytes > 0) std::memcpy((*storage)->data(), data, bytes);
  return MakeLeaf(dtype, sizes, *std::move(storage));
}

Tensor Tensor::WrapHost(DType dtype, absl::Span<const int64_t> sizes, const void* data,
                        size_t bytes, std::shared_ptr<const void> owner, bool writable) {
  if (absl::Status s = ValidateHostSizes("WrapHost", dtype, sizes, bytes); !s.ok()) {
    return Error(s);
  }
  if (bytes > 0 && data == nullptr) {
    return Error(absl::InvalidArgumentError("WrapHost: data is null"));
  }
  if (reinterpret_cast<uintptr_t>(data) % DTypeSize(dtype) != 0) {
    return Error(absl::InvalidArgumentError(absl::StrCat(
        "WrapHost: data for ", DTypeName(dtype), " is not aligned to ", DTypeSize(dtype),
        " bytes")));
  }
  std::shared_ptr<Storage> storage;
  if (writable) {
    storage = std::make_shared<Storage>(Device::Cpu(), const_cast<void*>(data), bytes,
                                        /*writable=*/true, [owner = std::move(owner)](void*) {});
  } else {
    storage = Storage::WrapReadOnlyHost(data, bytes, std::move(owner));
  }
  return MakeLeaf(dtype, sizes, std::move(storage));
}

absl::Status Tensor::status() const {
  if (node_ == nullptr) {
    return absl::FailedPreconditionError("undefined (default-constructed) Tensor");
  }
  return node_->error;
}

const Shape& Tensor::shape() const { return ok() ? node_->shape : EmptyShape(); }
DType Tensor::dtype() const { return ok() ? node_->dtype : DType::kF32; }
Device Tensor::device() const { return ok() ? node_->device : Device::Cpu(); }

absl::Status Tensor::realize(const Bindings& bindings) const {
  return RealizeAll({*this}, bindings);
}

absl::StatusOr<int64_t> Tensor::ElementCount(const Bindings& bindings) const {
  if (!ok()) return status();
  absl::StatusOr<Extents> sizes = node_->shape.Evaluate(bindings);
  if (!sizes.ok()) return sizes.status();
  return NumElements(*sizes);
}

absl::Status Tensor::CopyToHost(DType as, void* dst, int64_t count,
                                const Bindings& bindings) const {
  if (absl::Status s = realize(bindings); !s.ok()) return s;
  const DType dtype = node_->dtype;
  if (!IsLosslessConversion(dtype, as)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "to_host: tensor ", ToString(), " holds ", DTypeName(dtype),
        " values, which do not all fit in ", DTypeName(as),
        "; read it as its own type or cast() it first"));
  }
  const TensorData& data = node_->data;
  if (count != data.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("to_host: tensor ", ToString(), " has ",
                                                   data.num_elements(), " elements, not ", count));
  }
  std::vector<char> dense;
  void* dense_dst = dst;
  if (dtype != as) {
    dense.resize(static_cast<size_t>(count) * DTypeSize(dtype));
    dense_dst = dense.data();
  }
  if (data.storage->device().type == DeviceType::kCpu) {
    CopyStridedToDense(data, DTypeSize(dtype), dense_dst);
  } else {
    std::shared_ptr<Executor> executor = FindExecutor(data.storage->device().type);
    if (executor == nullptr) {
      return absl::UnavailableError(absl::StrCat("to_host: no executor for device ",
                                                 data.storage->device().ToString()));
    }
    if (absl::Status s = executor->CopyToHost(data, dtype, dense_dst); !s.ok()) return s;
  }
  if (dtype != as) ConvertElements(dtype, dense.data(), as, dst, count);
  return absl::OkStatus();
}

std::string Tensor::ToString() const {
  if (node_ == nullptr) return "undefined";
  if (!node_->error.ok()) return absl::StrCat("error: ", node_->error.message());
  return absl::StrCat(DTypeName(node_->dtype), node_->shape.ToString(), " ",
                      node_->device.ToString(), node_->is_realized() ? " realized" : " lazy");
}

}  // namespace kiln
