// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON ({name: {"dtype", "shape", "data_offsets"}, and an
// optional "__metadata__" of strings}), then the tensors' bytes. Offsets are
// relative to the start of the data, which follows the header.
#ifndef KILN_MODELS_SAFETENSORS_H_
#define KILN_MODELS_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/mapped_file.h"
#include "tensor/tensor.h"

namespace kiln::models {

// One tensor's header entry; begin/end are byte offsets into the data region.
struct SafetensorsEntry {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// A whole file's header, checked (sizes, dtypes, offsets within the data and
// matching the shapes, no overlaps), before any tensor is read.
struct SafetensorsHeader {
  uint64_t data_start = 0;  // 8 + header length
  std::map<std::string, SafetensorsEntry, std::less<>> entries;
  std::map<std::string, std::string> metadata;
};
// InvalidArgument naming `path` and, where there is one, the tensor.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view file,
                                                          const std::string& path);

class SafetensorsFile {
 public:
  // Memory-maps the file and checks the whole header (sizes, dtypes, offsets
  // within the file and matching the shapes, no overlaps) before any tensor
  // is read. Errors name the path and, where there is one, the tensor.
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  // Sorted by name.
  std::vector<std::string> names() const;
  bool contains(absl::string_view name) const;
  // nullptr if there is no such tensor.
  const SafetensorsEntry* Find(absl::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor wrapped in place over the mapped file (read-only, keeping the
  // mapping alive); NotFound naming the file and the tensor.
  absl::StatusOr<Tensor> Get(absl::string_view name) const;

 private:
  SafetensorsFile(std::shared_ptr<const MappedFile> file, uint64_t data_start,
                  std::map<std::string, SafetensorsEntry, std::less<>> entries,
                  std::map<std::string, std::string> metadata)
      : file_(std::move(file)),
        data_start_(data_start),
        entries_(std::move(entries)),
        metadata_(std::move(metadata)) {}

  std::shared_ptr<const MappedFile> file_;
  uint64_t data_start_;  // 8 + header length
  std::map<std::string, SafetensorsEntry, std::less<>> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (any dtype kiln has; lazy or strided tensors are realized
// and read densely) in the order given, with `metadata` as "__metadata__"
// when non-empty. The header is padded with spaces to a multiple of 8 bytes
// so the data is aligned. InvalidArgument for a bad or duplicate name or an
// error tensor; an I/O failure names the path.
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace kiln::models

#endif  // KILN_MODELS_SAFETENSORS_H_
