// kiln device tile library: the counter-based generator of ops/random_bits.h
// (the same formulas, so every device draws the same numbers).
#pragma once

#include "kiln/types.cuh"

namespace kiln {

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long random_bits(unsigned long long seed, unsigned long long index) {
  return splitmix64(splitmix64(seed) ^ (index * 0xd1b54a32d192ed03ULL));
}

__device__ __forceinline__ double random_uniform(unsigned long long seed, unsigned long long index) {
  return static_cast<double>(random_bits(seed, index) >> 40) * 5.9604644775390625e-08;  // 2^-24
}

__device__ __forceinline__ double random_normal(unsigned long long seed, unsigned long long index) {
  const unsigned long long bits = random_bits(seed, index);
  const double u1 = (static_cast<double>(bits >> 40) + 1.0) * 5.9604644775390625e-08;
  const double u2 = static_cast<double>((bits >> 16) & 0xffffffULL) * 5.9604644775390625e-08;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

}  // namespace kiln
