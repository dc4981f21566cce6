#include "optimizer/search/interpret.h"

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
      default:
        return absl::UnimplementedError("interpreter: only permuting and expanding views");
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
