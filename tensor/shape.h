// Shapes: up to kMaxRank dimensions, each concrete or symbolic.
#ifndef KILN_TENSOR_SHAPE_H_
#define KILN_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/dim.h"

namespace kiln {

inline constexpr int kMaxRank = 6;

// The largest element count a tensor may have (so byte sizes fit in int64).
inline constexpr int64_t kMaxElements = int64_t{1} << 48;

// Concrete sizes or strides, as the executors see them.
using Extents = absl::InlinedVector<int64_t, kMaxRank>;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const Dim> dims) : dims_(dims.begin(), dims.end()) {}
  static Shape FromExtents(absl::Span<const int64_t> sizes);

  int rank() const { return static_cast<int>(dims_.size()); }
  const Dim& operator[](int axis) const { return dims_[axis]; }
  Dim& operator[](int axis) { return dims_[axis]; }
  absl::Span<const Dim> dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  void push_back(Dim d) { dims_.push_back(std::move(d)); }
  void insert(int axis, Dim d) { dims_.insert(dims_.begin() + axis, std::move(d)); }
  void erase(int axis) { dims_.erase(dims_.begin() + axis); }

  bool is_concrete() const;
  // The sizes of a concrete shape; CHECK-fails on a symbolic one.
  Extents extents() const;
  absl::StatusOr<Extents> Evaluate(const Bindings& bindings) const;
  // Element count of a concrete shape; CHECK-fails on a symbolic one.
  int64_t num_elements() const;
  // Element count with every symbol at its upper bound.
  int64_t max_elements() const;

  // Rank within kMaxRank, every dim valid, element count within kMaxElements.
  // `op` names the operation in the message.
  absl::Status Validate(absl::string_view op) const;

  std::string ToString() const;  // "[2,pos+1,64]"
  void Hash(StableHasher& hasher) const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }

 private:
  absl::InlinedVector<Dim, kMaxRank> dims_;
};

// Row-major strides, in elements, of dense `sizes`.
Extents ContiguousStrides(absl::Span<const int64_t> sizes);
int64_t NumElements(absl::Span<const int64_t> sizes);

// Maps a possibly negative axis into [0, rank); InvalidArgument naming `op` if
// it is out of range.
absl::StatusOr<int> NormalizeAxis(int axis, int rank, absl::string_view op);

}  // namespace kiln

#endif  // KILN_TENSOR_SHAPE_H_
