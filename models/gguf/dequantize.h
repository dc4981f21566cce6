// ggml's tensor types (the numbers GGUF files store for each tensor) and the
// decoding of the common ones to float, bit-exact with llama.cpp's gguf-py
// (gguf/quants.py), which does every step in float32 in a fixed order.
#ifndef KILN_MODELS_GGUF_DEQUANTIZE_H_
#define KILN_MODELS_GGUF_DEQUANTIZE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tensor/quant.h"

namespace kiln::models {

// The numbers are ggml's (ggml.h); gaps are types removed from GGUF files.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;     // as llama.cpp spells it (gguf-py): "Q4_K", "BF16"
  int64_t block_size;   // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};

// The type with this number; nullptr for numbers that are no ggml type in a
// GGUF file (unknown, or removed such as 4 and 31).
const GgmlTypeInfo* FindGgmlType(uint32_t number);
// The info of a known type.
const GgmlTypeInfo& GgmlTypeInfoOf(GgmlType type);
// "Q4_K"; "type 31 (Q4_0_4_4, no longer allowed in GGUF files)"; "unknown type 99".
std::string GgmlTypeName(uint32_t number);
inline std::string GgmlTypeName(GgmlType type) { return GgmlTypeName(static_cast<uint32_t>(type)); }

// The block format of a quantized type kiln decodes (Q8_0 ... Q6_K);
// nullopt for plain and unsupported types.
std::optional<QuantFormat> QuantFormatOf(GgmlType type);

// Whether Dequantize decodes `type`: F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool CanDequantize(GgmlType type);
// "F32, F16, ..." for messages.
const char* DequantizableTypeNames();

// The bytes `elements` values of `type` take; InvalidArgument when elements
// is negative, not a multiple of the block size, or the size overflows.
absl::StatusOr<uint64_t> GgmlBytes(GgmlType type, int64_t elements);

// Decodes out.size() values (a multiple of the block size) stored as `type`
// in `bytes` (exactly GgmlBytes of them). Any bytes are valid input: NaN or
// infinite scales give NaN or infinite values. Unimplemented naming the type
// for types CanDequantize refuses; InvalidArgument when the sizes disagree.
absl::Status Dequantize(GgmlType type, absl::Span<const uint8_t> bytes, absl::Span<float> out);

// Rounds each float to f16 / bf16 bits, to nearest even (as numpy's astype
// and gguf-py's BF16 quantize do; NaN stays NaN). The spans must be the same
// length (InvalidArgument otherwise).
absl::Status FloatsToF16(absl::Span<const float> in, absl::Span<uint16_t> out);
absl::Status FloatsToBF16(absl::Span<const float> in, absl::Span<uint16_t> out);

}  // namespace kiln::models

#endif  // KILN_MODELS_GGUF_DEQUANTIZE_H_
