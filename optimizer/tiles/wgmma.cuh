// kiln device tile library: Hopper's warpgroup tensor-core products
// (wgmma.mma_async m64nNk16, f32 accumulators, A from registers, B from
// shared memory through a matrix descriptor), for f16 and bf16 operands.
// Compiled only for sm_90a (KILN_WGMMA); elsewhere the generated code takes
// its mma.sync path.
//
// Register layouts, for the warpgroup's warp w (w = warp % 4) and lane l,
// g = l / 4, t = l % 4: warp w holds rows 16w..16w+15 of the m64 tile; its A
// registers are mma.sync's m16k16 A fragment of those rows, its
// accumulators N/8 of mma.sync's m16n8 C fragments in column order
// (d[4j..4j+3]: columns 8j..8j+7).
//
// B in shared memory, 128-byte swizzle (16-byte vector v of a 128-byte row r
// at v ^ (r % 8), the rows 128 bytes apart from a 1024-byte aligned base:
// kiln's ring swizzle where a row holds 8 vectors):
//   K-major (tnsp 0: rows of n, 64 k each): a k16 chunk 32 bytes on, SBO the
//     1024 bytes between 8-row groups of n.
//   MN-major (tnsp 1: rows of k, 64 n each): a k16 chunk 2048 bytes on, SBO
//     the 1024 bytes between 8-row groups of k; N past 64 in further panels
//     of such rows, LBO apart.
// Rows of 128 elements lie in two panels of 64 (InputPlan::panels): K-major,
// k chunks 4-7 start in the second.
// (Measured on an H100 against a CPU product: both layouts at N 64,
// MN-major at N 128 with two panels 8192 bytes apart.)
#pragma once

#include "kiln/types.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KILN_WGMMA 1
#else
#define KILN_WGMMA 0
#endif

#if KILN_WGMMA
namespace kiln {

// The descriptor of a 128-byte-swizzled matrix at shared address `address`
// (its 1024-byte pattern aligned), `sbo` bytes between 8-row groups and,
// MN-major, `lbo` bytes between the 64-element panels along N (unused
// K-major, and for one panel).
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned address, unsigned sbo, unsigned lbo = 16) {
  return static_cast<unsigned long long>((address & 0x3FFFFu) >> 4) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

// Keeps the compiler from moving the accumulators' other reads and writes
// across the products (which write them asynchronously) and the wait:
// around each product group, for each of the n accumulators.
template <int n>
__device__ __forceinline__ void wgmma_fence_operands(float* d) {
#pragma unroll
  for (int i = 0; i < n; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Orders the warpgroup's register writes before the products that read them.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
// Closes the products issued so far into a group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most `pending` of the committed groups are in flight
// (groups complete in order).
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(pending) : "memory");
}
__device__ __forceinline__ void wgmma_wait_all() { wgmma_wait<0>(); }  // for every group
__device__ __forceinline__ void wgmma_commit_and_wait() {
  wgmma_commit();
  wgmma_wait_all();
}
// The shared memory written through the generic proxy (stores, cp.async)
// made visible to the products' reads (the async proxy); before the barrier.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// D (64 x N) += A (64 x 16, registers) B (16 x N, shared memory): one
// product for the element type `type` ("f16" or "bf16"), kTransB 1 where B
// is MN-major. KILN_WGMMA_D<n> and KILN_WGMMA_C<n> spell out n
// accumulators' operands and constraints, each list extending the one
// before; KILN_WGMMA_AB<n> numbers A's registers and B's descriptor after
// them.
#define KILN_WGMMA_D16                                    \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15"
#define KILN_WGMMA_D32                                                              \
  KILN_WGMMA_D16 ",%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define KILN_WGMMA_D64                                                              \
  KILN_WGMMA_D32 ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47" \
  ",%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define KILN_WGMMA_C16                                                      \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),   \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define KILN_WGMMA_C32                                                          \
  KILN_WGMMA_C16,                                                               \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
  "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
  "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define KILN_WGMMA_C64                                                          \
  KILN_WGMMA_C32,                                                               \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
  "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), \
  "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), \
  "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), \
  "+f"(d[62]), "+f"(d[63])
#define KILN_WGMMA_AB16 "{%16,%17,%18,%19}, %20, p, 1, 1, %21"
#define KILN_WGMMA_AB32 "{%32,%33,%34,%35}, %36, p, 1, 1, %37"
#define KILN_WGMMA_AB64 "{%64,%65,%66,%67}, %68, p, 1, 1, %69"
// The product m64<n>k16 for `type` with accumulators `d` (constraints `c`)
// and A's and B's operands `ab`.
#define KILN_WGMMA_M64(n, type, d, c, ab)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                   \
               "wgmma.mma_async.sync.aligned.m64n" n "k16.f32." type "." type " {" d "}, " ab ";\n}"        \
               : c                                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB))

// The product above for N = kN (32, 64 or 128) and 16-bit elements, bf16
// where kBf16, else f16.
template <int kN, bool kBf16, int kTransB>
__device__ __forceinline__ void wgmma_m64k16(float* d, const unsigned a[4], unsigned long long b) {
  static_assert(kN == 32 || kN == 64 || kN == 128, "wgmma m64nNk16 here takes N of 32, 64 or 128");
  if constexpr (kN == 32) {
    if constexpr (kBf16) {
      KILN_WGMMA_M64("32", "bf16", KILN_WGMMA_D16, KILN_WGMMA_C16, KILN_WGMMA_AB16);
    } else {
      KILN_WGMMA_M64("32", "f16", KILN_WGMMA_D16, KILN_WGMMA_C16, KILN_WGMMA_AB16);
    }
  } else if constexpr (kN == 64) {
    if constexpr (kBf16) {
      KILN_WGMMA_M64("64", "bf16", KILN_WGMMA_D32, KILN_WGMMA_C32, KILN_WGMMA_AB32);
    } else {
      KILN_WGMMA_M64("64", "f16", KILN_WGMMA_D32, KILN_WGMMA_C32, KILN_WGMMA_AB32);
    }
  } else {
    if constexpr (kBf16) {
      KILN_WGMMA_M64("128", "bf16", KILN_WGMMA_D64, KILN_WGMMA_C64, KILN_WGMMA_AB64);
    } else {
      KILN_WGMMA_M64("128", "f16", KILN_WGMMA_D64, KILN_WGMMA_C64, KILN_WGMMA_AB64);
    }
  }
}

#undef KILN_WGMMA_M64
#undef KILN_WGMMA_AB64
#undef KILN_WGMMA_AB32
#undef KILN_WGMMA_AB16
#undef KILN_WGMMA_C64
#undef KILN_WGMMA_C32
#undef KILN_WGMMA_C16
#undef KILN_WGMMA_D64
#undef KILN_WGMMA_D32
#undef KILN_WGMMA_D16

}  // namespace kiln
#endif  // KILN_WGMMA
