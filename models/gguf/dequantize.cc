#include "models/gguf/dequantize.h"

#include <bit>
#include <cstring>

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

namespace kiln::models {
namespace {

static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

constexpr int64_t kQK = 256;  // K-quant super-block

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::kF32, "F32", 1, 4},
    {GgmlType::kF16, "F16", 1, 2},
    {GgmlType::kQ4_0, "Q4_0", 32, 18},
    {GgmlType::kQ4_1, "Q4_1", 32, 20},
    {GgmlType::kQ5_0, "Q5_0", 32, 22},
    {GgmlType::kQ5_1, "Q5_1", 32, 24},
    {GgmlType::kQ8_0, "Q8_0", 32, 34},
    {GgmlType::kQ8_1, "Q8_1", 32, 40},
    {GgmlType::kQ2_K, "Q2_K", kQK, 84},
    {GgmlType::kQ3_K, "Q3_K", kQK, 110},
    {GgmlType::kQ4_K, "Q4_K", kQK, 144},
    {GgmlType::kQ5_K, "Q5_K", kQK, 176},
    {GgmlType::kQ6_K, "Q6_K", kQK, 210},
    {GgmlType::kQ8_K, "Q8_K", kQK, 292},
    {GgmlType::kIQ2_XXS, "IQ2_XXS", kQK, 66},
    {GgmlType::kIQ2_XS, "IQ2_XS", kQK, 74},
    {GgmlType::kIQ3_XXS, "IQ3_XXS", kQK, 98},
    {GgmlType::kIQ1_S, "IQ1_S", kQK, 50},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 18},
    {GgmlType::kIQ3_S, "IQ3_S", kQK, 110},
    {GgmlType::kIQ2_S, "IQ2_S", kQK, 82},
    {GgmlType::kIQ4_XS, "IQ4_XS", kQK, 136},
    {GgmlType::kI8, "I8", 1, 1},
    {GgmlType::kI16, "I16", 1, 2},
    {GgmlType::kI32, "I32", 1, 4},
    {GgmlType::kI64, "I64", 1, 8},
    {GgmlType::kF64, "F64", 1, 8},
    {GgmlType::kIQ1_M, "IQ1_M", kQK, 56},
    {GgmlType::kBF16, "BF16", 1, 2},
    {GgmlType::kTQ1_0, "TQ1_0", kQK, 54},
    {GgmlType::kTQ2_0, "TQ2_0", kQK, 66},
    {GgmlType::kMXFP4, "MXFP4", 32, 17},
    {GgmlType::kNVFP4, "NVFP4", 64, 36},
    {GgmlType::kQ1_0, "Q1_0", 128, 18},
    {GgmlType::kQ2_0, "Q2_0", 64, 18},
};

// Numbers ggml once used and retired; naming them tells a user the file is
// from an old or experimental converter.
constexpr std::pair<uint32_t, const char*> kRemovedTypes[] = {
    {4, "Q4_2"},      {5, "Q4_3"},        {31, "Q4_0_4_4"},   {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"}, {36, "IQ4_NL_4_4"}, {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"},
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

void DecodeQ4_K(const uint8_t* b, float* out) {
  const float d = F16At(b);
  const float dmin = F16At(b + 2);
  const uint8_t* qs = b + 16;
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    KScaleMin(b + 4, s, &sc, &m);
    const float ds = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      const int e = s * 32 + i;
      const float scaled = ds * static_cast<float>(Nibble(qs, e));
      out[e] = scaled - dm;
    }
  }
}

// d dmin scales[12] qh[32] qs[128]; bit 5 of element e is bit e/32 of qh[e%32].
void DecodeQ5_K(const uint8_t* b, float* out) {
  const float d = F16At(b);
  const float dmin = F16At(b + 2);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    KScaleMin(b + 4, s, &sc, &m);
    const float ds = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      const int e = s * 32 + i;
      const int q = Nibble(qs, e) | (((qh[e % 32] >> (e / 32)) & 1) << 4);
      const float scaled = ds * static_cast<float>(q);
      out[e] = scaled - dm;
    }
  }
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

void DecodeF32(const uint8_t* b, float* out) { std::memcpy(out, b, 4); }
void DecodeF16(const uint8_t* b, float* out) { *out = F16At(b); }
void DecodeBF16(const uint8_t* b, float* out) {
  uint16_t bits;
  std::memcpy(&bits, b, 2);
  *out = BFloat16{bits}.ToFloat();
}

