#include "optimizer/search/interpret.h"

#include <algorithm>

namespace kiln::search::interpret_internal {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t BroadcastOffset(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& strides) {
  const size_t lead = coords.size() - shape.size();
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1) off += coords[lead + d] * strides[d];
  }
  return off;
}

std::vector<int64_t> BroadcastShape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t y = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = x == 1 ? y : x;
  }
  return out;
}

std::vector<int64_t> TileShape(const ugraph::TileInfo& t) {
  std::vector<int64_t> s;
  for (const ugraph::TileAxis& a : t.axes) s.push_back(a.size);
  return s;
}

absl::StatusOr<int64_t> ViewOffset(const ugraph::View& view, const std::vector<int64_t>& tensor_shape,
                                   const std::vector<int64_t>& coords) {
  std::vector<int64_t> c = coords;
  for (size_t i = view.steps.size(); i-- > 0;) {
    const ugraph::ViewStep* step = &view.steps[i];
    switch (step->kind) {
      case ugraph::ViewStep::Kind::kExpand: {
        // Leading axes added, size-1 axes broadcast: both read coordinate 0.
        const Shape& in_shape = i > 0 ? view.steps[i - 1].shape : view.source_shape;
        const size_t lead = c.size() - static_cast<size_t>(in_shape.rank());
        std::vector<int64_t> in(c.begin() + static_cast<std::ptrdiff_t>(lead), c.end());
        for (size_t d = 0; d < in.size(); ++d) {
          if (in_shape[static_cast<int>(d)] == Dim(1)) in[d] = 0;
        }
        c = std::move(in);
        break;
      }
      case ugraph::ViewStep::Kind::kPermute: {
        std::vector<int64_t> in(c.size());
        for (size_t i = 0; i < step->perm.size(); ++i) in[step->perm[i]] = c[i];
        c = std::move(in);
        break;
      }
      case ugraph::ViewStep::Kind::kReshape: {
        // Row-major order kept: the coordinates' linear index, unravelled
        // over the shape before. Strided where the reshape is the view's
        // first step (of the tensor itself) or only adds or drops size-1
        // axes (a part's output read by the next part of a factored region).
        const Shape& in_shape = i > 0 ? view.steps[i - 1].shape : view.source_shape;
        std::vector<int64_t> in_sizes, out_sizes;
        for (const Shape* shape : {&in_shape, &step->shape}) {
          for (const Dim& d : *shape) {
            if (!d.is_concrete()) return absl::UnimplementedError("interpreter: a reshape of symbolic sizes");
            (shape == &in_shape ? in_sizes : out_sizes).push_back(d.value());
          }
        }
        const auto non_unit = [](std::vector<int64_t> sizes) {
          sizes.erase(std::remove(sizes.begin(), sizes.end(), int64_t{1}), sizes.end());
          return sizes;
        };
        if (i > 0 && non_unit(in_sizes) != non_unit(out_sizes)) {
          return absl::UnimplementedError("interpreter: a reshape after other view steps that regroups axes");
        }
        const std::vector<int64_t> out_strides = RowMajorStrides(out_sizes);
        int64_t linear = 0;
        for (size_t d = 0; d < c.size(); ++d) linear += c[d] * out_strides[d];
        std::vector<int64_t> in(in_sizes.size());
        for (size_t d = in.size(); d-- > 0;) {
          in[d] = linear % in_sizes[d];
          linear /= in_sizes[d];
        }
        c = std::move(in);
        break;
      }
      default:
        return absl::UnimplementedError("interpreter: only permuting, expanding and reshaping views");
    }
  }
  const auto strides = RowMajorStrides(tensor_shape);
  int64_t off = 0;
  for (size_t d = 0; d < c.size(); ++d) off += c[d] * strides[d];
  return off;
}

absl::StatusOr<std::vector<int64_t>> ViewStrides(const ugraph::View& view, const std::vector<int64_t>& tensor_shape,
                                                 size_t rank) {
  std::vector<int64_t> unit(rank, 0), strides(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    unit[d] = 1;
    absl::StatusOr<int64_t> off = ViewOffset(view, tensor_shape, unit);
    if (!off.ok()) return off.status();
    strides[d] = *off;
    unit[d] = 0;
  }
  return strides;
}

}  // namespace kiln::search::interpret_internal
