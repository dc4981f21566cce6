// Block-quantized weights (llama.cpp's formats, tensor/quant.h): kept packed
// as u8 rows and decoded where they are read.
#ifndef KILN_OPS_QUANT_H_
#define KILN_OPS_QUANT_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace kiln {

// The values of `packed`, u8 [..., rows, row_bytes] of whole blocks of
// `format`, as `dtype` [..., rows, row_bytes / block_bytes * block_size]:
// each value decoded in float32 as gguf-py does, then rounded to `dtype`
// (f32, f16 or bf16). A view that scatters the bytes of a row is copied to
// dense rows first. Inside a product (matmul(x, transpose(W))) the decode
// happens in the product's loads: W is never stored unpacked.
Tensor dequantize(const Tensor& packed, QuantFormat format, DType dtype = DType::kF32);

// Packs `values` (host floats, row-major with `sizes`, the last a multiple
// of the block size) into a u8 host tensor of `format` (Q8_0 or Q4_0) for
// dequantize. InvalidArgument for other sizes or non-finite values;
// Unimplemented for formats kiln does not encode.
absl::StatusOr<Tensor> QuantizeOnHost(absl::Span<const float> values, absl::Span<const int64_t> sizes,
                                      QuantFormat format);

// A weight kept packed: dequantize(blocks, format, dtype) of realized
// blocks, itself never realized (that would store it unpacked). Models hold
// quantized weights so; each trace that reads one decodes the blocks where
// it reads them, inside the products' loads.
struct PackedWeight {
  Tensor blocks;  // u8 [..., rows, bytes], realized
  QuantFormat format = QuantFormat::kQ8_0;
  DType dtype = DType::kF32;  // of the decoded values
};

// The blocks under `weight` where it is such a dequantize; nullopt for any
// other tensor.
std::optional<PackedWeight> AsPackedWeight(const Tensor& weight);
// The weight the blocks decode to: dequantize(blocks, format, dtype).
Tensor Unpack(const PackedWeight& weight);

// `weight` (realized, rows whole blocks of `format`) quantized to `format`
// (Q8_0 or Q4_0) on the host, as a packed weight of its dtype; the blocks
// are host tensors (move them with to()). Errors as QuantizeOnHost's.
absl::StatusOr<Tensor> QuantizeWeight(const Tensor& weight, QuantFormat format);

}  // namespace kiln

#endif  // KILN_OPS_QUANT_H_
