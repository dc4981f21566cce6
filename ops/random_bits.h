// The counter-based generator behind random_uniform/random_normal. Element i
// of a tensor depends only on (seed, i), so any device and any execution
// order produce the same numbers; the GPU code generator implements the same
// formulas.
#ifndef KILN_OPS_RANDOM_BITS_H_
#define KILN_OPS_RANDOM_BITS_H_

#include <cmath>
#include <cstdint>

namespace kiln::random_bits {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t Bits(uint64_t seed, uint64_t index) {
  return SplitMix64(SplitMix64(seed) ^ (index * 0xd1b54a32d192ed03ull));
}

// Uniform in [0, 1), 24 random bits.
inline double Uniform(uint64_t seed, uint64_t index) {
  return static_cast<double>(Bits(seed, index) >> 40) * 0x1p-24;
}

// Standard normal by Box-Muller from two 24-bit uniforms of one draw.
inline double Normal(uint64_t seed, uint64_t index) {
  const uint64_t bits = Bits(seed, index);
  const double u1 = (static_cast<double>(bits >> 40) + 1.0) * 0x1p-24;  // (0, 1]
  const double u2 = static_cast<double>((bits >> 16) & 0xffffff) * 0x1p-24;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace kiln::random_bits

#endif  // KILN_OPS_RANDOM_BITS_H_
