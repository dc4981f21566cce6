#include "models/gguf/dequantize.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "tensor/check.h"
#include "tensor/half.h"
#include "tensor/quant.h"

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

void DecodeF32(const uint8_t* b, float* out) { std::memcpy(out, b, 4); }
void DecodeF16(const uint8_t* b, float* out) {
  uint16_t bits;
  std::memcpy(&bits, b, 2);
  *out = Half{bits}.ToFloat();
}
void DecodeBF16(const uint8_t* b, float* out) {
  uint16_t bits;
  std::memcpy(&bits, b, 2);
  *out = BFloat16{bits}.ToFloat();
}

using PlainDecoder = void (*)(const uint8_t*, float*);

// The decoder of an unquantized type, one value at a time; nullptr otherwise.
PlainDecoder PlainDecoderFor(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return DecodeF32;
    case GgmlType::kF16: return DecodeF16;
    case GgmlType::kBF16: return DecodeBF16;
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

std::optional<QuantFormat> QuantFormatOf(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return QuantFormat::kQ8_0;
    case GgmlType::kQ4_0: return QuantFormat::kQ4_0;
    case GgmlType::kQ4_1: return QuantFormat::kQ4_1;
    case GgmlType::kQ5_0: return QuantFormat::kQ5_0;
    case GgmlType::kQ5_1: return QuantFormat::kQ5_1;
    case GgmlType::kQ2_K: return QuantFormat::kQ2_K;
    case GgmlType::kQ3_K: return QuantFormat::kQ3_K;
    case GgmlType::kQ4_K: return QuantFormat::kQ4_K;
    case GgmlType::kQ5_K: return QuantFormat::kQ5_K;
    case GgmlType::kQ6_K: return QuantFormat::kQ6_K;
    default: return std::nullopt;
  }
}

bool CanDequantize(GgmlType type) { return PlainDecoderFor(type) != nullptr || QuantFormatOf(type).has_value(); }

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
  const PlainDecoder plain = PlainDecoderFor(type);
  const std::optional<QuantFormat> format = QuantFormatOf(type);
  if (plain == nullptr && !format.has_value()) {
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
  if (format.has_value()) {
    DecodeQuantBlocks(*format, bytes.data(), static_cast<int64_t>(blocks), out.data());
    return absl::OkStatus();
  }
  for (size_t i = 0; i < blocks; ++i) plain(bytes.data() + i * static_cast<size_t>(info.block_bytes), out.data() + i);
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
