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

// A row of `vocab` entries ([1, vocab]) as [chunks, width], padded with
// `pad` to a whole number of chunks, so that reductions over it run in two
// stages (the chunks, then their results) across many blocks of a GPU
// instead of one: a row of up to 2048 entries is one chunk, a longer one is
// cut into chunks of about 1024 (a divisor of vocab where there is one).
Tensor RowInChunks(const Tensor& row, int64_t vocab, double pad);

// InvalidArgument for a DeviceGreedyToken result that is not a token.
absl::Status DeviceGreedyError(int32_t token, int64_t vocab);

}  // namespace kiln::models

#endif  // KILN_MODELS_DEVICE_GREEDY_H_
