// The tile library's block decoders (optimizer/tiles/quant.cuh), compiled
// for the host with the few device intrinsics they use spelled in C++, give
// bit for bit what the CPU reference (tensor/quant.cc) decodes: the
// eight-value forms the decode products use and the one-value forms the
// other kernels use, on random bytes (any bytes are a valid block).
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tensor/half.h"
#include "tensor/quant.h"

// As the CPU reference: every product and sum rounded on its own.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define __device__
#define __forceinline__ inline

namespace kiln {
typedef unsigned short f16_t;
typedef long long i64;
inline float f16_to_float(f16_t h) { return Half{h}.ToFloat(); }
}  // namespace kiln

inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }

#include "optimizer/tiles/quant.cuh"

#undef __device__
#undef __forceinline__

namespace kiln {
namespace {

using Eight = void (*)(const unsigned char*, i64, float*);
using One = float (*)(const unsigned char*, i64);

struct Decoders {
  QuantFormat format;
  One one;
  Eight eight;
};

const Decoders kDecoders[] = {
    {QuantFormat::kQ8_0, dequant_q8_0, dequant8_q8_0}, {QuantFormat::kQ4_0, dequant_q4_0, dequant8_q4_0},
    {QuantFormat::kQ4_1, dequant_q4_1, dequant8_q4_1}, {QuantFormat::kQ5_0, dequant_q5_0, dequant8_q5_0},
    {QuantFormat::kQ5_1, dequant_q5_1, dequant8_q5_1}, {QuantFormat::kQ2_K, dequant_q2_k, dequant8_q2_k},
    {QuantFormat::kQ3_K, dequant_q3_k, dequant8_q3_k}, {QuantFormat::kQ4_K, dequant_q4_k, dequant8_q4_k},
    {QuantFormat::kQ5_K, dequant_q5_k, dequant8_q5_k}, {QuantFormat::kQ6_K, dequant_q6_k, dequant8_q6_k},
};

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

TEST(TileQuantDecoders, MatchTheCpuReferenceBitForBit) {
  std::mt19937 rng(5);
  for (const Decoders& d : kDecoders) {
    const QuantFormatInfo& info = QuantInfo(d.format);
    constexpr int64_t kBlocks = 12;
    // 2-byte aligned rows, as the kernels get them.
    std::vector<uint16_t> storage(static_cast<size_t>(kBlocks * info.block_bytes / 2 + 1));
    unsigned char* row = reinterpret_cast<unsigned char*>(storage.data());
    for (int64_t i = 0; i < kBlocks * info.block_bytes; ++i) row[i] = static_cast<unsigned char>(rng());
    // Small f16 scales in some blocks, so that values are not all huge.
    for (int64_t blk = 0; blk < kBlocks; blk += 2) {
      for (int64_t i = 0; i < info.block_bytes; i += 2) {
        if (rng() % 3 == 0) row[blk * info.block_bytes + i + 1] &= 0x3F;
      }
    }
    const int64_t n = kBlocks * info.block_size;
    std::vector<float> want(static_cast<size_t>(n));
    DecodeQuantBlocks(d.format, row, kBlocks, want.data());
    for (int64_t k = 0; k < n; k += 8) {
      float eight[8];
      d.eight(row, k, eight);
      for (int j = 0; j < 8; ++j) {
        ASSERT_EQ(Bits(eight[j]), Bits(want[static_cast<size_t>(k + j)]))
            << QuantName(d.format) << " eight-value decode, value " << k + j << ": " << eight[j] << " vs "
            << want[static_cast<size_t>(k + j)];
        ASSERT_EQ(Bits(d.one(row, k + j)), Bits(want[static_cast<size_t>(k + j)]))
            << QuantName(d.format) << " one-value decode, value " << k + j;
      }
    }
  }
}

}  // namespace
}  // namespace kiln
