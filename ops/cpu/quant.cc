// dequantize: packed u8 rows of blocks decoded to floats (tensor/quant.h),
// rounded to the node's dtype as sources are, stored as types.out.
#include <vector>

#include "ops/cpu/kernels.h"
#include "tensor/convert.h"
#include "tensor/quant.h"

namespace kiln::cpu {

absl::StatusOr<TensorData> RunDequantize(const Node& node, const Types& types, const TensorData& packed,
                                         const Extents& sizes) {
  const QuantFormatInfo& info = QuantInfo(std::get<QuantAttrs>(node.attrs).format);
  std::vector<uint8_t> bytes(static_cast<size_t>(packed.num_elements()));
  CopyStridedToDense(packed, 1, bytes.data());
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  std::vector<float> values(static_cast<size_t>(count));
  DecodeQuantBlocks(info.format, bytes.data(), count / info.block_size, values.data());
  absl::StatusOr<TensorData> out = AllocateHostTensor(types.out, sizes);
  if (!out.ok()) return out.status();
  if (types.out == node.dtype) {
    ConvertElements(DType::kF32, values.data(), node.dtype, out->storage->data(), count);
  } else {
    std::vector<char> rounded(static_cast<size_t>(count) * DTypeSize(node.dtype));
    ConvertElements(DType::kF32, values.data(), node.dtype, rounded.data(), count);
    ConvertElements(node.dtype, rounded.data(), types.out, out->storage->data(), count);
  }
  return out;
}

}  // namespace kiln::cpu
