// kiln device tile library: storage types and the conversion rules.
// Compiled by NVRTC inside every generated kernel (no CUDA headers needed:
// half and bfloat16 conversions use PTX directly).
//
// Values are computed in float (f32, f16, bf16) or long long (integers and
// bool) and rounded to the node's dtype after every op, which is exactly what
// the CPU reference does (see tensor/convert.h for the rules).
#pragma once

namespace kiln {

typedef unsigned short f16_t;   // IEEE binary16 bits
typedef unsigned short bf16_t;  // bfloat16 bits
typedef long long i64;

__device__ __forceinline__ float f16_to_float(f16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ f16_t float_to_f16(float f) {
  f16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bf16_to_float(bf16_t b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
__device__ __forceinline__ bf16_t float_to_bf16(float f) {
  bf16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}

// Round-to-odd to f32, so that a second rounding to a 16-bit type equals
// rounding the exact value once.
__device__ __forceinline__ float round_to_odd_float(double v) {
  float f = __double2float_rz(v);
  if (static_cast<double>(f) != v && v == v) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
__device__ __forceinline__ float round_to_odd_float(i64 v) {
  // Truncated toward zero, |f| <= |v| < 2^63, so f converts back exactly.
  float f = __ll2float_rz(v);
  if (static_cast<i64>(f) != v) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}

// Saturating truncation (NaN -> 0), as the CPU's float -> integer casts.
__device__ __forceinline__ i64 saturate(double v, double lo, double hi, i64 ilo, i64 ihi) {
  if (v != v) return 0;
  const double t = trunc(v);
  if (t >= hi) return ihi;
  if (t <= lo) return ilo;
  return static_cast<i64>(t);
}

// ---- per dtype: load as compute type, round a compute value to the dtype,
// store. Names: f32, f16, bf16, i32, i64, u8, bool.

__device__ __forceinline__ float load_f32(const void* p, i64 i) { return static_cast<const float*>(p)[i]; }
__device__ __forceinline__ float load_f16(const void* p, i64 i) { return f16_to_float(static_cast<const f16_t*>(p)[i]); }
__device__ __forceinline__ float load_bf16(const void* p, i64 i) { return bf16_to_float(static_cast<const bf16_t*>(p)[i]); }
__device__ __forceinline__ i64 load_i32(const void* p, i64 i) { return static_cast<const int*>(p)[i]; }
__device__ __forceinline__ i64 load_i64(const void* p, i64 i) { return static_cast<const i64*>(p)[i]; }
__device__ __forceinline__ i64 load_u8(const void* p, i64 i) { return static_cast<const unsigned char*>(p)[i]; }
__device__ __forceinline__ i64 load_bool(const void* p, i64 i) { return static_cast<const unsigned char*>(p)[i] != 0; }

__device__ __forceinline__ void store_f32(void* p, i64 i, float v) { static_cast<float*>(p)[i] = v; }
__device__ __forceinline__ void store_f16(void* p, i64 i, float v) { static_cast<f16_t*>(p)[i] = float_to_f16(v); }
__device__ __forceinline__ void store_bf16(void* p, i64 i, float v) { static_cast<bf16_t*>(p)[i] = float_to_bf16(v); }
__device__ __forceinline__ void store_i32(void* p, i64 i, i64 v) { static_cast<int*>(p)[i] = static_cast<int>(v); }
__device__ __forceinline__ void store_i64(void* p, i64 i, i64 v) { static_cast<i64*>(p)[i] = v; }
__device__ __forceinline__ void store_u8(void* p, i64 i, i64 v) { static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(v); }
__device__ __forceinline__ void store_bool(void* p, i64 i, i64 v) { static_cast<unsigned char*>(p)[i] = v != 0; }

// A computed value, rounded to what the dtype stores (then widened back).
__device__ __forceinline__ float round_f32(float v) { return v; }
__device__ __forceinline__ float round_f16(float v) { return f16_to_float(float_to_f16(v)); }
__device__ __forceinline__ float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }
__device__ __forceinline__ i64 round_i32(i64 v) { return static_cast<int>(v); }
__device__ __forceinline__ i64 round_i64(i64 v) { return v; }
__device__ __forceinline__ i64 round_u8(i64 v) { return static_cast<unsigned char>(v); }
__device__ __forceinline__ i64 round_bool(i64 v) { return v != 0; }

// ---- casts between compute types, with the target's rounding.

// From float (a value of f32, f16 or bf16) to each dtype.
__device__ __forceinline__ float cast_float_f32(float v) { return v; }
__device__ __forceinline__ float cast_float_f16(float v) { return round_f16(v); }
__device__ __forceinline__ float cast_float_bf16(float v) { return round_bf16(v); }
__device__ __forceinline__ i64 cast_float_i32(float v) { return saturate(v, -2147483648.0, 2147483647.0, -2147483648LL, 2147483647LL); }
__device__ __forceinline__ i64 cast_float_i64(float v) {
  return saturate(v, -9223372036854775808.0, 9223372036854775808.0, (-9223372036854775807LL - 1), 9223372036854775807LL);
}
__device__ __forceinline__ i64 cast_float_u8(float v) { return saturate(v, 0.0, 255.0, 0, 255); }
__device__ __forceinline__ i64 cast_float_bool(float v) { return v != 0.0f; }

// From an integer or bool to each dtype.
__device__ __forceinline__ float cast_int_f32(i64 v) { return __ll2float_rn(v); }
__device__ __forceinline__ float cast_int_f16(i64 v) { return f16_to_float(float_to_f16(round_to_odd_float(v))); }
__device__ __forceinline__ float cast_int_bf16(i64 v) { return bf16_to_float(float_to_bf16(round_to_odd_float(v))); }
__device__ __forceinline__ i64 cast_int_i32(i64 v) { return round_i32(v); }
__device__ __forceinline__ i64 cast_int_i64(i64 v) { return v; }
__device__ __forceinline__ i64 cast_int_u8(i64 v) { return round_u8(v); }
__device__ __forceinline__ i64 cast_int_bool(i64 v) { return v != 0; }

// From a double (constants, iota and random values) to each dtype, rounding
// once; the result is the stored value widened to its compute type.
__device__ __forceinline__ float from_double_f32(double v) { return static_cast<float>(v); }
__device__ __forceinline__ float from_double_f16(double v) { return f16_to_float(float_to_f16(round_to_odd_float(v))); }
__device__ __forceinline__ float from_double_bf16(double v) { return bf16_to_float(float_to_bf16(round_to_odd_float(v))); }
__device__ __forceinline__ i64 from_double_i32(double v) { return saturate(v, -2147483648.0, 2147483647.0, -2147483648LL, 2147483647LL); }
__device__ __forceinline__ i64 from_double_i64(double v) { return saturate(v, -9223372036854775808.0, 9223372036854775808.0, (-9223372036854775807LL - 1), 9223372036854775807LL); }
__device__ __forceinline__ i64 from_double_u8(double v) { return saturate(v, 0.0, 255.0, 0, 255); }
__device__ __forceinline__ i64 from_double_bool(double v) { return v != 0.0; }

// Error codes a kernel reports through the error word (first error wins).
enum ErrorCode : int { kNoError = 0, kIndexOutOfRange = 1, kDivisionByZero = 2 };

__device__ __forceinline__ void report(int* error, int code) {
  if (error != nullptr) atomicCAS(error, 0, code);
}

}  // namespace kiln

namespace kiln {
// Raw 16-bit elements, for tensor-core tiles (no conversion).
__device__ __forceinline__ unsigned short load_raw16(const void* p, i64 i) {
  return static_cast<const unsigned short*>(p)[i];
}
}  // namespace kiln

namespace kiln {
// An f32-stored value rounded to the 16-bit type a tensor-core tile takes.
__device__ __forceinline__ unsigned short load_f32_as_f16(const void* p, i64 i) {
  return float_to_f16(static_cast<const float*>(p)[i]);
}
__device__ __forceinline__ unsigned short load_f32_as_bf16(const void* p, i64 i) {
  return float_to_bf16(static_cast<const float*>(p)[i]);
}
}  // namespace kiln

namespace kiln {
// Tile loads in two halves: the raw bits first (so that a thread can have
// many loads in flight), widened to f32 later. Elements are 4 bytes (f32)
// or 2 (f16, bf16); a 16-byte vector holds 16 / element_bytes of them.
__device__ __forceinline__ unsigned load_bits_f32(const void* p, i64 i) { return static_cast<const unsigned*>(p)[i]; }
__device__ __forceinline__ unsigned load_bits_f16(const void* p, i64 i) { return static_cast<const unsigned short*>(p)[i]; }
__device__ __forceinline__ unsigned load_bits_bf16(const void* p, i64 i) { return static_cast<const unsigned short*>(p)[i]; }
__device__ __forceinline__ float bits_to_f32(unsigned b) { return __uint_as_float(b); }
__device__ __forceinline__ float bits_to_f16(unsigned b) { return f16_to_float(static_cast<f16_t>(b)); }
__device__ __forceinline__ float bits_to_bf16(unsigned b) { return __uint_as_float(b << 16); }

// Programmatic dependent launch (sm_90 and later): a kernel launched to
// start while the kernel before it finishes (jit::LaunchConfig::early)
// waits here, before it touches memory, until that kernel has completed and
// its writes are visible. Launched otherwise, or before sm_90, it returns at
// once. Every generated kernel calls it first.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the kernels after this one launch (programmatic dependent launch):
// their blocks may start, and prefetch into L2, while this one runs; they
// still wait (wait_for_prior_grid) for it to finish before reading.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// Asks L2 to fetch the 128-byte line holding element i of p, where that
// element's 16-byte vector starts the line (the threads whose whole copies
// cover a line ask once). Safe before wait_for_prior_grid: L2 is where
// every SM's writes land, so a line fetched early is updated by the kernel
// before, not left stale.
__device__ __forceinline__ void prefetch_l2(const void* p, i64 i, int element_bytes) {
  const char* at = static_cast<const char*>(p) + i * element_bytes;
  if ((reinterpret_cast<unsigned long long>(at) & 127u) < 16u) asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
}

// v, unknown to the compiler from here on. A loop bound passed through it
// keeps NVVM from unrolling the loop over the trip count it can bound
// otherwise: a flash kernel's loop of whole steps, two a pass and its
// copies clamped to the block's last step, came out 16 times over (528
// wgmma, 255 registers and spills) where a block's steps were few, and
// `#pragma unroll 1` did not stop it (CUDA 13.0).
__device__ __forceinline__ long long opaque(long long v) {
  asm volatile("" : "+l"(v));
  return v;
}
__device__ __forceinline__ int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}

// Whether element i of p starts a 16-byte aligned vector (only the low
// bits of the address matter: 32-bit arithmetic is exact).
__device__ __forceinline__ bool aligned16(const void* p, i64 i, int element_bytes) {
  const unsigned low = static_cast<unsigned>(reinterpret_cast<unsigned long long>(p));
  return ((low + static_cast<unsigned>(i) * static_cast<unsigned>(element_bytes)) & 15u) == 0;
}
__device__ __forceinline__ uint4 load16_bits(const void* p, i64 i, int element_bytes) {
  return *reinterpret_cast<const uint4*>(static_cast<const char*>(p) + i * element_bytes);
}
// A 16-byte vector of values stored at element i of p (aligned16 holds):
// 8 f16 or bf16, or 4 f32, each rounded as store_<dtype> rounds it.
__device__ __forceinline__ unsigned pack_bits16(unsigned short lo, unsigned short hi) {
  return static_cast<unsigned>(lo) | static_cast<unsigned>(hi) << 16;
}
__device__ __forceinline__ void store16_f16(void* p, i64 i, const float* v) {
  *reinterpret_cast<uint4*>(static_cast<f16_t*>(p) + i) = make_uint4(
      pack_bits16(float_to_f16(v[0]), float_to_f16(v[1])), pack_bits16(float_to_f16(v[2]), float_to_f16(v[3])),
      pack_bits16(float_to_f16(v[4]), float_to_f16(v[5])), pack_bits16(float_to_f16(v[6]), float_to_f16(v[7])));
}
__device__ __forceinline__ void store16_bf16(void* p, i64 i, const float* v) {
  *reinterpret_cast<uint4*>(static_cast<bf16_t*>(p) + i) = make_uint4(
      pack_bits16(float_to_bf16(v[0]), float_to_bf16(v[1])), pack_bits16(float_to_bf16(v[2]), float_to_bf16(v[3])),
      pack_bits16(float_to_bf16(v[4]), float_to_bf16(v[5])), pack_bits16(float_to_bf16(v[6]), float_to_bf16(v[7])));
}
__device__ __forceinline__ void store16_f32(void* p, i64 i, const float* v) {
  *reinterpret_cast<float4*>(static_cast<float*>(p) + i) = make_float4(v[0], v[1], v[2], v[3]);
}
// Where generic pointer `p` (into shared memory) lies in shared memory.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Asynchronous 16-byte copies from global to shared memory (cp.async,
// sm_80 and later; a plain copy before): a thread issues a loop step's
// copies, commits them as a group, and waits until at most N groups are
// pending before it reads what it copied itself (no barrier needed for
// that; other threads' copies need one after the wait).
__device__ __forceinline__ void copy_async16(uint4* dst, const void* p, i64 i, int element_bytes) {
  const char* src = static_cast<const char*>(p) + i * element_bytes;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned shared = shared_address(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src) : "memory");
#else
  *dst = *reinterpret_cast<const uint4*>(src);
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
// A block barrier that warps may reach from different places in the code
// (barrier.sync without .aligned; __syncthreads is the aligned form, which
// every thread must reach at the same instruction): the two warpgroups'
// loops of a ping-pong flash kernel each hold one.
__device__ __forceinline__ void sync_threads_unaligned() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("barrier.sync 0;\n" ::: "memory");
#else
  __syncthreads();
#endif
}
// A barrier of a group of the block's warps, `threads` threads (whole
// warps) on named barrier `id` (1-15; __syncthreads takes 0).
__device__ __forceinline__ void sync_warps(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// A thread block cluster's barrier (sm_90 and later), in two halves: every
// thread of every block of the cluster arrives (its shared memory writes
// released to the cluster) and, before it arrives again, waits for all the
// others (theirs acquired). The executor launches a kernel in clusters only
// on sm_90 and later (KernelSource::split_cluster); compiled for earlier
// targets, these are never reached and trap if they are.
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
// The float at `at` in this block's shared memory, read from the block of
// rank `rank` in its cluster instead (the same offset in that block's
// shared memory: distributed shared memory).
__device__ __forceinline__ float cluster_load(const float* at, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(at));
  unsigned remote;
  float value;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(value) : "r"(remote) : "memory");
  return value;
#else
  __trap();
  return *at;
#endif
}
// A split loop's count at a grid point (the caller's barrier first orders
// its block's partial sums): adds 1 and returns the count before it. The
// release makes the block's partials visible to whoever counts after it;
// the acquire makes every earlier block's visible to this one (its barrier
// after, to the rest of its threads). One atomic, no fence on either side.
__device__ __forceinline__ unsigned split_arrive(unsigned* counter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
  return before;
#else
  __threadfence();
  const unsigned before = atomicAdd(counter, 1u);
  __threadfence();
  return before;
#endif
}
// A load that later reads and writes of the thread cannot pass (acquire).
__device__ __forceinline__ unsigned load_acquire(const unsigned* at) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(at) : "memory");
  return value;
