// Writes GGUF bytes for tests: well-formed files laid out as llama.cpp's
// writer does, and the pieces to build malformed ones by hand.
#ifndef KILN_TESTS_MODELS_GGUF_GGUF_BUILDER_H_
#define KILN_TESTS_MODELS_GGUF_GGUF_BUILDER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "models/gguf/gguf_file.h"
#include "tensor/half.h"

namespace kiln::models::testing {

// Little-endian bytes of a scalar.
template <typename T>
std::string Le(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

// A GGUF string: u64 length, then the bytes.
inline std::string Str(absl::string_view s) { return Le<uint64_t>(s.size()) + std::string(s); }

// An array value (without the outer u32 type): element type, count, elements.
inline std::string ArrayOf(GgufType element, uint64_t count, const std::string& elements) {
  return Le<uint32_t>(static_cast<uint32_t>(element)) + Le<uint64_t>(count) + elements;
}

inline std::string F32Bytes(const std::vector<float>& v) {
  std::string out;
  for (float x : v) out += Le(x);
  return out;
}
inline std::string F16Bytes(const std::vector<float>& v) {
  std::string out;
  for (float x : v) out += Le(Half::FromFloat(x).bits);
  return out;
}
inline std::string BF16Bytes(const std::vector<float>& v) {
  std::string out;
  for (float x : v) out += Le(BFloat16::FromFloat(x).bits);
  return out;
}

class GgufBuilder {
 public:
  struct TensorEntry {
    std::string name;
    std::vector<uint64_t> dims;  // ne, row length first
    uint32_t type;
    std::string data;
    std::optional<uint64_t> offset;  // default: after the previous one, aligned
  };

  uint32_t version = 3;
  std::string magic = "GGUF";
  uint64_t alignment = 32;  // the layout's; write general.alignment to change the reader's
  std::optional<uint64_t> tensor_count, metadata_count;  // override the real counts

  // `value` is the encoded value, after its u32 type.
  GgufBuilder& Add(absl::string_view key, GgufType type, const std::string& value) {
    entries_.push_back(Str(key) + Le<uint32_t>(static_cast<uint32_t>(type)) + value);
    return *this;
  }
  GgufBuilder& U32(absl::string_view key, uint32_t v) { return Add(key, GgufType::kU32, Le(v)); }
  GgufBuilder& I32(absl::string_view key, int32_t v) { return Add(key, GgufType::kI32, Le(v)); }
  GgufBuilder& U64(absl::string_view key, uint64_t v) { return Add(key, GgufType::kU64, Le(v)); }
  GgufBuilder& F32(absl::string_view key, float v) { return Add(key, GgufType::kF32, Le(v)); }
  GgufBuilder& Bool(absl::string_view key, bool v) {
    return Add(key, GgufType::kBool, Le<uint8_t>(v ? 1 : 0));
  }
  GgufBuilder& String(absl::string_view key, absl::string_view v) {
    return Add(key, GgufType::kString, Str(v));
  }
  GgufBuilder& Strings(absl::string_view key, const std::vector<std::string>& v) {
    std::string elements;
    for (const std::string& s : v) elements += Str(s);
    return Add(key, GgufType::kArray, ArrayOf(GgufType::kString, v.size(), elements));
  }
  GgufBuilder& F32s(absl::string_view key, const std::vector<float>& v) {
    return Add(key, GgufType::kArray, ArrayOf(GgufType::kF32, v.size(), F32Bytes(v)));
  }
  GgufBuilder& I32s(absl::string_view key, const std::vector<int32_t>& v) {
    std::string elements;
    for (int32_t x : v) elements += Le(x);
    return Add(key, GgufType::kArray, ArrayOf(GgufType::kI32, v.size(), elements));
  }

  GgufBuilder& Tensor(absl::string_view name, std::vector<uint64_t> dims, GgmlType type,
                      std::string data, std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back(
        {std::string(name), std::move(dims), static_cast<uint32_t>(type), std::move(data), offset});
    return *this;
  }
  std::vector<TensorEntry>& tensors() { return tensors_; }

  // The whole file. Tensors without an explicit offset follow each other,
  // each aligned; the data section is zero-filled between them. Data placed
  // past 1 MiB (offsets meant to be out of range) is left out.
  std::string Build() const {
    std::string out = magic + Le(version) + Le<uint64_t>(tensor_count.value_or(tensors_.size())) +
                      Le<uint64_t>(metadata_count.value_or(entries_.size()));
    for (const std::string& e : entries_) out += e;
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const TensorEntry& t : tensors_) {
      const uint64_t offset = t.offset.value_or(Align(next));
      offsets.push_back(offset);
      if (offset < kMaxData && t.data.size() < kMaxData)
        next = std::max(next, offset + t.data.size());
      out += Str(t.name) + Le<uint32_t>(t.dims.size());
      for (uint64_t d : t.dims) out += Le(d);
      out += Le(t.type) + Le(offset);
    }
    if (tensors_.empty()) return out;
    out.resize(Align(out.size()), '\0');
    const size_t data_start = out.size();
    out.resize(data_start + next, '\0');
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (offsets[i] + tensors_[i].data.size() > next) continue;
      std::memcpy(out.data() + data_start + offsets[i], tensors_[i].data.data(),
                  tensors_[i].data.size());
    }
    return out;
  }

 private:
  static constexpr uint64_t kMaxData = uint64_t{1} << 20;
  uint64_t Align(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }

  std::vector<std::string> entries_;
  std::vector<TensorEntry> tensors_;
};

}  // namespace kiln::models::testing

#endif  // KILN_TESTS_MODELS_GGUF_GGUF_BUILDER_H_
