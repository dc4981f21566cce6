#include "tensor/quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tensor/check.h"
#include "tensor/half.h"

// gguf-py rounds every product and sum to float32 on its own; a fused
// multiply-add would round once and change the low bits.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

constexpr QuantFormatInfo kFormats[] = {
#define KILN_QUANT_INFO(e, name, size, bytes) {QuantFormat::e, name, size, bytes},
    KILN_QUANT_FORMATS(KILN_QUANT_INFO)
#undef KILN_QUANT_INFO
};

float F16At(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return Half{bits}.ToFloat();
}

// Each decoder turns one block at `b` into block_size floats at `out`.

void DecodeQ8_0(const uint8_t* b, float* out) {
  const float d = F16At(b);
  for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

void DecodeQ4_0(const uint8_t* b, float* out) {
  const float d = F16At(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void DecodeQ4_1(const uint8_t* b, float* out) {
  const float d = F16At(b);
  const float m = F16At(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    const float lo = d * static_cast<float>(qs[j] & 0x0F);
    const float hi = d * static_cast<float>(qs[j] >> 4);
    out[j] = lo + m;
    out[j + 16] = hi + m;
  }
}

// Q5_0 and Q5_1 keep the fifth bit of element j in bit j of a 32-bit word.
int Q5Value(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
  return low | static_cast<int>(((qh >> j) & 1u) << 4);
}

void DecodeQ5_0(const uint8_t* b, float* out) {
  const float d = F16At(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(Q5Value(b + 6, qh, j) - 16);
}

void DecodeQ5_1(const uint8_t* b, float* out) {
  const float d = F16At(b);
  const float m = F16At(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < 32; ++j) {
    const float scaled = d * static_cast<float>(Q5Value(b + 8, qh, j));
    out[j] = scaled + m;
  }
}

// The 2-bit field of element e in K-quants that pack 128 elements per 32
// bytes: four 32-element runs share the bytes at shifts 0, 2, 4, 6.
int TwoBits(const uint8_t* qs, int e) {
  const int group = e / 128, run = (e % 128) / 32, lane = e % 32;
  return (qs[group * 32 + lane] >> (2 * run)) & 3;
}

// scales[16] qs[64] d dmin; sub-blocks of 16, a 4-bit scale and min each.
void DecodeQ2_K(const uint8_t* b, float* out) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = F16At(b + 80);
  const float dmin = F16At(b + 82);
  for (int s = 0; s < 16; ++s) {
    const float dl = d * static_cast<float>(scales[s] & 0x0F);
    const float ml = dmin * static_cast<float>(scales[s] >> 4);
    for (int i = 0; i < 16; ++i) {
      const int e = s * 16 + i;
      const float scaled = dl * static_cast<float>(TwoBits(qs, e));
      out[e] = scaled - ml;
    }
  }
}

// hmask[32] qs[64] scales[12] d; 6-bit signed scales for 16 sub-blocks, the
// third bit of element e in bit e/32 of hmask[e%32], set meaning "no -4".
void DecodeQ3_K(const uint8_t* b, float* out) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* packed = b + 96;
  const float d = F16At(b + 108);
  for (int s = 0; s < 16; ++s) {
    const int low = s < 8 ? packed[s] & 0x0F : packed[s - 8] >> 4;
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    const float dl = d * static_cast<float>((low | (high << 4)) - 32);
    for (int i = 0; i < 16; ++i) {
      const int e = s * 16 + i;
      const int subtract = ((hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4;
      out[e] = dl * static_cast<float>(TwoBits(qs, e) - subtract);
    }
  }
}

// Q4_K and Q5_K: 12 bytes hold 6-bit scales and mins of 8 sub-blocks of 32.
void KScaleMin(const uint8_t* p, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = p[s] & 0x3F;
    *min = p[s + 4] & 0x3F;
  } else {
    *scale = (p[s + 4] & 0x0F) | ((p[s - 4] >> 2) & 0x30);
    *min = (p[s + 4] >> 4) | ((p[s] >> 2) & 0x30);
  }
}

// The low 4 bits of element e: 64 elements per 32 bytes, low nibbles first.
int Nibble(const uint8_t* qs, int e) {
  const int group = e / 64, half = (e % 64) / 32, lane = e % 32;
  return (qs[group * 32 + lane] >> (4 * half)) & 0x0F;
}

// Q4_K and Q5_K share the super-block: d, dmin, the 12 scale bytes, then
// their bits; value e is d * scale * q(e) - dmin * min of its sub-block.
template <typename Q>
void DecodeScaleMinBlock(const uint8_t* b, float* out, Q q) {
  const float d = F16At(b);
  const float dmin = F16At(b + 2);
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    KScaleMin(b + 4, s, &sc, &m);
    const float ds = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      const int e = s * 32 + i;
      const float scaled = ds * static_cast<float>(q(e));
      out[e] = scaled - dm;
    }
  }
}

void DecodeQ4_K(const uint8_t* b, float* out) {
  const uint8_t* qs = b + 16;
  DecodeScaleMinBlock(b, out, [qs](int e) { return Nibble(qs, e); });
}

// d dmin scales[12] qh[32] qs[128]; bit 5 of element e is bit e/32 of qh[e%32].
void DecodeQ5_K(const uint8_t* b, float* out) {
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  DecodeScaleMinBlock(b, out, [qh, qs](int e) { return Nibble(qs, e) | (((qh[e % 32] >> (e / 32)) & 1) << 4); });
}

// ql[128] qh[64] scales[16] (int8) d; 6-bit values offset by 32. The low
// nibbles pack 128 elements per 64 bytes, the high bits as TwoBits does.
void DecodeQ6_K(const uint8_t* b, float* out) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const uint8_t* scales = b + 192;
  const float d = F16At(b + 208);
  for (int s = 0; s < 16; ++s) {
    const float ds = d * static_cast<float>(static_cast<int8_t>(scales[s]));
    for (int i = 0; i < 16; ++i) {
      const int e = s * 16 + i;
      const int group = e / 128, half = (e % 128) / 64, lane = e % 64;
      const int low = (ql[group * 64 + lane] >> (4 * half)) & 0x0F;
      const int q = low | (TwoBits(qh, e) << 4);
      out[e] = ds * static_cast<float>(q - 32);
    }
  }
}


