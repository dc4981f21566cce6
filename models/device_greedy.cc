#include "models/device_greedy.h"

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {

Tensor DeviceGreedyToken(const Tensor& logits, int64_t vocab) {
  const Tensor row = slice(logits, 1, 0, vocab);
  const Tensor best = max(row, {1}, /*keepdim=*/true);
  const Tensor index = iota(vocab, 0, 1, DType::kF32, logits.device());
  // Token ids below 2^24 are exact in f32; the least index of a best logit
  // is the most of their negations.
  const Tensor candidates = where(eq(row, best), neg(index), -static_cast<double>(vocab));
  return cast(neg(max(candidates, {1})), DType::kI32);
}

absl::Status DeviceGreedyError(int32_t token, int64_t vocab) {
  if (token >= 0 && token < vocab) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("greedy decoding: no logit of ", vocab, " is a number (NaN logits from the model)"));
}

}  // namespace kiln::models
