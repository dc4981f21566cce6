// GGUF files (llama.cpp's format), versions 2 and 3, little-endian:
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: (string key, u32 value type, value)...,
//   tensor infos: (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
//                  u64 offset)...,
//   padding to general.alignment (default 32), then the tensors' data, each
//   at its offset from the start of that data section.
// Strings are a u64 length and bytes; arrays a u32 element type, a u64 count
// and the elements (arrays of arrays included). ne[0] is the fastest-varying
// dimension (a row's length): ne is the row-major shape reversed.
#ifndef KILN_MODELS_GGUF_GGUF_FILE_H_
#define KILN_MODELS_GGUF_GGUF_FILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/gguf/dequantize.h"

namespace kiln::models {

enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u32", "string", "array".
const char* GgufTypeName(GgufType type);

// One metadata value. Strings and arrays view the file's bytes, so a value
// lives no longer than the GgufFile it came from.
class GgufValue {
 public:
  GgufType type() const { return type_; }
  // Where the value starts in the file (for messages).
  uint64_t offset() const { return offset_; }

  bool is_integer() const;  // u8 ... i64
  bool is_float() const { return type_ == GgufType::kF32 || type_ == GgufType::kF64; }
  bool is_array() const { return type_ == GgufType::kArray; }

  // Scalars, converted where nothing is lost: AsInt for any integer type that
  // fits in int64; AsUint for a non-negative integer; AsDouble for f32, f64
  // and integers (large ones rounded). nullopt for other types.
  std::optional<int64_t> AsInt() const;
  std::optional<uint64_t> AsUint() const;
  std::optional<double> AsDouble() const;
  std::optional<bool> AsBool() const;
  std::optional<absl::string_view> AsString() const;

  // Arrays: the element type and count, and element i as a value of its own
  // (a copy for nested arrays). strings() and arrays() view arrays of
  // strings and of arrays without copying (empty for other arrays).
  GgufType element_type() const { return element_type_; }
  uint64_t size() const { return count_; }
  GgufValue Element(uint64_t i) const;
  absl::Span<const absl::string_view> strings() const { return strings_; }
  absl::Span<const GgufValue> arrays() const { return arrays_; }

  // "u32 4096", "string \"llama\"", "array of 32000 string [\"<unk>\", ...]",
  // at most `max_elements` elements and strings cut to 60 bytes, escaped.
  std::string ToString(size_t max_elements = 6) const;

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::kU8;
  GgufType element_type_ = GgufType::kU8;
  uint64_t offset_ = 0;
  uint64_t bits_ = 0;        // a fixed-size scalar's little-endian bytes, zero-extended
  uint64_t count_ = 0;       // array length
  absl::string_view bytes_;  // a string's text; the packed elements of a scalar array
  std::vector<absl::string_view> strings_;
  std::vector<GgufValue> arrays_;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> dims;  // ne: dims[0] is the row length
  uint64_t offset = 0;        // from the start of the data section
  uint64_t bytes = 0;
  uint64_t info_offset = 0;  // where the entry is in the file (for messages)

  int64_t elements() const;
  int64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
  // The row-major shape, outermost first (dims reversed): ne [4096, 32000]
  // is [32000, 4096].
  std::vector<int64_t> shape() const;
  // "Q4_K [4096, 32000]" (GGUF order, row length first).
  std::string Describe() const;
};

class GgufFile {
 public:
  // Memory-maps the file and checks the header, every metadata value and
  // every tensor's range against the file size before allocating anything
  // sized by the file. InvalidArgument naming the path, the key or tensor
  // and the byte offset; Unimplemented for GGUF version 1, versions past 3
  // and big-endian files; NotFound / PermissionDenied from opening.
  static absl::StatusOr<GgufFile> Open(const std::string& path);
  // The same for bytes in memory (tests, fuzzing); `name` stands for the path
  // in messages.
  static absl::StatusOr<GgufFile> FromBytes(std::string bytes, std::string name = "<memory>");

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // the data section's start
  uint64_t file_size() const { return size_; }

  // In file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const GgufValue* Find(absl::string_view key) const;

  // Typed access: NotFound naming the key when it is missing, InvalidArgument
  // naming the key, its type and offset when it holds something else.
  // Integer getters take any integer type whose value fits (converters
  // differ in which they write); float getters also take integers.
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;
  absl::StatusOr<uint32_t> GetU32(absl::string_view key) const;
  absl::StatusOr<uint64_t> GetU64(absl::string_view key) const;
  absl::StatusOr<float> GetF32(absl::string_view key) const;
  absl::StatusOr<double> GetF64(absl::string_view key) const;
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  absl::StatusOr<absl::string_view> GetString(absl::string_view key) const;
  absl::StatusOr<absl::Span<const absl::string_view>> GetStringArray(absl::string_view key) const;
  absl::StatusOr<std::vector<float>> GetF32Array(absl::string_view key) const;
  absl::StatusOr<std::vector<int64_t>> GetIntArray(absl::string_view key) const;

  // In file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(absl::string_view name) const;
  // The bytes of `tensor`, one of tensors() (the parser checked that they lie
  // within the file).
  absl::Span<const uint8_t> TensorData(const GgufTensorInfo& tensor) const;
  // Keeps the bytes alive: owner of tensors wrapped in place.
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // An InvalidArgument error naming the file, the key and where its value is.
  absl::Status KeyError(absl::string_view key, absl::string_view why) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::string path_;
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_GGUF_GGUF_FILE_H_