using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder DecoderFor(QuantFormat format) {
  switch (format) {
    case QuantFormat::kQ8_0: return DecodeQ8_0;
    case QuantFormat::kQ4_0: return DecodeQ4_0;
    case QuantFormat::kQ4_1: return DecodeQ4_1;
    case QuantFormat::kQ5_0: return DecodeQ5_0;
    case QuantFormat::kQ5_1: return DecodeQ5_1;
    case QuantFormat::kQ2_K: return DecodeQ2_K;
    case QuantFormat::kQ3_K: return DecodeQ3_K;
    case QuantFormat::kQ4_K: return DecodeQ4_K;
    case QuantFormat::kQ5_K: return DecodeQ5_K;
    case QuantFormat::kQ6_K: return DecodeQ6_K;
  }
  KILN_UNREACHABLE("DecoderFor: a QuantFormat outside the list");
}

void StoreF16(float value, uint8_t* p) {
  const uint16_t bits = Half::FromFloat(value).bits;
  std::memcpy(p, &bits, 2);
}

// numpy's np_roundf in gguf-py: half away from zero, in float32.
float RoundHalfAway(float n) {
  const float a = std::fabs(n);
  const float floored = std::floor(a);
  const float b = floored + std::floor(2.0f * (a - floored));
  return n < 0 ? -b : (n > 0 ? b : 0.0f);
}

void EncodeQ8_0(const float* x, uint8_t* out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d == 0 ? 0.0f : 1.0f / d;
  StoreF16(d, out);
  for (int j = 0; j < 32; ++j) {
    const float q = RoundHalfAway(x[j] * id);
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
  }
}

