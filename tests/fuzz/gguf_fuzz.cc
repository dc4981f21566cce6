// GGUF parsing and dequantization on arbitrary bytes: parse, describe every
// metadata value, read every typed getter, and decode the tensors (at most
// kMaxValues values in all, so one input stays fast).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_file.h"

namespace {

constexpr int64_t kMaxValues = int64_t{1} << 18;

using kiln::models::GgufFile;
using kiln::models::GgufValue;

void Walk(const GgufValue& v, int depth) {
  (void)v.AsInt();
  (void)v.AsUint();
  (void)v.AsDouble();
  (void)v.AsBool();
  (void)v.AsString();
  if (!v.is_array() || depth > 16) return;
  const uint64_t n = v.size() < 64 ? v.size() : 64;
  for (uint64_t i = 0; i < n; ++i) Walk(v.Element(i), depth + 1);
}

void Exercise(const GgufFile& f) {
  for (const auto& kv : f.metadata()) {
    (void)kv.value.ToString();
    Walk(kv.value, 0);
    (void)f.GetInt(kv.key);
    (void)f.GetU32(kv.key);
    (void)f.GetF32(kv.key);
    (void)f.GetBool(kv.key);
    (void)f.GetString(kv.key);
    (void)f.GetStringArray(kv.key);
    if (kv.value.size() <= 4096) {
      (void)f.GetF32Array(kv.key);
      (void)f.GetIntArray(kv.key);
    }
  }
  int64_t budget = kMaxValues;
  std::vector<float> values;
  for (const kiln::models::GgufTensorInfo& t : f.tensors()) {
    (void)t.Describe();
    const kiln::models::GgmlTypeInfo& info = kiln::models::GgmlTypeInfoOf(t.type);
    const int64_t blocks = std::min(t.elements(), budget) / info.block_size;
    if (blocks == 0) continue;
    budget -= blocks * info.block_size;
    values.resize(static_cast<size_t>(blocks * info.block_size));
    const absl::Span<const uint8_t> bytes = f.TensorData(t).subspan(0, blocks * info.block_bytes);
    const absl::Status s = kiln::models::Dequantize(t.type, bytes, absl::MakeSpan(values));
    if (s.ok() != kiln::models::CanDequantize(t.type)) __builtin_trap();
    std::vector<uint16_t> half(values.size());
    (void)kiln::models::FloatsToF16(values, absl::MakeSpan(half));
    (void)kiln::models::FloatsToBF16(values, absl::MakeSpan(half));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<GgufFile> f =
      GgufFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
  if (f.ok()) Exercise(*f);
  return 0;
}
