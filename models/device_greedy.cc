#include "models/device_greedy.h"

#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {

namespace {

// A row longer than two chunks is reduced in two stages, chunk by chunk
// and then over the chunks' results, so that many blocks share it: one
// block reducing a 128256-entry row took 80 us a pass on the H100 (its
// loads in flight, not the bandwidth, bound it), a fifth of the 1B step's
// GPU time for the two reductions of a greedy pick.
constexpr int64_t kChunk = 1024;

// The chunk width for a row of `vocab`: a divisor of it within a factor of
// two of kChunk where there is one (Llama 3's 128256 = 128 x 1002, Qwen's
// 151936 = 128 x 1187), so that no padding is needed; kChunk otherwise.
int64_t ChunkWidth(int64_t vocab) {
  int64_t best = 0;
  for (int64_t w = kChunk / 2; w <= 2 * kChunk; ++w) {
    if (vocab % w == 0 && (best == 0 || std::abs(w - kChunk) < std::abs(best - kChunk))) best = w;
  }
  return best > 0 ? best : kChunk;
}

}  // namespace

Tensor RowInChunks(const Tensor& row, int64_t vocab, double pad) {
  const int64_t width = vocab > 2 * kChunk ? ChunkWidth(vocab) : vocab;
  const int64_t chunks = (vocab + width - 1) / width;
  Tensor padded = row;
  if (chunks * width > vocab) {
    const Tensor fill = full({1, chunks * width - vocab}, pad, row.dtype(), row.device());
    padded = concat({row, fill}, 1);
  }
  return reshape(padded, {chunks, width});
}

Tensor DeviceGreedyToken(const Tensor& logits, int64_t vocab) {
  // -inf pads: a real index is lower, so wins any tie with one.
  const Tensor row = RowInChunks(slice(logits, 1, 0, vocab), vocab, -std::numeric_limits<double>::infinity());
  const int64_t chunks = row.shape()[0].value(), width = row.shape()[1].value();
  const Tensor best = max(max(row, {1}, /*keepdim=*/true), {0}, /*keepdim=*/true);
  const Tensor index = reshape(iota(chunks * width, 0, 1, DType::kF32, logits.device()), {chunks, width});
  // Token ids below 2^24 are exact in f32; the least index of a best logit
  // is the most of their negations.
  const Tensor candidates = where(eq(row, best), neg(index), -static_cast<double>(vocab));
  const Tensor least = max(reshape(max(candidates, {1}), {1, chunks}), {1});
  return cast(neg(least), DType::kI32);
}

absl::Status DeviceGreedyError(int32_t token, int64_t vocab) {
  if (token >= 0 && token < vocab) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("greedy decoding: no logit of ", vocab, " is a number (NaN logits from the model)"));
}

}  // namespace kiln::models
