// Block-quantized formats, byte for byte as llama.cpp (ggml) stores them, so
// a GGUF tensor is used as its file holds it. A format packs `block_size`
// values into `block_bytes` bytes; a quantized matrix is u8 rows of whole
// blocks. Decoding is bit-exact with llama.cpp's gguf-py (gguf/quants.py),
// which does every step in float32 in a fixed order; encoding (Q8_0, Q4_0)
// follows its quantize_blocks.
#ifndef KILN_TENSOR_QUANT_H_
#define KILN_TENSOR_QUANT_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kiln {

// X(enumerator, name as llama.cpp spells it, block_size, block_bytes)
#define KILN_QUANT_FORMATS(X) \
  X(kQ8_0, "Q8_0", 32, 34)    \
  X(kQ4_0, "Q4_0", 32, 18)    \
  X(kQ4_1, "Q4_1", 32, 20)    \
  X(kQ5_0, "Q5_0", 32, 22)    \
  X(kQ5_1, "Q5_1", 32, 24)    \
  X(kQ2_K, "Q2_K", 256, 84)   \
  X(kQ3_K, "Q3_K", 256, 110)  \
  X(kQ4_K, "Q4_K", 256, 144)  \
  X(kQ5_K, "Q5_K", 256, 176)  \
  X(kQ6_K, "Q6_K", 256, 210)

enum class QuantFormat : uint8_t {
#define KILN_QUANT_ENUM(e, name, size, bytes) e,
  KILN_QUANT_FORMATS(KILN_QUANT_ENUM)
#undef KILN_QUANT_ENUM
};

#define KILN_QUANT_COUNT(e, name, size, bytes) +1
inline constexpr int kNumQuantFormats = 0 KILN_QUANT_FORMATS(KILN_QUANT_COUNT);
#undef KILN_QUANT_COUNT

struct QuantFormatInfo {
  QuantFormat format;
  const char* name;     // "Q8_0"
  int64_t block_size;   // values per block
  int64_t block_bytes;  // bytes per block
};

const QuantFormatInfo& QuantInfo(QuantFormat format);
inline absl::string_view QuantName(QuantFormat format) { return QuantInfo(format).name; }
// "Q8_0" or "q8_0"; nullopt for anything else.
std::optional<QuantFormat> ParseQuantFormat(absl::string_view name);
// "Q8_0, Q4_0, ..." for messages.
const char* QuantFormatNames();

// Decodes `blocks` whole blocks at `bytes` into blocks * block_size floats.
// Any bytes are valid input: NaN or infinite scales give NaN or infinite
// values.
void DecodeQuantBlocks(QuantFormat format, const uint8_t* bytes, int64_t blocks, float* out);

// Whether EncodeQuantBlocks encodes `format` (Q8_0, Q4_0 and Q4_K).
bool CanQuantize(QuantFormat format);
// Encodes in.size() values (whole blocks) into exactly the bytes they take.
// Q8_0 and Q4_0 as gguf-py's quantize does: Q8_0 scales each block by its
// largest magnitude / 127 and rounds half away from zero; Q4_0 by its value
// of largest magnitude / -8, offset by 8.5 and truncated. Q4_K (which
// gguf-py does not encode) fits each sub-block's range with 6-bit scales
// and mins; every value decodes to within half its sub-block's step. InvalidArgument for
// sizes that disagree and for NaN or infinite values (their bytes would be
// meaningless); Unimplemented for formats CanQuantize refuses.
absl::Status EncodeQuantBlocks(QuantFormat format, absl::Span<const float> in, absl::Span<uint8_t> out);

}  // namespace kiln

#endif  // KILN_TENSOR_QUANT_H_
