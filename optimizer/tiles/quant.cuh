// kiln device tile library: llama.cpp's block formats decoded one value at a
// time, bit for bit as the CPU reference (tensor/quant.cc) and gguf-py do.
// Each dequant_<format>(row, c) reads value c of a row of whole blocks (u8,
// contiguous, 2-byte aligned: every format's block is an even size). The
// products and sums are __fmul_rn / __fadd_rn, so NVRTC cannot contract them
// into a fused multiply-add, which would round once and change low bits.
#pragma once

namespace kiln {

__device__ __forceinline__ float quant_f16_at(const unsigned char* p) {
  return f16_to_float(*reinterpret_cast<const f16_t*>(p));
}

__device__ __forceinline__ float dequant_q8_0(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 32) * 34;
  return __fmul_rn(static_cast<float>(static_cast<signed char>(b[2 + c % 32])), quant_f16_at(b));
}

__device__ __forceinline__ float dequant_q4_0(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 32) * 18;
  const int j = static_cast<int>(c % 32);
  const int q = j < 16 ? b[2 + j] & 0x0F : b[2 + j - 16] >> 4;
  return __fmul_rn(quant_f16_at(b), static_cast<float>(q - 8));
}

__device__ __forceinline__ float dequant_q4_1(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 32) * 20;
  const int j = static_cast<int>(c % 32);
  const int q = j < 16 ? b[4 + j] & 0x0F : b[4 + j - 16] >> 4;
  return __fadd_rn(__fmul_rn(quant_f16_at(b), static_cast<float>(q)), quant_f16_at(b + 2));
}

// Q5_0 / Q5_1: the fifth bit of value j is bit j of the 4 bytes at `qh`.
__device__ __forceinline__ int quant_q5_value(const unsigned char* qh, const unsigned char* qs, int j) {
  const int low = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
  return low | (((qh[j / 8] >> (j % 8)) & 1) << 4);
}

__device__ __forceinline__ float dequant_q5_0(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 32) * 22;
  return __fmul_rn(quant_f16_at(b), static_cast<float>(quant_q5_value(b + 2, b + 6, static_cast<int>(c % 32)) - 16));
}

__device__ __forceinline__ float dequant_q5_1(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 32) * 24;
  const float scaled = __fmul_rn(quant_f16_at(b), static_cast<float>(quant_q5_value(b + 4, b + 8, static_cast<int>(c % 32))));
  return __fadd_rn(scaled, quant_f16_at(b + 2));
}

// K-quants pack 128 values per 32 bytes in 2-bit fields at shifts 0, 2, 4, 6.
__device__ __forceinline__ int quant_two_bits(const unsigned char* qs, int e) {
  return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

__device__ __forceinline__ float dequant_q2_k(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 256) * 84;
  const int e = static_cast<int>(c % 256), s = e / 16;
  const float dl = __fmul_rn(quant_f16_at(b + 80), static_cast<float>(b[s] & 0x0F));
  const float ml = __fmul_rn(quant_f16_at(b + 82), static_cast<float>(b[s] >> 4));
  return __fsub_rn(__fmul_rn(dl, static_cast<float>(quant_two_bits(b + 16, e))), ml);
}

__device__ __forceinline__ float dequant_q3_k(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 256) * 110;
  const int e = static_cast<int>(c % 256), s = e / 16;
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

__device__ __forceinline__ float dequant_q4_k(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 256) * 144;
  const int e = static_cast<int>(c % 256);
  return quant_scale_min_value(b, e, quant_nibble(b + 16, e));
}

__device__ __forceinline__ float dequant_q5_k(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 256) * 176;
  const int e = static_cast<int>(c % 256);
  return quant_scale_min_value(b, e, quant_nibble(b + 48, e) | (((b[16 + e % 32] >> (e / 32)) & 1) << 4));
}

__device__ __forceinline__ float dequant_q6_k(const unsigned char* row, i64 c) {
  const unsigned char* b = row + (c / 256) * 210;
  const int e = static_cast<int>(c % 256);
  const float ds = __fmul_rn(quant_f16_at(b + 208), static_cast<float>(static_cast<signed char>(b[192 + e / 16])));
  const int low = (b[(e / 128) * 64 + e % 64] >> (4 * ((e % 128) / 64))) & 0x0F;
  const int q = low | (quant_two_bits(b + 128, e) << 4);
  return __fmul_rn(ds, static_cast<float>(q - 32));
}

}  // namespace kiln