void EncodeQ4_0(const float* x, uint8_t* out) {
  int imax = 0;  // the first value of largest magnitude, as numpy's argmax
  for (int j = 1; j < 32; ++j) {
    if (std::fabs(x[j]) > std::fabs(x[imax])) imax = j;
  }
  const float d = x[imax] / -8.0f;
  const float id = d == 0 ? 0.0f : 1.0f / d;
  StoreF16(d, out);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) {
    // gguf-py multiplies and adds in float64 (a float32 product is exact
    // there), then truncates and clips to 0..15.
    const double t = std::trunc(static_cast<double>(x[j]) * static_cast<double>(id) + 8.5);
    q[j] = static_cast<uint8_t>(std::clamp(t, 0.0, 15.0));
  }
  for (int j = 0; j < 16; ++j) out[2 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

// Q4_K: each sub-block of 32 spans [min(0, lo), hi] in 15 steps; its step
// and its (non-negative) offset are 6-bit multiples of the super-block's
// f16 d and dmin, fitted to the largest of each. The values are then
// rounded against the stored scales, so decoding reconstructs each to
// within half a step. (llama.cpp's own encoder searches the scales
// iteratively for a lower error; any encoder's blocks decode the same way.)
void EncodeQ4_K(const float* x, uint8_t* out) {
  float step[8], offset[8];
  float max_step = 0, max_offset = 0;
  for (int s = 0; s < 8; ++s) {
    float lo = 0, hi = 0;
    for (int i = 0; i < 32; ++i) {
      lo = std::min(lo, x[s * 32 + i]);
      hi = std::max(hi, x[s * 32 + i]);
    }
    step[s] = (hi - lo) / 15.0f;
    offset[s] = -lo;
    max_step = std::max(max_step, step[s]);
    max_offset = std::max(max_offset, offset[s]);
  }
  StoreF16(max_step / 63.0f, out);
  StoreF16(max_offset / 63.0f, out + 2);
  const float d = F16At(out), dmin = F16At(out + 2);
  uint8_t* packed = out + 4;
  std::memset(packed, 0, 12);
  uint8_t* qs = out + 16;
  std::memset(qs, 0, 128);
  for (int s = 0; s < 8; ++s) {
    const auto six_bits = [](float v, float unit) {
      return unit > 0 ? static_cast<int>(std::clamp(std::nearbyint(v / unit), 0.0f, 63.0f)) : 0;
    };
    // A step that rounds down would clip the sub-block's top: round it up.
    int sc = six_bits(step[s], d);
    if (sc < 63 && d * static_cast<float>(sc) * 15.0f < step[s] * 15.0f) ++sc;
    const int m = six_bits(offset[s], dmin);
    if (s < 4) {
      packed[s] = static_cast<uint8_t>(sc);
      packed[s + 4] = static_cast<uint8_t>(m);
    } else {
      packed[s + 4] = static_cast<uint8_t>((sc & 0x0F) | ((m & 0x0F) << 4));
      packed[s - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
      packed[s] |= static_cast<uint8_t>((m >> 4) << 6);
    }
    const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      const int e = s * 32 + i;
      const int q = ds > 0 ? static_cast<int>(std::clamp(std::nearbyint((x[e] + dm) / ds), 0.0f, 15.0f)) : 0;
      qs[(e / 64) * 32 + e % 32] |= static_cast<uint8_t>(q << (4 * ((e % 64) / 32)));
    }
  }
}

}  // namespace

const QuantFormatInfo& QuantInfo(QuantFormat format) {
  for (const QuantFormatInfo& info : kFormats) {
    if (info.format == format) return info;
  }
  KILN_UNREACHABLE("QuantInfo: a QuantFormat outside the list");
}

std::optional<QuantFormat> ParseQuantFormat(absl::string_view name) {
  for (const QuantFormatInfo& info : kFormats) {
    if (absl::EqualsIgnoreCase(name, info.name)) return info.format;
  }
  return std::nullopt;
}

const char* QuantFormatNames() { return "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K"; }

void DecodeQuantBlocks(QuantFormat format, const uint8_t* bytes, int64_t blocks, float* out) {
  const QuantFormatInfo& info = QuantInfo(format);
  const BlockDecoder decode = DecoderFor(format);
  for (int64_t i = 0; i < blocks; ++i) decode(bytes + i * info.block_bytes, out + i * info.block_size);
}

bool CanQuantize(QuantFormat format) {
  return format == QuantFormat::kQ8_0 || format == QuantFormat::kQ4_0 || format == QuantFormat::kQ4_K;
}

absl::Status EncodeQuantBlocks(QuantFormat format, absl::Span<const float> in, absl::Span<uint8_t> out) {
  const QuantFormatInfo& info = QuantInfo(format);
  if (!CanQuantize(format)) {
    return absl::UnimplementedError(
        absl::StrCat("quantizing to ", info.name, " is not implemented (kiln quantizes to Q8_0, Q4_0 and Q4_K)"));
  }
  const int64_t n = static_cast<int64_t>(in.size());
  if (n % info.block_size != 0 || static_cast<int64_t>(out.size()) != n / info.block_size * info.block_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("quantizing ", n, " values to ", info.name, " (blocks of ",
                                                   info.block_size, " in ", info.block_bytes, " bytes) into ",
                                                   out.size(), " bytes"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(in[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("quantizing to ", info.name, ": value ", i, " is ", in[i], "; only finite values quantize"));
    }
  }
  for (int64_t b = 0; b < n / info.block_size; ++b) {
    const float* x = in.data() + b * info.block_size;
    uint8_t* o = out.data() + b * info.block_bytes;
    switch (format) {
      case QuantFormat::kQ8_0: EncodeQ8_0(x, o); break;
      case QuantFormat::kQ4_0: EncodeQ4_0(x, o); break;
      default: EncodeQ4_K(x, o); break;
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln
