// Greedy decoding where the logits are: the argmax of a logits row recorded
// as lazy ops, so that on the GPU a step reads back one token id (4 bytes)
// instead of the whole row.
#ifndef KILN_MODELS_DEVICE_GREEDY_H_
#define KILN_MODELS_DEVICE_GREEDY_H_

#include <cstdint>

#include "tensor/tensor.h"

namespace kiln::models {

// The lowest index of the largest of the first `vocab` logits of `logits`
// ([1, V], V >= vocab), as an i32 [1] tensor on the logits' device: the
// token Sampler picks at temperature 0. NaN logits are never the largest
// (Sampler refuses them); where every one of them is NaN the result is
// `vocab`, which no token has (DeviceGreedyError).
Tensor DeviceGreedyToken(const Tensor& logits, int64_t vocab);

// InvalidArgument for a DeviceGreedyToken result that is not a token.
absl::Status DeviceGreedyError(int32_t token, int64_t vocab);

}  // namespace kiln::models

#endif  // KILN_MODELS_DEVICE_GREEDY_H_
