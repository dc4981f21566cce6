#include "models/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

// Tensors are used in place, and the format stores little-endian values.
static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

using nlohmann::json;

// The reference implementation's limit: a header this large is corrupt.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

// safetensors' dtype names for the dtypes kiln has.
constexpr std::pair<const char*, DType> kDTypeNames[] = {
    {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16}, {"I32", DType::kI32},
    {"I64", DType::kI64}, {"U8", DType::kU8},   {"BOOL", DType::kBool},
};

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (const auto& [n, dtype] : kDTypeNames) {
    if (name == n) return dtype;
  }
  return std::nullopt;
}

const char* NameOfDType(DType dtype) {
  for (const auto& [n, d] : kDTypeNames) {
    if (d == dtype) return n;
  }
  return "?";
}

// A JSON number that is a non-negative integer (nlohmann parses those as
// unsigned; negative integers and fractions are other kinds).
std::optional<uint64_t> AsUnsigned(const json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  return value.get<uint64_t>();
}

struct Range {
  uint64_t begin, end;
  const std::string* name;
};

// Checks one header entry against the data region of `data_bytes`.
absl::StatusOr<SafetensorsEntry> ParseEntry(const std::string& path, const std::string& name,
                                            const json& value, uint64_t data_bytes) {
  const auto bad = [&](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "': ", why...));
  };
  if (!value.is_object()) return bad("header entry is not a JSON object");
  SafetensorsEntry entry;

  const auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string()) return bad("\"dtype\" is not a string");
  const std::string& dtype_name = dtype_it->get_ref<const std::string&>();
  const std::optional<DType> dtype = DTypeFromName(dtype_name);
  if (!dtype) {
    return bad("dtype \"", dtype_name,
               "\" is not supported (kiln reads F32, F16, BF16, I32, I64, U8, BOOL)");
  }
  entry.dtype = *dtype;

  const auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array()) return bad("\"shape\" is not an array");
  if (shape_it->size() > static_cast<size_t>(kMaxRank)) {
    return bad("rank ", shape_it->size(), " exceeds kiln's limit of ", kMaxRank);
  }
  uint64_t numel = 1;
  for (const json& d : *shape_it) {
    const std::optional<uint64_t> size = AsUnsigned(d);
    if (!size) return bad("shape ", d.dump(), " entry is not a non-negative integer");
    if (*size > static_cast<uint64_t>(kMaxDimValue) ||
        (*size != 0 && numel > static_cast<uint64_t>(kMaxElements) / *size)) {
      return bad("shape ", shape_it->dump(), " is too large");
    }
    numel *= *size;
    entry.shape.push_back(static_cast<int64_t>(*size));
  }

  const auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return bad("\"data_offsets\" is not an array of two offsets");
  }
  const std::optional<uint64_t> begin = AsUnsigned((*offsets_it)[0]);
  const std::optional<uint64_t> end = AsUnsigned((*offsets_it)[1]);
  if (!begin || !end)
    return bad("data_offsets ", offsets_it->dump(), " are not non-negative integers");
  if (*begin > *end) return bad("data_offsets ", offsets_it->dump(), " end before they begin");
  if (*end > data_bytes) {
    return bad("data_offsets ", offsets_it->dump(), " run past the end of the data (", data_bytes,
               " bytes)");
  }
  const uint64_t expected = numel * DTypeSize(entry.dtype);
  if (*end - *begin != expected) {
    return bad("data_offsets ", offsets_it->dump(), " span ", *end - *begin, " bytes, but ",
               dtype_name, shape_it->dump(), " needs ", expected);
  }
  entry.begin = *begin;
  entry.end = *end;
  return entry;
}

}  // namespace

absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view file,
                                                          const std::string& path) {
  const auto bad = [&](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", why...));
  };
  if (file.size() < 8) {
    return bad("not a safetensors file: ", file.size(),
               " bytes, but the format starts with an 8-byte header length");
  }
  uint64_t header_bytes;
  std::memcpy(&header_bytes, file.data(), 8);
  if (header_bytes > file.size() - 8) {
    return bad("header length ", header_bytes, " runs past the end of the file (", file.size(),
               " bytes)");
  }
  if (header_bytes > kMaxHeaderBytes) {
    return bad("header length ", header_bytes, " exceeds the limit of ", kMaxHeaderBytes);
  }
  const char* text = file.data() + 8;
  const json header = json::parse(text, text + header_bytes, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return bad("the header is not well-formed JSON");
  if (!header.is_object()) return bad("the header is JSON ", header.type_name(), ", not an object");

  SafetensorsHeader out;
  out.data_start = 8 + header_bytes;
  const uint64_t data_bytes = file.size() - out.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return bad("\"__metadata__\" is not a JSON object");
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string()) return bad("\"__metadata__\" value for '", key, "' is not a string");
        out.metadata[key] = v.get<std::string>();
      }
      continue;
    }
    absl::StatusOr<SafetensorsEntry> entry = ParseEntry(path, name, value, data_bytes);
    if (!entry.ok()) return entry.status();
    out.entries.emplace(name, *std::move(entry));
  }

  // The format forbids overlapping tensors; a file with them is corrupt or
  // crafted. (Gaps are harmless to a reader, so they are accepted.)
  std::vector<Range> ranges;
  for (const auto& [name, e] : out.entries) {
    if (e.end > e.begin) ranges.push_back({e.begin, e.end, &name});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const Range* furthest = nullptr;
  for (const Range& r : ranges) {
    if (furthest != nullptr && r.begin < furthest->end) {
      return bad("tensors '", *furthest->name, "' [", furthest->begin, ", ", furthest->end,
                 ") and '", *r.name, "' [", r.begin, ", ", r.end, ") overlap");
    }
    if (furthest == nullptr || r.end > furthest->end) furthest = &r;
  }
  return out;
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  absl::StatusOr<SafetensorsHeader> header = ParseSafetensorsHeader((*mapped)->bytes(), path);
  if (!header.ok()) return header.status();
  return SafetensorsFile(*std::move(mapped), header->data_start, std::move(header->entries),
                         std::move(header->metadata));
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

bool SafetensorsFile::contains(absl::string_view name) const { return Find(name) != nullptr; }

const SafetensorsEntry* SafetensorsFile::Find(absl::string_view name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

absl::StatusOr<Tensor> SafetensorsFile::Get(absl::string_view name) const {
  const SafetensorsEntry* e = Find(name);
  if (e == nullptr) {
    return absl::NotFoundError(absl::StrCat(path(), ": no tensor named '", name, "'"));
  }
  const uint8_t* data = file_->data() + data_start_ + e->begin;
  const size_t bytes = e->end - e->begin;
  if (e->dtype == DType::kBool) {
    // A C++ bool holding anything but 0 or 1 is undefined behaviour.
    for (size_t i = 0; i < bytes; ++i) {
      if (data[i] > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            path(), ": tensor '", name, "': BOOL element ", i, " is ", data[i], ", not 0 or 1"));
      }
    }
  }
  // Offsets need only be byte-aligned in the format, and kiln's kernels need
  // element-aligned data: a misaligned tensor is copied rather than rejected.
  const bool aligned = reinterpret_cast<uintptr_t>(data) % DTypeSize(e->dtype) == 0;
  Tensor t = aligned ? Tensor::WrapHost(e->dtype, e->shape, data, bytes, file_, /*writable=*/false)
                     : Tensor::FromHostBytes(e->dtype, e->shape, data, bytes);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path(), ": tensor '", name, "': ", t.status().message()));
  }
  return t;
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  const auto bad = [&](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat("WriteSafetensors ", path, ": ", why...));
  };
  // Larger elements first (stable otherwise), as the reference writer does,
  // so every tensor starts element-aligned without padding between tensors.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return DTypeSize(tensors[a].second.dtype()) > DTypeSize(tensors[b].second.dtype());
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    if (name.empty() || name == "__metadata__") return bad("invalid tensor name '", name, "'");
    if (!seen.insert(name).second) return bad("tensor name '", name, "' appears twice");
    if (!t.ok()) return bad("tensor '", name, "': ", t.status().ToString());
    if (!t.shape().is_concrete()) {
      return bad("tensor '", name, "' has symbolic shape ", t.shape().ToString());
    }
    const uint64_t bytes = static_cast<uint64_t>(t.shape().num_elements()) * DTypeSize(t.dtype());
    const Extents sizes = t.shape().extents();
    header[name] = {{"dtype", NameOfDType(t.dtype())},
                    {"shape", std::vector<int64_t>(sizes.begin(), sizes.end())},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // e.g. a name that is not UTF-8
    return bad("cannot encode the header: ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("WriteSafetensors ", path, ": cannot open: ", std::strerror(errno)));
  }
  const auto write = [&](const void* data, size_t n) {
    return n == 0 || std::fwrite(data, 1, n, out) == n;
  };
  const uint64_t length = text.size();
  bool ok = write(&length, 8) && write(text.data(), text.size());
  absl::Status status;
  std::vector<char> buffer;
  for (size_t k = 0; ok && k < order.size(); ++k) {
    const Tensor& t = tensors[order[k]].second;
    const int64_t count = t.shape().num_elements();
    buffer.resize(static_cast<size_t>(count) * DTypeSize(t.dtype()));
    // CopyToHost realizes and reads strided views densely, in row-major order.
    status = t.CopyToHost(t.dtype(), buffer.data(), count, {});
    if (!status.ok()) {
      status = bad("tensor '", tensors[order[k]].first, "': ", status.message());
      break;
    }
    ok = write(buffer.data(), buffer.size());
  }
  int write_errno = errno;
  if (std::fclose(out) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (status.ok() && !ok) {
    status = absl::UnavailableError(
        absl::StrCat("WriteSafetensors ", path, ": write failed: ", std::strerror(write_errno)));
  }
  // A truncated file would later read as corrupt; leave none behind.
  if (!status.ok()) std::remove(path.c_str());
  return status;
}

}  // namespace kiln::models
