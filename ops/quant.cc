#include "ops/quant.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/movement.h"
#include "ops/record.h"

namespace kiln {
namespace {

// Whether each row of `packed` is adjacent bytes in memory, as the decoders
// read it: every view between it and the node it views is a reshape that
// keeps the last size or a slice of whole rows, and that node, if realized,
// is stored with its rows dense.
bool RowsStayWhole(const Tensor& packed) {
  const Node* n = packed.node().get();
  for (; IsView(n->op) && !n->is_realized(); n = n->inputs[0].get()) {
    const Node* in = n->inputs[0].get();
    const Dim& last = n->shape[n->shape.rank() - 1];
    if (!(last == in->shape[in->shape.rank() - 1])) return false;
    if (n->op == OpKind::kSlice) {
      const SliceAttrs::Range& r = std::get<SliceAttrs>(n->attrs).ranges.back();
      if (!(r.start == Dim(0)) || r.step != 1) return false;
    } else if (n->op != OpKind::kReshape) {
      return false;
    }
  }
  return !n->is_realized() || n->data.strides.empty() || n->data.strides.back() == 1;
}

}  // namespace

using ops_internal::CheckInputs;
using ops_internal::Describe;
using ops_internal::Record;

Tensor dequantize(const Tensor& packed, QuantFormat format, DType dtype) {
  KILN_RETURN_IF_ERROR_TENSOR(CheckInputs("dequantize", {&packed}));
  const QuantFormatInfo& info = QuantInfo(format);
  if (packed.dtype() != DType::kU8 || packed.rank() < 1) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("dequantize: packed ", info.name, " blocks are u8 rows, got ", Describe(packed))));
  }
  if (!IsFloating(dtype)) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("dequantize: values are f32, f16 or bf16, not ", DTypeName(dtype))));
  }
  const Dim& bytes = packed.shape()[packed.rank() - 1];
  if (!bytes.is_concrete() || bytes.value() % info.block_bytes != 0) {
    return Tensor::Error(absl::InvalidArgumentError(
        absl::StrCat("dequantize: rows of ", Describe(packed), " are not whole ", info.name, " blocks of ",
                     info.block_bytes, " bytes")));
  }
  Shape shape = packed.shape();
  shape[shape.rank() - 1] = Dim(bytes.value() / info.block_bytes * info.block_size);
  // Rows scattered by a view are gathered into a dense copy first.
  const Tensor rows = RowsStayWhole(packed) ? packed : contiguous(packed);
  return Record(OpKind::kDequantize, QuantAttrs{format}, {rows}, dtype, std::move(shape));
}

absl::StatusOr<Tensor> QuantizeOnHost(absl::Span<const float> values, absl::Span<const int64_t> sizes,
                                      QuantFormat format) {
  const QuantFormatInfo& info = QuantInfo(format);
  int64_t count = 1;
  for (int64_t s : sizes) {
    if (s < 0) return absl::InvalidArgumentError(absl::StrCat("quantizing to ", info.name, ": a negative size"));
    count *= s;
  }
  if (sizes.empty() || sizes.back() % info.block_size != 0 || count != static_cast<int64_t>(values.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantizing ", values.size(), " values to ", info.name, ": rows must be whole blocks of ",
                     info.block_size, " and the sizes must hold the values"));
  }
  std::vector<int64_t> packed_sizes(sizes.begin(), sizes.end());
  packed_sizes.back() = sizes.back() / info.block_size * info.block_bytes;
  std::vector<uint8_t> bytes(static_cast<size_t>(count / info.block_size * info.block_bytes));
  if (absl::Status s = EncodeQuantBlocks(format, values, absl::MakeSpan(bytes)); !s.ok()) return s;
  return Tensor::FromVector(std::move(bytes), packed_sizes);
}

std::optional<PackedWeight> AsPackedWeight(const Tensor& weight) {
  if (!weight.ok() || weight.is_realized()) return std::nullopt;
  const Node* n = weight.node().get();
  if (n->op != OpKind::kDequantize || !n->inputs[0]->is_realized()) return std::nullopt;
  return PackedWeight{Tensor(n->inputs[0]), std::get<QuantAttrs>(n->attrs).format, n->dtype};
}

Tensor Unpack(const PackedWeight& weight) { return dequantize(weight.blocks, weight.format, weight.dtype); }

absl::StatusOr<Tensor> QuantizeWeight(const Tensor& weight, QuantFormat format) {
  if (!weight.ok()) return weight.status();
  if (!weight.shape().is_concrete()) {
    return absl::InvalidArgumentError(absl::StrCat("quantizing ", weight.ToString(), ": sizes must be concrete"));
  }
  absl::StatusOr<std::vector<float>> values = weight.to_host<float>();
  if (!values.ok()) return values.status();
  const Extents sizes = weight.shape().extents();
  absl::StatusOr<Tensor> blocks = QuantizeOnHost(*values, sizes, format);
  if (!blocks.ok()) return blocks.status();
  return Unpack({*blocks, format, weight.dtype()});
}

}  // namespace kiln
