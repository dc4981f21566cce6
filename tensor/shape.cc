#include "tensor/shape.h"

#include "absl/strings/str_cat.h"
#include "tensor/check.h"

namespace kiln {

Shape Shape::FromExtents(absl::Span<const int64_t> sizes) {
  Shape shape;
  for (int64_t s : sizes) shape.push_back(Dim(s));
  return shape;
}

bool Shape::is_concrete() const {
  for (const Dim& d : dims_) {
    if (!d.is_concrete()) return false;
  }
  return true;
}

Extents Shape::extents() const {
  Extents out;
  for (const Dim& d : dims_) out.push_back(d.value());
  return out;
}

absl::StatusOr<Extents> Shape::Evaluate(const Bindings& bindings) const {
  Extents out;
  for (const Dim& d : dims_) {
    absl::StatusOr<int64_t> v = d.Evaluate(bindings);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

int64_t Shape::num_elements() const { return NumElements(extents()); }

int64_t Shape::max_elements() const {
  for (const Dim& d : dims_) {
    if (d.max_value() == 0) return 0;
  }
  __int128 n = 1;
  for (const Dim& d : dims_) {
    n *= d.max_value();
    if (n > INT64_MAX) return INT64_MAX;
  }
  return static_cast<int64_t>(n);
}

absl::Status Shape::Validate(absl::string_view op) const {
  if (rank() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": shape ", ToString(), " has rank ",
                                                   rank(), "; kiln supports at most ",
                                                   kMaxRank));
  }
  for (int i = 0; i < rank(); ++i) {
    if (absl::Status s = dims_[i].Validate("dimension"); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": shape ", ToString(), ", axis ", i, ": ", s.message()));
    }
  }
  if (max_elements() > kMaxElements) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": shape ", ToString(), " can hold ",
                                                   max_elements(), " elements; the limit is ",
                                                   kMaxElements));
  }
  return absl::OkStatus();
}

std::string Shape::ToString() const {
  std::string out = "[";
  for (int i = 0; i < rank(); ++i) {
    if (i > 0) out += ",";
    out += dims_[i].ToString();
  }
  return out + "]";
}

void Shape::Hash(StableHasher& hasher) const {
  hasher.Add(rank());
  for (const Dim& d : dims_) d.Hash(hasher);
}

Extents ContiguousStrides(absl::Span<const int64_t> sizes) {
  Extents strides(sizes.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= sizes[i];
  }
  return strides;
}

int64_t NumElements(absl::Span<const int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

absl::StatusOr<int> NormalizeAxis(int axis, int rank, absl::string_view op) {
  const int normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": axis ", axis,
                                                   " is out of range for rank ", rank,
                                                   " (valid: ", -rank, " to ", rank - 1, ")"));
  }
  return normalized;
}

}  // namespace kiln
