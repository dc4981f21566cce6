// Tensor: a cheap, copyable handle to a node of a lazy trace.
//
// Ops (in ops/) only record nodes. realize(), to_host() and item() run the
// unrealized ancestors through the executor of the tensor's device; the
// realized node then becomes a leaf of any later trace.
//
// Errors are values: an op given bad arguments returns an error Tensor whose
// status() names the op and the shapes; ops downstream pass it on unchanged,
// and realize()/to_host() return it. Nothing aborts or throws on bad input.
#ifndef KILN_TENSOR_TENSOR_H_
#define KILN_TENSOR_TENSOR_H_

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "tensor/dim.h"
#include "tensor/dtype.h"
#include "tensor/node.h"
#include "tensor/shape.h"

namespace kiln {

class Tensor {
 public:
  // An undefined tensor: every op on it, and realize(), fail with
  // FailedPrecondition.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  static Tensor Error(absl::Status status);

  // A realized CPU tensor holding a copy of `values` (row-major).
  template <typename T>
  static Tensor FromHost(absl::Span<const T> values, absl::Span<const int64_t> sizes) {
    return FromHostBytes(DTypeOf<T>::value, sizes, values.data(), values.size() * sizeof(T));
  }
  // As FromHost, taking ownership of `values` instead of copying them.
  template <typename T>
  static Tensor FromVector(std::vector<T> values, absl::Span<const int64_t> sizes) {
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed
      std::vector<uint8_t> bytes(values.begin(), values.end());
      return FromHostBytes(DType::kBool, sizes, bytes.data(), bytes.size());
    } else {
      auto owner = std::make_shared<std::vector<T>>(std::move(values));
      return WrapHost(DTypeOf<T>::value, sizes, owner->data(), owner->size() * sizeof(T),
                      owner, /*writable=*/true);
    }
  }
  static Tensor FromHostBytes(DType dtype, absl::Span<const int64_t> sizes, const void* data,
                              size_t bytes);
  // A realized CPU tensor over memory owned by `owner` (kept alive as long as
  // the tensor), without a copy. Read-only memory is never written.
  static Tensor WrapHost(DType dtype, absl::Span<const int64_t> sizes, const void* data,
                         size_t bytes, std::shared_ptr<const void> owner, bool writable);

  bool defined() const { return node_ != nullptr; }
  bool ok() const { return node_ != nullptr && node_->error.ok(); }
  absl::Status status() const;

  // Metadata of an ok tensor; an error or undefined tensor reports f32[] on
  // the CPU.
  const Shape& shape() const;
  int rank() const { return shape().rank(); }
  DType dtype() const;
  Device device() const;
  bool is_realized() const { return ok() && node_->is_realized(); }

  // Computes this tensor (if it is not already), with `bindings` giving the
  // values of the symbols in its trace.
  absl::Status realize(const Bindings& bindings = {}) const;

  // The elements in row-major order, realizing first. T must hold every value
  // of the dtype exactly (e.g. float for f16); otherwise InvalidArgument.
  template <typename T>
  absl::StatusOr<std::vector<T>> to_host(const Bindings& bindings = {}) const {
    absl::StatusOr<int64_t> count = ElementCount(bindings);
    if (!count.ok()) return count.status();
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed
      std::vector<uint8_t> bytes(static_cast<size_t>(*count));
      absl::Status s = CopyToHost(DType::kBool, bytes.data(), *count, bindings);
      if (!s.ok()) return s;
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<size_t>(*count));
      absl::Status s = CopyToHost(DTypeOf<T>::value, out.data(), *count, bindings);
      if (!s.ok()) return s;
      return out;
    }
  }
  // The single element of a tensor with one element.
  template <typename T>
  absl::StatusOr<T> item(const Bindings& bindings = {}) const {
    absl::StatusOr<int64_t> count = ElementCount(bindings);
    if (!count.ok()) return count.status();
    if (*count != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item: tensor ", ToString(), " has ", *count, " elements; item() needs exactly 1"));
    }
    T out{};
    absl::Status s = CopyToHost(DTypeOf<T>::value, &out, 1, bindings);
    if (!s.ok()) return s;
    return out;
  }
  // Realizes, then writes the `count` elements converted to `as` into `dst`.
  absl::Status CopyToHost(DType as, void* dst, int64_t count, const Bindings& bindings) const;

  // "f32[2,3] cpu lazy", "bf16[pos+1,64] cpu realized", "error: ...".
  std::string ToString() const;

  const std::shared_ptr<Node>& node() const { return node_; }

 private:
  absl::StatusOr<int64_t> ElementCount(const Bindings& bindings) const;
  std::shared_ptr<Node> node_;
};

// Realizes several tensors together, so shared work is done once.
absl::Status RealizeAll(absl::Span<const Tensor> tensors, const Bindings& bindings = {});

}  // namespace kiln

#endif  // KILN_TENSOR_TENSOR_H_
