#include "models/gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/mapped_file.h"
#include "tensor/check.h"

namespace kiln::models {
namespace {

static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Nested arrays are rare (llama.cpp's own reader refuses them); bounding them
// bounds the parser's recursion and the memory a crafted file can claim.
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMaxNestedArrays = uint64_t{1} << 16;
// The smallest encodings: a metadata entry (8-byte key length, a 1-byte key,
// u32 type, a u8 value), a tensor info (length, 1-byte name, n_dims 0, type,
// offset), a string, an array header.
constexpr uint64_t kMinEntryBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;

// The encoded size of a fixed-size value type; 0 for strings and arrays.
uint64_t ScalarBytes(GgufType type) {
  switch (type) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool: return 1;
    case GgufType::kU16:
    case GgufType::kI16: return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32: return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64: return 8;
    case GgufType::kString:
    case GgufType::kArray: return 0;
  }
  return 0;
}

bool IsGgufType(uint32_t number) { return number <= static_cast<uint32_t>(GgufType::kF64); }

std::string Quoted(absl::string_view text, size_t limit = 60) {
  const bool cut = text.size() > limit;
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, limit)), cut ? "...\"" : "\"");
}

}  // namespace

const char* GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "?";
}

// ---------------------------------------------------------------- values

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64: return true;
    default: return false;
  }
}

