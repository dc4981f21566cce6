// A read-only memory map of a whole file: checkpoints are used in place.
#ifndef KILN_MODELS_MAPPED_FILE_H_
#define KILN_MODELS_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::models {

class MappedFile {
 public:
  // NotFound / PermissionDenied / InvalidArgument (a directory) naming the path.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  absl::string_view bytes() const {
    return absl::string_view(reinterpret_cast<const char*>(data_), size_);
  }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_MAPPED_FILE_H_