#else
  const unsigned value = *reinterpret_cast<const volatile unsigned*>(at);
  __threadfence();
  return value;
#endif
}
// A split loop's meeting at a grid point in a cooperative launch, where
// every block is resident and may wait: counts this block in at counter[0]
// (after the caller's barrier) and waits until all `blocks` have. The count
// is a reduction with release semantics (the block's partials visible to
// whoever acquires a count after it; no value comes back), the wait relaxed
// loads, and one acquire once they have all counted (their partials
// visible; the caller's barrier after, to the rest of its threads): an
// acquire's load invalidates the SM's L1 each time, which the polls need
// not. On an H200, MLA's decode step (stop 52's kernels, and the cluster
// form's) took 0.08-0.12 us less than polling by acquires.
__device__ __forceinline__ void split_gather(unsigned* counter, unsigned blocks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(counter) : "memory");
  unsigned seen;
  do {
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
  } while (seen < blocks);
  load_acquire(counter);
#else
  split_arrive(counter);
  while (load_acquire(counter) < blocks) {
  }
#endif
}
// After split_gather (by the thread that waited in it, or by another after
// the barrier that follows it): counts the block out at counter[1] and
// returns the count out before it, unread. The atomic's round trip runs
// under the caller's combine, and split_count_out at its end lets the last
// out zero both counters for the next launch, when no block reads
// counter[0] any more (each counted out after its last read of it, which
// the acquire or the barrier orders first). On an H100, gqa_bs1's kernel
// took 8.48 -> 7.90 us with the count out off the combine's way
// (hand-edited). Where a point has many blocks, it is issued after the
// barrier by a thread of another warp than those that read the blocks'
// maxes first (a warp's loads queued behind its atomic's round trip): on an
// H200, MLA's three kernels (64 blocks) 10.74 -> 10.61 us, hand-edited,
// three rounds each.
__device__ __forceinline__ unsigned split_leave(unsigned* counter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned before;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter + 1) : "memory");
  return before;
#else
  return atomicAdd(counter + 1, 1u);
#endif
}
// The end of a block's part after split_leave, given the count out it
// returned: the last of the `blocks` out zeroes the point's counters.
__device__ __forceinline__ void split_count_out(unsigned* counter, unsigned counted_out, unsigned blocks) {
  if (counted_out == blocks - 1) {
    counter[0] = 0u;
    counter[1] = 0u;
  }
}
// Element j of a vector (j and element_bytes constant once unrolled).
__device__ __forceinline__ unsigned vector_bits(const uint4& v, int j, int element_bytes) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  if (element_bytes == 4) return w[j];
  return (w[j / 2] >> (16 * (j % 2))) & 0xffffu;
}
__device__ __forceinline__ void set_vector_bits(uint4& v, int j, unsigned bits, int element_bytes) {
  unsigned w[4] = {v.x, v.y, v.z, v.w};
  if (element_bytes == 4) w[j] = bits;
  else w[j / 2] |= bits << (16 * (j % 2));  // v starts as zeros
  v = make_uint4(w[0], w[1], w[2], w[3]);
}
}  // namespace kiln