std::optional<int64_t> GgufValue::AsInt() const {
  switch (type_) {
    case GgufType::kU8: return static_cast<uint8_t>(bits_);
    case GgufType::kI8: return static_cast<int8_t>(bits_);
    case GgufType::kU16: return static_cast<uint16_t>(bits_);
    case GgufType::kI16: return static_cast<int16_t>(bits_);
    case GgufType::kU32: return static_cast<uint32_t>(bits_);
    case GgufType::kI32: return static_cast<int32_t>(bits_);
    case GgufType::kI64: return static_cast<int64_t>(bits_);
    case GgufType::kU64:
      if (bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(bits_);
    default: return std::nullopt;
  }
}

std::optional<uint64_t> GgufValue::AsUint() const {
  if (type_ == GgufType::kU64) return bits_;
  const std::optional<int64_t> v = AsInt();
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::optional<double> GgufValue::AsDouble() const {
  if (type_ == GgufType::kF32) return std::bit_cast<float>(static_cast<uint32_t>(bits_));
  if (type_ == GgufType::kF64) return std::bit_cast<double>(bits_);
  if (type_ == GgufType::kU64) return static_cast<double>(bits_);
  if (const std::optional<int64_t> v = AsInt()) return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<bool> GgufValue::AsBool() const {
  if (type_ != GgufType::kBool) return std::nullopt;
  return bits_ != 0;
}

std::optional<absl::string_view> GgufValue::AsString() const {
  if (type_ != GgufType::kString) return std::nullopt;
  return bytes_;
}

GgufValue GgufValue::Element(uint64_t i) const {
  KILN_CHECK(is_array() && i < count_, "GgufValue::Element: not an array, or past its end");
  if (element_type_ == GgufType::kArray) return arrays_[i];
  GgufValue v;
  v.type_ = element_type_;
  v.offset_ = offset_;
  if (element_type_ == GgufType::kString) {
    v.bytes_ = strings_[i];
  } else {
    const uint64_t size = ScalarBytes(element_type_);
    std::memcpy(&v.bits_, bytes_.data() + i * size, size);
  }
  return v;
}

std::string GgufValue::ToString(size_t max_elements) const {
  switch (type_) {
    case GgufType::kString: return absl::StrCat("string ", Quoted(bytes_));
    case GgufType::kBool: return bits_ ? "bool true" : "bool false";
    case GgufType::kF32:
    case GgufType::kF64: return absl::StrCat(GgufTypeName(type_), " ", *AsDouble());
    case GgufType::kU64: return absl::StrCat("u64 ", bits_);
    case GgufType::kArray: {
      std::vector<std::string> shown;
      for (uint64_t i = 0; i < count_ && i < max_elements; ++i) {
        const GgufValue e = Element(i);
        const std::string text = e.ToString(max_elements);
        // Elements without their type, which the header names once.
        shown.push_back(e.is_array() ? text : text.substr(text.find(' ') + 1));
      }
      if (count_ > max_elements) shown.push_back("...");
      return absl::StrCat("array of ", count_, " ", GgufTypeName(element_type_), " [",
                          absl::StrJoin(shown, ", "), "]");
    }
    default: return absl::StrCat(GgufTypeName(type_), " ", *AsInt());
  }
}

// ---------------------------------------------------------------- tensors

int64_t GgufTensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // the parser checked that this cannot overflow
  return n;
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

std::string GgufTensorInfo::Describe() const {
  return absl::StrCat(GgmlTypeName(type), " [", absl::StrJoin(dims, ", "), "]");
}

// ---------------------------------------------------------------- parsing

class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : f_(file) {}

  absl::Status Parse() {
    if (absl::Status s = ParseHeader(); !s.ok()) return s;
    if (absl::Status s = ParseMetadata(); !s.ok()) return s;
    if (absl::Status s = ReadAlignment(); !s.ok()) return s;
    if (absl::Status s = ParseTensorInfos(); !s.ok()) return s;
    return CheckTensorRanges();
  }

 private:
  template <typename... A>
  absl::Status Bad(uint64_t at, const A&... why) const {
    return absl::InvalidArgumentError(absl::StrCat(f_.path_, ": ", why..., " (at byte ", at, ")"));
  }
  uint64_t remaining() const { return f_.size_ - pos_; }
  absl::Status Truncated(uint64_t need, absl::string_view what) const {
    return Bad(pos_, "the file ends inside ", what, ": ", need, " bytes needed, ", remaining(),
               " left (the file is ", f_.size_, " bytes)");
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    if (remaining() < sizeof(T)) return Truncated(sizeof(T), what);
    T value;
    std::memcpy(&value, f_.data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  absl::StatusOr<absl::string_view> ReadString(absl::string_view what) {
    const uint64_t at = pos_;
    absl::StatusOr<uint64_t> length = Read<uint64_t>(absl::StrCat("the length of ", what));
    if (!length.ok()) return length.status();
    if (*length > remaining()) {
      return Bad(at, what, " claims ", *length, " bytes, but only ", remaining(),
                 " remain in the file");
    }
    const absl::string_view text(reinterpret_cast<const char*>(f_.data_ + pos_), *length);
    pos_ += *length;
    return text;
  }

  absl::Status ParseHeader() {
    // Newer writers mark big-endian files with the magic's bytes reversed;
    // older ones kept "GGUF" and only the numbers tell (below).
    if (f_.size_ >= 4 && std::memcmp(f_.data_, "FUGG", 4) == 0) {
      return absl::UnimplementedError(
          absl::StrCat(f_.path_,
                       ": a big-endian GGUF file (magic \"FUGG\"); kiln reads little-endian files "
                       "(llama.cpp's gguf_convert_endian.py converts them)"));
    }
    if (f_.size_ < 4 || std::memcmp(f_.data_, "GGUF", 4) != 0) {
      const absl::string_view start(reinterpret_cast<const char*>(f_.data_),
                                    std::min<uint64_t>(f_.size_, 4));
      return Bad(0, "not a GGUF file: it starts with ", Quoted(start), ", not \"GGUF\"");
    }
    pos_ = 4;
    absl::StatusOr<uint32_t> version = Read<uint32_t>("the version");
    if (!version.ok()) return version.status();
    const uint32_t v = *version;
    const uint32_t swapped = __builtin_bswap32(v);
    if (v == 1) {
      return absl::UnimplementedError(
          absl::StrCat(f_.path_,
                       ": GGUF version 1 is not supported (kiln reads versions 2 and 3; convert "
                       "the model again with a current llama.cpp)"));
    }
    if (v != 2 && v != 3 && swapped >= 1 && swapped <= 3) {
      return absl::UnimplementedError(absl::StrCat(
          f_.path_, ": a big-endian GGUF file (its version reads ", v, ", i.e. ", swapped,
          " byte-swapped); kiln reads little-endian files (llama.cpp's gguf_convert_endian.py "
          "converts them)"));
    }
    if (v > 3 && v < 0x10000) {
      return absl::UnimplementedError(absl::StrCat(f_.path_, ": GGUF version ", v,
                                                   " is newer than kiln reads (versions 2 and 3)"));
    }
    if (v != 2 && v != 3) return Bad(4, "the version field ", v, " is not a GGUF version");
    f_.version_ = v;
    absl::StatusOr<uint64_t> tensors = Read<uint64_t>("the tensor count");
    if (!tensors.ok()) return tensors.status();
    absl::StatusOr<uint64_t> entries = Read<uint64_t>("the metadata count");
    if (!entries.ok()) return entries.status();
    if (*tensors > remaining() / kMinTensorInfoBytes) {
      return Bad(8, "tensor count ", *tensors, " cannot fit in the ", remaining(),
                 " bytes that follow (a tensor info takes at least ", kMinTensorInfoBytes, ")");
    }
    if (*entries > (remaining() - *tensors * kMinTensorInfoBytes) / kMinEntryBytes) {
      return Bad(16, "metadata count ", *entries, " cannot fit in the ", remaining(),
                 " bytes that follow with ", *tensors, " tensor infos (an entry takes at least ",
                 kMinEntryBytes, ")");
    }
    tensor_count_ = *tensors;
    entry_count_ = *entries;
    return absl::OkStatus();
  }

  absl::Status ParseMetadata() {
    for (uint64_t i = 0; i < entry_count_; ++i) {
      const uint64_t at = pos_;
      absl::StatusOr<absl::string_view> key =
          ReadString(absl::StrCat("the key of metadata entry ", i));
      if (!key.ok()) return key.status();
      if (key->empty()) return Bad(at, "metadata entry ", i, " has an empty key");
      if (const auto it = f_.key_index_.find(*key); it != f_.key_index_.end()) {
        return Bad(at, "metadata key ", Quoted(*key), " appears twice (first value at byte ",
                   f_.metadata_[it->second].value.offset(), ")");
      }
      const uint64_t type_at = pos_;
      absl::StatusOr<uint32_t> type = Read<uint32_t>(absl::StrCat("the type of ", Quoted(*key)));
      if (!type.ok()) return type.status();
      if (!IsGgufType(*type)) {
        return Bad(type_at, "metadata ", Quoted(*key), " has value type ", *type,
                   ", which is not a GGUF type (0-12)");
      }
      GgufKeyValue entry{std::string(*key), GgufValue()};
      if (absl::Status s = ParseValue(static_cast<GgufType>(*type), entry.key, 0, entry.value);
          !s.ok()) {
        return s;
      }
      f_.key_index_.emplace(entry.key, f_.metadata_.size());
      f_.metadata_.push_back(std::move(entry));
    }
    return absl::OkStatus();
  }

  // A value of `type` at pos_, for metadata `key`, inside `depth` arrays.
  absl::Status ParseValue(GgufType type, const std::string& key, int depth, GgufValue& out) {
    out.type_ = type;
    out.offset_ = pos_;
    if (type == GgufType::kString) {
      absl::StatusOr<absl::string_view> text =
          ReadString(absl::StrCat("the value of ", Quoted(key)));
      if (!text.ok()) return text.status();
      out.bytes_ = *text;
      return absl::OkStatus();
    }
    if (type == GgufType::kArray) return ParseArray(key, depth, out);
    const uint64_t size = ScalarBytes(type);
    if (remaining() < size) {
      return Truncated(size, absl::StrCat("the ", GgufTypeName(type), " value of ", Quoted(key)));
    }
    std::memcpy(&out.bits_, f_.data_ + pos_, size);
    if (type == GgufType::kBool && out.bits_ > 1) {
      return Bad(pos_, "metadata ", Quoted(key), ": bool value ", out.bits_, " is not 0 or 1");
    }
    pos_ += size;
    return absl::OkStatus();
  }

  absl::Status ParseArray(const std::string& key, int depth, GgufValue& out) {
    const uint64_t at = pos_;
    const std::string what = absl::StrCat("the array ", Quoted(key));
    absl::StatusOr<uint32_t> element = Read<uint32_t>(absl::StrCat("the element type of ", what));
    if (!element.ok()) return element.status();
    if (!IsGgufType(*element)) {
      return Bad(at, what, " has element type ", *element, ", which is not a GGUF type (0-12)");
    }
    absl::StatusOr<uint64_t> count = Read<uint64_t>(absl::StrCat("the length of ", what));
    if (!count.ok()) return count.status();
    const GgufType type = static_cast<GgufType>(*element);
    out.element_type_ = type;
    out.count_ = *count;
    const uint64_t size = ScalarBytes(type);
    const uint64_t least = size > 0                    ? size
                           : type == GgufType::kString ? kMinStringBytes
                                                       : kMinArrayBytes;
    if (*count > remaining() / least) {
      return Bad(at, what, " of ", *count, " ", GgufTypeName(type), " cannot fit in the ",
                 remaining(), " bytes left in the file");
    }
    if (size > 0) {
      out.bytes_ = absl::string_view(reinterpret_cast<const char*>(f_.data_ + pos_), *count * size);
      if (type == GgufType::kBool) {
        for (uint64_t i = 0; i < *count; ++i) {
          if (f_.data_[pos_ + i] > 1) {
            return Bad(pos_ + i, what, ": bool element ", i, " is ", f_.data_[pos_ + i],
                       ", not 0 or 1");
          }
        }
      }
      pos_ += *count * size;
      return absl::OkStatus();
    }
    if (type == GgufType::kString) {
      // Vocabularies hold 10^5 strings: the messages are only built on error.
      out.strings_.reserve(*count);
      for (uint64_t i = 0; i < *count; ++i) {
        uint64_t length = 0;
        if (remaining() >= sizeof(length)) std::memcpy(&length, f_.data_ + pos_, sizeof(length));
        if (remaining() < sizeof(length) || length > remaining() - sizeof(length)) {
          return ReadString(absl::StrCat("element ", i, " of ", what)).status();  // the error
        }
        pos_ += sizeof(length);
        out.strings_.emplace_back(reinterpret_cast<const char*>(f_.data_ + pos_), length);
        pos_ += length;
      }
      return absl::OkStatus();
    }
    if (depth + 1 >= kMaxArrayDepth) {
      return Bad(at, what, " nests arrays more than ", kMaxArrayDepth, " deep");
    }
    if (*count > kMaxNestedArrays - nested_arrays_) {
      return Bad(at, what, " takes the file past kiln's limit of ", kMaxNestedArrays,
                 " nested arrays");
    }
    nested_arrays_ += *count;
    out.arrays_.resize(*count);
    for (uint64_t i = 0; i < *count; ++i) {
      if (absl::Status s = ParseValue(GgufType::kArray, key, depth + 1, out.arrays_[i]); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadAlignment() {
    const GgufValue* v = f_.Find("general.alignment");
    if (v == nullptr) return absl::OkStatus();
    const std::optional<uint64_t> a = v->AsUint();
    if (!a || *a == 0 || !std::has_single_bit(*a)) {
      return Bad(v->offset(), "general.alignment is ", v->ToString(), ", not a power of two");
    }
    f_.alignment_ = *a;
    return absl::OkStatus();
  }

  absl::Status ParseTensorInfos() {
    if (tensor_count_ > remaining() / kMinTensorInfoBytes) {
      return Bad(pos_, "tensor count ", tensor_count_, " cannot fit in the ", remaining(),
                 " bytes after the metadata");
    }
    f_.tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensorInfo t;
      t.info_offset = pos_;
      absl::StatusOr<absl::string_view> name = ReadString(absl::StrCat("the name of tensor ", i));
      if (!name.ok()) return name.status();
      if (name->empty()) return Bad(t.info_offset, "tensor ", i, " has an empty name");
      t.name = std::string(*name);
      const std::string what = absl::StrCat("tensor ", Quoted(t.name));
      if (const auto it = f_.tensor_index_.find(t.name); it != f_.tensor_index_.end()) {
        return Bad(t.info_offset, what, " appears twice (first at byte ",
                   f_.tensors_[it->second].info_offset, ")");
      }
      if (absl::Status s = ParseShapeAndType(what, t); !s.ok()) return s;
      const uint64_t offset_at = pos_;
      absl::StatusOr<uint64_t> offset = Read<uint64_t>(absl::StrCat("the offset of ", what));
      if (!offset.ok()) return offset.status();
      if (*offset % f_.alignment_ != 0) {
        return Bad(offset_at, what, ": data offset ", *offset, " is not a multiple of the ",
                   "alignment ", f_.alignment_);
      }
      t.offset = *offset;
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(std::move(t));
    }
    const uint64_t pad = (f_.alignment_ - pos_ % f_.alignment_) % f_.alignment_;
    if (__builtin_add_overflow(pos_, pad, &f_.data_offset_)) {
      return Bad(pos_, "the data section's start overflows with alignment ", f_.alignment_);
    }
    return absl::OkStatus();
  }

  absl::Status ParseShapeAndType(const std::string& what, GgufTensorInfo& t) {
    const uint64_t dims_at = pos_;
    absl::StatusOr<uint32_t> n_dims = Read<uint32_t>(absl::StrCat("the rank of ", what));
    if (!n_dims.ok()) return n_dims.status();
    if (*n_dims > kMaxDims) {
      return Bad(dims_at, what, " has ", *n_dims, " dimensions; GGUF allows at most ", kMaxDims);
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < *n_dims; ++d) {
      const uint64_t at = pos_;
      absl::StatusOr<uint64_t> ne = Read<uint64_t>(absl::StrCat("the dimensions of ", what));
      if (!ne.ok()) return ne.status();
      if (*ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(elements, static_cast<int64_t>(*ne), &elements)) {
        return Bad(at, what, ": dimension ", d, " (", *ne, ") makes the element count overflow");
      }
      t.dims.push_back(static_cast<int64_t>(*ne));
    }
    const uint64_t type_at = pos_;
    absl::StatusOr<uint32_t> type = Read<uint32_t>(absl::StrCat("the type of ", what));
    if (!type.ok()) return type.status();
    const GgmlTypeInfo* info = FindGgmlType(*type);
    if (info == nullptr) {
      return Bad(type_at, what, " has ", GgmlTypeName(*type),
                 ", which is not a ggml type kiln knows");
    }
    t.type = info->type;
    if (t.row_length() % info->block_size != 0) {
      return Bad(dims_at, what, ": ", t.Describe(), " has rows of ", t.row_length(),
                 ", not a multiple of ", info->name, "'s block of ", info->block_size);
    }
    absl::StatusOr<uint64_t> bytes = GgmlBytes(t.type, elements);
    if (!bytes.ok()) return Bad(dims_at, what, ": ", bytes.status().message());
    t.bytes = *bytes;
    return absl::OkStatus();
  }

  absl::Status CheckTensorRanges() {
    const uint64_t data_bytes = f_.data_offset_ <= f_.size_ ? f_.size_ - f_.data_offset_ : 0;
    std::vector<const GgufTensorInfo*> order;
    for (const GgufTensorInfo& t : f_.tensors_) {
      if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
        return Bad(t.info_offset, "tensor ", Quoted(t.name), " (", t.Describe(), ", ", t.bytes,
                   " bytes at data offset ", t.offset, ") runs past the end of the file (",
                   data_bytes, " bytes of data from byte ", f_.data_offset_, ")");
      }
      if (t.bytes > 0) order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
      return a->offset < b->offset;
    });
    const GgufTensorInfo* furthest = nullptr;
    for (const GgufTensorInfo* t : order) {
      if (furthest != nullptr && t->offset < furthest->offset + furthest->bytes) {
        return Bad(t->info_offset, "tensors ", Quoted(furthest->name), " [", furthest->offset, ", ",
                   furthest->offset + furthest->bytes, ") and ", Quoted(t->name), " [", t->offset,
                   ", ", t->offset + t->bytes, ") overlap in the data section");
      }
      if (furthest == nullptr || t->offset + t->bytes > furthest->offset + furthest->bytes) {
        furthest = t;
      }
    }
    return absl::OkStatus();
  }

  GgufFile& f_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t entry_count_ = 0;
  uint64_t nested_arrays_ = 0;
};

// ---------------------------------------------------------------- the file

absl::StatusOr<GgufFile> GgufFile::Open(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  GgufFile f;
  f.path_ = path;
  f.data_ = (*mapped)->data();
  f.size_ = (*mapped)->size();
  f.owner_ = *std::move(mapped);
  if (absl::Status s = GgufParser(f).Parse(); !s.ok()) return s;
  return f;
}

absl::StatusOr<GgufFile> GgufFile::FromBytes(std::string bytes, std::string name) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  GgufFile f;
  f.path_ = std::move(name);
  f.data_ = reinterpret_cast<const uint8_t*>(owned->data());
  f.size_ = owned->size();
  f.owner_ = std::move(owned);
  if (absl::Status s = GgufParser(f).Parse(); !s.ok()) return s;
  return f;
}

const GgufValue* GgufFile::Find(absl::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::FindTensor(absl::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::Span<const uint8_t> GgufFile::TensorData(const GgufTensorInfo& tensor) const {
  if (tensor.bytes == 0) return {};
  return absl::Span<const uint8_t>(data_ + data_offset_ + tensor.offset, tensor.bytes);
}

absl::Status GgufFile::KeyError(absl::string_view key, absl::string_view why) const {
  const GgufValue* v = Find(key);
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ": metadata ", Quoted(key),
                   v ? absl::StrCat(" (at byte ", v->offset(), ")") : "", " ", why));
}

namespace {

absl::StatusOr<const GgufValue*> Need(const GgufFile& f, absl::string_view key) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) {
    return absl::NotFoundError(absl::StrCat(f.path(), ": no metadata key ", Quoted(key)));
  }
  return v;
}

absl::Status WrongType(const GgufFile& f, absl::string_view key, const GgufValue& v,
                       absl::string_view wanted) {
  return f.KeyError(key, absl::StrCat("is ", v.ToString(), ", not ", wanted));
}

}  // namespace

absl::StatusOr<int64_t> GgufFile::GetInt(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if (std::optional<int64_t> i = (*v)->AsInt()) return *i;
  return WrongType(*this, key, **v, "an integer");
}

absl::StatusOr<uint32_t> GgufFile::GetU32(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  const std::optional<uint64_t> u = (*v)->AsUint();
  if (u && *u <= std::numeric_limits<uint32_t>::max()) return static_cast<uint32_t>(*u);
  return WrongType(*this, key, **v, "an integer in [0, 2^32)");
}

absl::StatusOr<uint64_t> GgufFile::GetU64(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if (std::optional<uint64_t> u = (*v)->AsUint()) return *u;
  return WrongType(*this, key, **v, "a non-negative integer");
}

absl::StatusOr<double> GgufFile::GetF64(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if (std::optional<double> d = (*v)->AsDouble()) return *d;
  return WrongType(*this, key, **v, "a number");
}

absl::StatusOr<float> GgufFile::GetF32(absl::string_view key) const {
  absl::StatusOr<double> d = GetF64(key);
  if (!d.ok()) return d.status();
  return static_cast<float>(*d);
}

absl::StatusOr<bool> GgufFile::GetBool(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if (std::optional<bool> b = (*v)->AsBool()) return *b;
  return WrongType(*this, key, **v, "a bool");
}

absl::StatusOr<absl::string_view> GgufFile::GetString(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if (std::optional<absl::string_view> s = (*v)->AsString()) return *s;
  return WrongType(*this, key, **v, "a string");
}

absl::StatusOr<absl::Span<const absl::string_view>> GgufFile::GetStringArray(
    absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  if ((*v)->is_array() && (*v)->element_type() == GgufType::kString) return (*v)->strings();
  return WrongType(*this, key, **v, "an array of strings");
}

absl::StatusOr<std::vector<float>> GgufFile::GetF32Array(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  const GgufValue& a = **v;
  if (!a.is_array() || (a.element_type() != GgufType::kF32 && a.element_type() != GgufType::kF64)) {
    return WrongType(*this, key, a, "an array of f32");
  }
  std::vector<float> out(a.size());
  for (uint64_t i = 0; i < a.size(); ++i) out[i] = static_cast<float>(*a.Element(i).AsDouble());
  return out;
}

absl::StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(absl::string_view key) const {
  absl::StatusOr<const GgufValue*> v = Need(*this, key);
  if (!v.ok()) return v.status();
  const GgufValue& a = **v;
  if (!a.is_array() || ScalarBytes(a.element_type()) == 0 || a.element_type() == GgufType::kBool ||
      a.element_type() == GgufType::kF32 || a.element_type() == GgufType::kF64) {
    return WrongType(*this, key, a, "an array of integers");
  }
  std::vector<int64_t> out(a.size());
  for (uint64_t i = 0; i < a.size(); ++i) {
    const std::optional<int64_t> e = a.Element(i).AsInt();
    if (!e) return KeyError(key, absl::StrCat("element ", i, " does not fit in int64"));
    out[i] = *e;
  }
  return out;
}

}  // namespace kiln::models