using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder DecoderFor(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return DecodeF32;
    case GgmlType::kF16: return DecodeF16;
    case GgmlType::kBF16: return DecodeBF16;
    case GgmlType::kQ8_0: return DecodeQ8_0;
    case GgmlType::kQ4_0: return DecodeQ4_0;
    case GgmlType::kQ4_1: return DecodeQ4_1;
    case GgmlType::kQ5_0: return DecodeQ5_0;
    case GgmlType::kQ5_1: return DecodeQ5_1;
    case GgmlType::kQ2_K: return DecodeQ2_K;
    case GgmlType::kQ3_K: return DecodeQ3_K;
    case GgmlType::kQ4_K: return DecodeQ4_K;
    case GgmlType::kQ5_K: return DecodeQ5_K;
    case GgmlType::kQ6_K: return DecodeQ6_K;
    default: return nullptr;
  }
}

}  // namespace

const GgmlTypeInfo* FindGgmlType(uint32_t number) {
  for (const GgmlTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == number) return &info;
  }
  return nullptr;
}

const GgmlTypeInfo& GgmlTypeInfoOf(GgmlType type) {
  const GgmlTypeInfo* info = FindGgmlType(static_cast<uint32_t>(type));
  KILN_CHECK(info != nullptr, "GgmlTypeInfoOf: a GgmlType outside the table");
  return *info;
}

std::string GgmlTypeName(uint32_t number) {
  if (const GgmlTypeInfo* info = FindGgmlType(number)) return info->name;
  for (const auto& [n, name] : kRemovedTypes) {
    if (n == number)
      return absl::StrCat("type ", number, " (", name, ", no longer allowed in GGUF files)");
  }
  return absl::StrCat("unknown type ", number);
}

bool CanDequantize(GgmlType type) { return DecoderFor(type) != nullptr; }

const char* DequantizableTypeNames() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

absl::StatusOr<uint64_t> GgmlBytes(GgmlType type, int64_t elements) {
  const GgmlTypeInfo& info = GgmlTypeInfoOf(type);
  if (elements < 0 || elements % info.block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(elements, " elements of ", info.name,
                                                   " are not a whole number of its blocks of ",
                                                   info.block_size));
  }
  const uint64_t blocks = static_cast<uint64_t>(elements / info.block_size);
  uint64_t bytes;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info.block_bytes), &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(elements, " elements of ", info.name, " overflow a 64-bit size"));
  }
  return bytes;
}

absl::Status Dequantize(GgmlType type, absl::Span<const uint8_t> bytes, absl::Span<float> out) {
  const BlockDecoder decode = DecoderFor(type);
  if (decode == nullptr) {
    return absl::UnimplementedError(absl::StrCat("dequantizing ", GgmlTypeName(type),
                                                 " is not implemented (kiln decodes ",
                                                 DequantizableTypeNames(), ")"));
  }
  const GgmlTypeInfo& info = GgmlTypeInfoOf(type);
  absl::StatusOr<uint64_t> expected = GgmlBytes(type, static_cast<int64_t>(out.size()));
  if (!expected.ok()) return expected.status();
  if (*expected != bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("dequantizing ", out.size(), " ", info.name,
                                                   " values needs ", *expected, " bytes, got ",
                                                   bytes.size()));
  }
  const size_t blocks = out.size() / static_cast<size_t>(info.block_size);
  for (size_t i = 0; i < blocks; ++i) {
    decode(bytes.data() + i * static_cast<size_t>(info.block_bytes),
           out.data() + i * static_cast<size_t>(info.block_size));
  }
  return absl::OkStatus();
}

absl::Status FloatsToF16(absl::Span<const float> in, absl::Span<uint16_t> out) {
  if (in.size() != out.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FloatsToF16: ", in.size(), " values into ", out.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) out[i] = Half::FromFloat(in[i]).bits;
  return absl::OkStatus();
}

absl::Status FloatsToBF16(absl::Span<const float> in, absl::Span<uint16_t> out) {
  if (in.size() != out.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FloatsToBF16: ", in.size(), " values into ", out.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) out[i] = BFloat16::FromFloat(in[i]).bits;
  return absl::OkStatus();
}

}  // namespace kiln::models
