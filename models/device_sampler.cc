#include "models/device_sampler.h"

#include <limits>

#include "models/device_greedy.h"
#include "ops/ops.h"

namespace kiln::models {

namespace {

// The least of x's entries along `axis`: the most of their negations.
Tensor Least(const Tensor& x, int axis, bool keepdim) { return neg(max(neg(x), axis, keepdim)); }

// `value` as a 0-d tensor of x's dtype and device, for comparisons.
Tensor Like(const Tensor& x, double value) { return scalar(value, x.dtype(), x.device()); }

// 0, 1, ..., n - 1 in f32 (exact below 2^24, as token ids are).
Tensor Indices(int64_t n, const Device& device) { return iota(n, 0, 1, DType::kF32, device); }

// The nucleus threshold on s ([1, n], e = exp(s), total = the sum of e,
// [1, 1]): the largest grid point t at which the tokens with s >= t hold
// more than top_p x total. The bounds start at [-kSpan, 0] (0 is the best
// token's s) and shrink to one grid step each round, every point of a round
// summed at once ([points, n] masked sums).
Tensor NucleusThreshold(const Tensor& s, const Tensor& e, const Tensor& total, double top_p,
                        const DeviceSamplerGrid& grid) {
  const Device device = s.device();
  const Tensor need = mul(total, top_p);
  Tensor lo = full({1, 1}, -DeviceSamplerGrid::kSpan, DType::kF32, device);
  Tensor hi = full({1, 1}, 0, DType::kF32, device);
  const Tensor steps = reshape(iota(grid.points, 1, 1, DType::kF32, device), {grid.points, 1});
  for (int round = 0; round < grid.rounds; ++round) {
    const Tensor t = add(lo, mul(steps, div(sub(hi, lo), grid.points)));  // [points, 1]
    const Tensor held = sum(where(ge(s, t), e, 0.0), 1, /*keepdim=*/true);
    const Tensor enough = gt(held, need);
    // The held mass falls as t rises: the points that hold enough come
    // first, and the new bounds are the last of them and the next point.
    lo = max(where(enough, t, lo), 0, /*keepdim=*/true);
    hi = Least(where(enough, hi, t), 0, /*keepdim=*/true);
  }
  return lo;
}

// Of entries 0..n-1 with nonnegative `weight` and the inclusive running
// sums `running` of them ([n] each), the first whose running sum passes
// `target` ([1]), as an f32 [1] index. Where rounding leaves every sum at or
// below the target, the last entry of positive weight (entry 0 if none).
Tensor FirstPassing(const Tensor& running, const Tensor& target, const Tensor& weight) {
  const int64_t n = weight.shape()[0].value();
  const Tensor index = Indices(n, weight.device());
  const Tensor first = Least(where(gt(running, target), index, static_cast<double>(n)), 0, /*keepdim=*/true);
  const Tensor last = max(where(gt(weight, Like(weight, 0)), index, 0.0), 0, /*keepdim=*/true);
  return minimum(first, last);
}

// The running sums of `x` ([n]) before each entry, or through it with
// `inclusive`: [n, n] masked sums, for the short rows of a chunked pick.
Tensor RunningSums(const Tensor& x, bool inclusive) {
  const int64_t n = x.shape()[0].value();
  const Tensor index = Indices(n, x.device());
  const Tensor row = reshape(index, {1, n}), column = reshape(index, {n, 1});
  return sum(where(inclusive ? le(row, column) : lt(row, column), reshape(x, {1, n}), 0.0), 1);
}

}  // namespace

Tensor DeviceSampledToken(const Tensor& logits, int64_t vocab, const Sampler::Options& options, const Tensor& coin,
                          const DeviceSamplerGrid& grid) {
  const Tensor row = cast(slice(logits, 1, 0, vocab), DType::kF32);  // [1, vocab]
  const Tensor s = mul(sub(row, max(row, 1, /*keepdim=*/true)), 1.0 / options.temperature);
  const Tensor e = exp(s);
  // At least 1 (the best token's e) where the row is valid; NaN where it
  // holds NaN or +inf or is all -inf.
  const Tensor total = sum(e, 1, /*keepdim=*/true);
  Tensor weight = e;
  if (options.top_p > 0 && options.top_p < 1) {
    weight = where(ge(s, NucleusThreshold(s, e, total, options.top_p, grid)), e, 0.0);
  }
  // The token at which the running sum passes coin x the nucleus's mass:
  // first its chunk (sums over the chunks), then its place in the chunk.
  const Tensor chunks = RowInChunks(weight, vocab, 0);  // [count, width]
  const int64_t width = chunks.shape()[1].value();
  const Tensor mass = sum(chunks, 1);  // [count]
  const Tensor target = mul(reshape(coin, {1}), sum(mass, 0, /*keepdim=*/true));
  const Tensor before = RunningSums(mass, /*inclusive=*/false);
  const Tensor chunk = FirstPassing(add(before, mass), target, mass);
  const Tensor chunk_id = cast(chunk, DType::kI32);
  const Tensor in_chunk = reshape(index_select(chunks, 0, chunk_id), {width});
  const Tensor rest = sub(target, index_select(before, 0, chunk_id));
  const Tensor place = FirstPassing(RunningSums(in_chunk, /*inclusive=*/true), rest, in_chunk);
  const Tensor token = add(mul(chunk, static_cast<double>(width)), place);
  const Tensor valid_total = reshape(total, {1});
  const Tensor valid = where(lt(valid_total, Like(valid_total, std::numeric_limits<double>::infinity())),
                             where(ge(valid_total, Like(valid_total, 1)), token, static_cast<double>(vocab)),
                             static_cast<double>(vocab));
  return cast(valid, DType::kI32);
}

}  // namespace kiln::models
