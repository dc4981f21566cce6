// Temperature and nucleus (top-p) sampling where the logits are, recorded as
// lazy ops: a GPU step draws its token there and reads back 4 bytes, instead
// of reading back the whole row for Sampler on the host (1-2 ms per token at
// a 128256-token vocabulary on a small CPU, as much as the 1B model's step).
//
// The draw: with s = (logit - max) / temperature, the nucleus is every token
// with s >= t for the largest t at which those tokens hold more than top_p of
// the probability; t is found by a search over a grid (DeviceSamplerGrid)
// accurate to a few millionths of a nat. A coin in [0, 1) then picks the
// token at which the nucleus's probability, summed in token order, passes
// coin x its mass. Sampler sums in order of probability instead: for the same
// coin the two pick different tokens, from the same distribution.
#ifndef KILN_MODELS_DEVICE_SAMPLER_H_
#define KILN_MODELS_DEVICE_SAMPLER_H_

#include <cstdint>

#include "models/sampler.h"
#include "tensor/tensor.h"

namespace kiln::models {

// How the nucleus threshold is searched: `rounds` rounds, each timing
// `points` thresholds at once between the last round's bounds, so that the
// threshold is found within kSpan / points^rounds of the exact one.
struct DeviceSamplerGrid {
  int points = 64;
  int rounds = 4;
  // Tokens with s below -kSpan have probability below exp(-88), under f32's
  // least normal number: never worth a grid point.
  static constexpr double kSpan = 88;
};

// A token drawn from the first `vocab` logits of `logits` ([1, V], V >=
// vocab) as `options` say (temperature > 0; the seed is not read: `coin`, an
// f32 [1] tensor on the logits' device holding a draw in [0, 1), is the
// randomness), as an i32 [1] tensor on the logits' device. Where the logits
// hold NaN or +inf, or are all -inf, the result is `vocab`, which no token
// has (DeviceGreedyError reports it).
Tensor DeviceSampledToken(const Tensor& logits, int64_t vocab, const Sampler::Options& options, const Tensor& coin,
                          const DeviceSamplerGrid& grid = {});

}  // namespace kiln::models

#endif  // KILN_MODELS_DEVICE_SAMPLER_H_
