// kiln device tile library: llama.cpp's block formats decoded bit for bit
// as the CPU reference (tensor/quant.cc) and gguf-py do. For each format:
//   dequant_<format>_in(b, j): value j of the block at b;
//   dequant_<format>(row, c): value c of a row of whole blocks (u8,
//     contiguous, 2-byte aligned: every format's block is an even size);
//   dequant8_<format>(row, k, out): values k .. k + 7 of a row, k a multiple
//     of 8 (so one block holds them all), the block found once and, for
//     Q8_0, Q4_0, Q4_K and Q6_K, its scales read once and its bits 16 at a
//     time.
// The products and sums are __fmul_rn / __fadd_rn, so NVRTC cannot contract
// them into a fused multiply-add, which would round once and change low bits.
#pragma once

namespace kiln {

__device__ __forceinline__ float quant_f16_at(const unsigned char* p) {
  return f16_to_float(*reinterpret_cast<const f16_t*>(p));
}

__device__ __forceinline__ float dequant_q8_0_in(const unsigned char* b, int j) {
  return __fmul_rn(static_cast<float>(static_cast<signed char>(b[2 + j])), quant_f16_at(b));
}

// Q4_0 / Q4_1: value j < 16 is the low nibble of byte j, j >= 16 the high
// nibble of byte j - 16.
__device__ __forceinline__ int quant_half_nibble(const unsigned char* qs, int j) {
  return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
}

__device__ __forceinline__ float dequant_q4_0_in(const unsigned char* b, int j) {
  return __fmul_rn(quant_f16_at(b), static_cast<float>(quant_half_nibble(b + 2, j) - 8));
}

__device__ __forceinline__ float dequant_q4_1_in(const unsigned char* b, int j) {
  return __fadd_rn(__fmul_rn(quant_f16_at(b), static_cast<float>(quant_half_nibble(b + 4, j))), quant_f16_at(b + 2));
}

// Q5_0 / Q5_1: the fifth bit of value j is bit j of the 4 bytes at `qh`.
__device__ __forceinline__ int quant_q5_value(const unsigned char* qh, const unsigned char* qs, int j) {
  return quant_half_nibble(qs, j) | (((qh[j / 8] >> (j % 8)) & 1) << 4);
}

__device__ __forceinline__ float dequant_q5_0_in(const unsigned char* b, int j) {
  return __fmul_rn(quant_f16_at(b), static_cast<float>(quant_q5_value(b + 2, b + 6, j) - 16));
}

__device__ __forceinline__ float dequant_q5_1_in(const unsigned char* b, int j) {
  const float scaled = __fmul_rn(quant_f16_at(b), static_cast<float>(quant_q5_value(b + 4, b + 8, j)));
  return __fadd_rn(scaled, quant_f16_at(b + 2));
}

// K-quants pack 128 values per 32 bytes in 2-bit fields at shifts 0, 2, 4, 6.
__device__ __forceinline__ int quant_two_bits(const unsigned char* qs, int e) {
  return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

__device__ __forceinline__ float dequant_q2_k_in(const unsigned char* b, int e) {
  const int s = e / 16;
  const float dl = __fmul_rn(quant_f16_at(b + 80), static_cast<float>(b[s] & 0x0F));
  const float ml = __fmul_rn(quant_f16_at(b + 82), static_cast<float>(b[s] >> 4));
  return __fsub_rn(__fmul_rn(dl, static_cast<float>(quant_two_bits(b + 16, e))), ml);
}

__device__ __forceinline__ float dequant_q3_k_in(const unsigned char* b, int e) {
  const int s = e / 16;
  const unsigned char* packed = b + 96;
  const int low = s < 8 ? packed[s] & 0x0F : packed[s - 8] >> 4;
  const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
  const float dl = __fmul_rn(quant_f16_at(b + 108), static_cast<float>((low | (high << 4)) - 32));
  const int subtract = ((b[e % 32] >> (e / 32)) & 1) ? 0 : 4;
  return __fmul_rn(dl, static_cast<float>(quant_two_bits(b + 32, e) - subtract));
}

// Q4_K / Q5_K: 6-bit scales and mins of 8 sub-blocks of 32 in 12 bytes.
__device__ __forceinline__ void quant_k_scale_min(const unsigned char* p, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = p[s] & 0x3F;
    *min = p[s + 4] & 0x3F;
  } else {
    *scale = (p[s + 4] & 0x0F) | ((p[s - 4] >> 2) & 0x30);
    *min = (p[s + 4] >> 4) | ((p[s] >> 2) & 0x30);
  }
}

// The low 4 bits of value e: 64 values per 32 bytes, low nibbles first.
__device__ __forceinline__ int quant_nibble(const unsigned char* qs, int e) {
  return (qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0x0F;
}

// Q4_K / Q5_K value e of the super-block at b with bits q: d * scale * q -
// dmin * min of its sub-block.
__device__ __forceinline__ float quant_scale_min_value(const unsigned char* b, int e, int q) {
  int sc, m;
  quant_k_scale_min(b + 4, e / 32, &sc, &m);
  const float ds = __fmul_rn(quant_f16_at(b), static_cast<float>(sc));
  const float dm = __fmul_rn(quant_f16_at(b + 2), static_cast<float>(m));
  return __fsub_rn(__fmul_rn(ds, static_cast<float>(q)), dm);
}

__device__ __forceinline__ float dequant_q4_k_in(const unsigned char* b, int e) {
  return quant_scale_min_value(b, e, quant_nibble(b + 16, e));
}

__device__ __forceinline__ float dequant_q5_k_in(const unsigned char* b, int e) {
  return quant_scale_min_value(b, e, quant_nibble(b + 48, e) | (((b[16 + e % 32] >> (e / 32)) & 1) << 4));
}

__device__ __forceinline__ float dequant_q6_k_in(const unsigned char* b, int e) {
  const float ds = __fmul_rn(quant_f16_at(b + 208), static_cast<float>(static_cast<signed char>(b[192 + e / 16])));
  const int low = (b[(e / 128) * 64 + e % 64] >> (4 * ((e % 128) / 64))) & 0x0F;
  const int q = low | (quant_two_bits(b + 128, e) << 4);
  return __fmul_rn(ds, static_cast<float>(q - 32));
}

// Eight bytes at a 2-byte aligned address, as four 16-bit loads, byte i in
// bits 8i of the result.
__device__ __forceinline__ unsigned long long quant_bytes8(const unsigned char* p) {
  const unsigned short* h = reinterpret_cast<const unsigned short*>(p);
  return static_cast<unsigned long long>(h[0]) | (static_cast<unsigned long long>(h[1]) << 16) |
         (static_cast<unsigned long long>(h[2]) << 32) | (static_cast<unsigned long long>(h[3]) << 48);
}

__device__ __forceinline__ int quant_byte(unsigned long long v, int i) { return static_cast<int>((v >> (8 * i)) & 0xFF); }

// Eight values e .. e + 7 of a block (e a multiple of 8), its scales read
// once and its bits in 16-bit loads: the same products as the _in forms.
__device__ __forceinline__ void dequant8_q8_0_in(const unsigned char* b, int e, float* out) {
  const float d = quant_f16_at(b);
  const unsigned long long q = quant_bytes8(b + 2 + e);
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = __fmul_rn(static_cast<float>(static_cast<signed char>(quant_byte(q, j))), d);
}

__device__ __forceinline__ void dequant8_q4_0_in(const unsigned char* b, int e, float* out) {
  const float d = quant_f16_at(b);
  const unsigned long long q = quant_bytes8(b + 2 + e % 16);
  const int shift = e < 16 ? 0 : 4;
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = __fmul_rn(d, static_cast<float>(((quant_byte(q, j) >> shift) & 0x0F) - 8));
}

__device__ __forceinline__ void dequant8_q4_k_in(const unsigned char* b, int e, float* out) {
  int sc, m;
  quant_k_scale_min(b + 4, e / 32, &sc, &m);
  const float ds = __fmul_rn(quant_f16_at(b), static_cast<float>(sc));
  const float dm = __fmul_rn(quant_f16_at(b + 2), static_cast<float>(m));
  const unsigned long long q = quant_bytes8(b + 16 + (e / 64) * 32 + e % 32);
  const int shift = 4 * ((e % 64) / 32);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    out[j] = __fsub_rn(__fmul_rn(ds, static_cast<float>((quant_byte(q, j) >> shift) & 0x0F)), dm);
  }
}

__device__ __forceinline__ void dequant8_q6_k_in(const unsigned char* b, int e, float* out) {
  const float ds = __fmul_rn(quant_f16_at(b + 208), static_cast<float>(static_cast<signed char>(b[192 + e / 16])));
  const unsigned long long low = quant_bytes8(b + (e / 128) * 64 + e % 64);
  const unsigned long long high = quant_bytes8(b + 128 + (e / 128) * 32 + e % 32);
  const int low_shift = 4 * ((e % 128) / 64), high_shift = 2 * ((e % 128) / 32);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int q = ((quant_byte(low, j) >> low_shift) & 0x0F) | (((quant_byte(high, j) >> high_shift) & 3) << 4);
    out[j] = __fmul_rn(ds, static_cast<float>(q - 32));
  }
}

