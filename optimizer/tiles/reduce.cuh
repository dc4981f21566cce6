// kiln device tile library: quad, warp and block reductions. Every thread
// of the group gets the result.
#pragma once

#include "kiln/types.cuh"

namespace kiln {

__device__ __forceinline__ float combine_sum(float a, float b) { return a + b; }
__device__ __forceinline__ i64 combine_sum(i64 a, i64 b) {
  return static_cast<i64>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float combine_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ i64 combine_max(i64 a, i64 b) { return a > b ? a : b; }

template <bool kMax, typename T>
__device__ __forceinline__ T combine(T a, T b) {
  if (kMax) return combine_max(a, b);
  return combine_sum(a, b);
}

template <bool kMax, typename T>
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Over each aligned group of kLanes lanes (a power of two up to 32): every
// lane gets its group's result.
template <bool kMax, int kLanes, typename T>
__device__ __forceinline__ T lanes_reduce(T v) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1) v = combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Over the four lanes of a quad (4q .. 4q + 3), which hold one row of an
// mma.sync accumulator fragment.
template <bool kMax, typename T>
__device__ __forceinline__ T quad_reduce(T v) {
  v = combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

// A quad's max by fmaxf (one instruction a shuffle, where combine_max,
// which keeps NaN, takes three), as the flash step takes each lane's.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

// `scratch` holds at least 32 values; blockDim.x is a multiple of 32.
template <bool kMax, typename T>
__device__ __forceinline__ T block_reduce(T v, T* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warp_reduce<kMax>(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = scratch[0];
  for (int w = 1; w < warps; ++w) total = combine<kMax>(total, scratch[w]);
  return total;
}

}  // namespace kiln
