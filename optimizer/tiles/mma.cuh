// kiln device tile library: tensor-core matrix multiply-accumulate
// (mma.sync m16n8k16, f32 accumulators) for f16 and bf16 operands.
//
// Fragment layouts (PTX ISA, m16n8k16 with .row A and .col B), for lane l,
// g = l / 4, t = l % 4:
//   A (16x16): a[0] = {A[g][2t], A[g][2t+1]},   a[1] = {A[g+8][2t], A[g+8][2t+1]},
//              a[2] = {A[g][2t+8], A[g][2t+9]}, a[3] = {A[g+8][2t+8], A[g+8][2t+9]}
//   B (16x8):  b[0] = {B[2t][g], B[2t+1][g]},   b[1] = {B[2t+8][g], B[2t+9][g]}
//   C (16x8):  c[0], c[1] = C[g][2t], C[g][2t+1]; c[2], c[3] = C[g+8][2t], C[g+8][2t+1]
#pragma once

#include "kiln/types.cuh"

namespace kiln {

__device__ __forceinline__ void mma_f16(float c[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_bf16(float c[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Two 8x8 16-bit matrices from shared memory (ldmatrix .x2): lanes 0-15
// give the addresses (lane q * 8 + r: matrix q's row r, 16 bytes aligned);
// r0 and r1 are the lane's parts of matrices 0 and 1. The .trans form gives
// their transposes'.
__device__ __forceinline__ void ldmatrix_x2(unsigned& r0, unsigned& r1, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned& r0, unsigned& r1, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(address));
}
// Four 8x8 16-bit matrices from shared memory (ldmatrix .x4): lane q * 8 + r
// gives the address of matrix q's row r (16 bytes aligned), r[q] is the
// lane's part of matrix q; the .trans form gives their transposes'.
__device__ __forceinline__ void ldmatrix_x4(unsigned r[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned r[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Two consecutive 16-bit elements of shared memory as one register.
__device__ __forceinline__ unsigned pair(const unsigned short* p) {
  return *reinterpret_cast<const unsigned*>(p);
}

// One warp's 16x16 A fragment from a row-major tile with `ld` elements per
// row, and its 16x8 B fragment from a tile stored [n][k] (k contiguous).
__device__ __forceinline__ void load_a_fragment(unsigned a[4], const unsigned short* tile, int ld) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  a[0] = pair(tile + g * ld + 2 * t);
  a[1] = pair(tile + (g + 8) * ld + 2 * t);
  a[2] = pair(tile + g * ld + 2 * t + 8);
  a[3] = pair(tile + (g + 8) * ld + 2 * t + 8);
}
__device__ __forceinline__ void load_b_fragment(unsigned b[2], const unsigned short* tile_nk, int ld) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  b[0] = pair(tile_nk + g * ld + 2 * t);
  b[1] = pair(tile_nk + g * ld + 2 * t + 8);
}

// A 16x8 B fragment (k x n) from an [n][k] 16-bit tile in shared memory,
// rows of n with k contiguous (ldmatrix without .trans): lane l (of 0-15)
// gives the address of row n0 + l % 8 at column k0 + 8 * (l / 8), 16 bytes
// aligned; the other lanes' are unused.
__device__ __forceinline__ void load_b_fragment_rows(unsigned b[2], const void* row) {
  ldmatrix_x2(b[0], b[1], shared_address(row));
}

// The B fragments of two adjacent n8 columns of tiles from an [n][k] tile
// (as load_b_fragment_rows), the lane's row at shared-memory `address`:
// lanes 0-15 give the first's rows (n0 + l % 8 at column k0 + 8 * (l / 8)),
// lanes 16-31 the second's (n0 + 8 + l % 8); b[0..1] is the first's
// fragment, b[2..3] the second's.
__device__ __forceinline__ void load_b_fragments_rows_x2(unsigned b[4], unsigned address) {
  ldmatrix_x4(b, address);
}

// A 16x8 B fragment (k x n) straight from a row-major [k][n] 16-bit tile in
// shared memory (ldmatrix .trans): lane l (of 0-15) gives the address of
// row k0 + l at column n0, 16 bytes aligned; the other lanes' are unused.
__device__ __forceinline__ void load_b_fragment_trans(unsigned b[2], const void* row) {
  ldmatrix_x2_trans(b[0], b[1], shared_address(row));
}

// The B fragments of two adjacent n8 columns of tiles at once: lanes 0-15
// give rows 0-15 of the first (as above), lanes 16-31 those of the second,
// the lane's row at shared-memory `address`; b[0..1] is the first's
// fragment, b[2..3] the second's.
__device__ __forceinline__ void load_b_fragments_trans_x2(unsigned b[4], unsigned address) {
  ldmatrix_x4_trans(b, address);
}

// A 16x16 A fragment straight from a row-major 16-bit tile in shared
// memory (ldmatrix): lane q * 8 + r gives the address of 8x8 matrix q's row
// r, 16 bytes aligned, the matrices in fragment order (rows 0-7 and 8-15 of
// columns 0-7, then of columns 8-15). The x2 form reads rows 0-7 only
// (lanes 0-15) and leaves rows 8-15 zero.
__device__ __forceinline__ void load_a_fragment_x4(unsigned a[4], const void* row) {
  ldmatrix_x4(a, shared_address(row));
}
__device__ __forceinline__ void load_a_fragment_x2(unsigned a[4], const void* row) {
  ldmatrix_x2(a[0], a[2], shared_address(row));
  a[1] = a[3] = 0u;
}

// Two f32 values rounded to f16 or bf16 and packed, `lo` in the low half
// (the element with the smaller index in a fragment register).
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned out;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned out;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}

// A fragment register's two elements times s in f32, rounded back (a B
// scaled column by column: both elements sit in the lane's column).
__device__ __forceinline__ unsigned scale_f16x2(unsigned pair, float s) {
  return pack_f16x2(bits_to_f16(pair & 0xffffu) * s, bits_to_f16(pair >> 16) * s);
}
__device__ __forceinline__ unsigned scale_bf16x2(unsigned pair, float s) {
  return pack_bf16x2(bits_to_bf16(pair & 0xffffu) * s, bits_to_bf16(pair >> 16) * s);
}

}  // namespace kiln