// The other formats' eight values, one by one.
#define KILN_QUANT_EIGHT_BY_ONE(name)                                                                       \
  __device__ __forceinline__ void dequant8_##name##_in(const unsigned char* b, int e, float* out) {          \
    _Pragma("unroll") for (int j = 0; j < 8; ++j) out[j] = dequant_##name##_in(b, e + j);                  \
  }
KILN_QUANT_EIGHT_BY_ONE(q4_1)
KILN_QUANT_EIGHT_BY_ONE(q5_0)
KILN_QUANT_EIGHT_BY_ONE(q5_1)
KILN_QUANT_EIGHT_BY_ONE(q2_k)
KILN_QUANT_EIGHT_BY_ONE(q3_k)
KILN_QUANT_EIGHT_BY_ONE(q5_k)
#undef KILN_QUANT_EIGHT_BY_ONE

// The row-level forms, from each format's values and bytes per block.
#define KILN_QUANT_ROW_DECODERS(name, values, bytes)                                                       \
  __device__ __forceinline__ float dequant_##name(const unsigned char* row, i64 c) {                         \
    return dequant_##name##_in(row + (c / values) * bytes, static_cast<int>(c % values));                  \
  }                                                                                                        \
  __device__ __forceinline__ void dequant8_##name(const unsigned char* row, i64 k, float* out) {             \
    dequant8_##name##_in(row + (k / values) * bytes, static_cast<int>(k % values), out);                   \
  }
KILN_QUANT_ROW_DECODERS(q8_0, 32, 34)
KILN_QUANT_ROW_DECODERS(q4_0, 32, 18)
KILN_QUANT_ROW_DECODERS(q4_1, 32, 20)
KILN_QUANT_ROW_DECODERS(q5_0, 32, 22)
KILN_QUANT_ROW_DECODERS(q5_1, 32, 24)
KILN_QUANT_ROW_DECODERS(q2_k, 256, 84)
KILN_QUANT_ROW_DECODERS(q3_k, 256, 110)
KILN_QUANT_ROW_DECODERS(q4_k, 256, 144)
KILN_QUANT_ROW_DECODERS(q5_k, 256, 176)
KILN_QUANT_ROW_DECODERS(q6_k, 256, 210)
#undef KILN_QUANT_ROW_DECODERS

}  // namespace kiln
