#include "ops/view_layout.h"

#include <variant>

#include "absl/strings/str_cat.h"

namespace kiln {

// Strides that let `sizes` view the same elements as (old_sizes, old_strides),
// or nullopt when the old layout cannot be walked that way without a copy.
std::optional<Extents> ReshapeStrides(const Extents& old_sizes, const Extents& old_strides,
                                      const Extents& sizes) {
  if (NumElements(sizes) == 0) return ContiguousStrides(sizes);
  Extents od, os;
  for (size_t i = 0; i < old_sizes.size(); ++i) {
    if (old_sizes[i] == 1) continue;
    od.push_back(old_sizes[i]);
    os.push_back(old_strides[i]);
  }
  Extents strides(sizes.size(), 1);
  size_t oi = 0, ni = 0;
  while (ni < sizes.size() && oi < od.size()) {
    if (sizes[ni] == 1) {
      ++ni;
      continue;
    }
    // Grow a chunk of old and new dims until their element counts agree.
    size_t oj = oi + 1, nj = ni + 1;
    int64_t np = sizes[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= sizes.size()) return std::nullopt;
        np *= sizes[nj++];
      } else {
        if (oj >= od.size()) return std::nullopt;
        op *= od[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    }
    strides[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) strides[k - 1] = strides[k] * sizes[k];
    ni = nj;
    oi = oj;
  }
  return strides;
}

absl::StatusOr<std::optional<TensorData>> ViewLayout(const Node& node, const TensorData& input,
                                                     const Extents& sizes,
                                                     const Bindings& bindings) {
  TensorData out = input;
  switch (node.op) {
    case OpKind::kReshape: {
      std::optional<Extents> strides = ReshapeStrides(input.sizes, input.strides, sizes);
      if (!strides) return std::optional<TensorData>();
      out.strides = *strides;
      break;
    }
    case OpKind::kPermute: {
      const auto& perm = std::get<PermuteAttrs>(node.attrs).perm;
      for (size_t i = 0; i < perm.size(); ++i) out.strides[i] = input.strides[perm[i]];
      break;
    }
    case OpKind::kSlice: {
      const auto& ranges = std::get<SliceAttrs>(node.attrs).ranges;
      for (size_t i = 0; i < ranges.size(); ++i) {
        absl::StatusOr<int64_t> start = ranges[i].start.Evaluate(bindings);
        if (!start.ok()) return start.status();
        const int64_t last = *start + (sizes[i] - 1) * ranges[i].step;
        if (sizes[i] > 0 && (*start < 0 || last >= input.sizes[i])) {
          return absl::OutOfRangeError(absl::StrCat("slice: elements ", *start, " to ", last,
                                                    " are outside axis ", i, " of size ",
                                                    input.sizes[i]));
        }
        out.offset += *start * input.strides[i];
        out.strides[i] = input.strides[i] * ranges[i].step;
      }
      break;
    }
    case OpKind::kExpand: {
      const size_t lead = sizes.size() - input.sizes.size();
      out.strides.assign(sizes.size(), 0);
      for (size_t i = 0; i < input.sizes.size(); ++i) {
        out.strides[lead + i] = input.sizes[i] == sizes[lead + i] ? input.strides[i] : 0;
      }
      break;
    }
    default:
      return absl::InternalError(absl::StrCat("ViewLayout: not a view: ", OpName(node.op)));
  }
  out.sizes = sizes;
  return std::optional<TensorData>(std::move(out));
}

}  // namespace kiln
