// Device memory blocks, and strided views of them (TensorData).
#ifndef KILN_TENSOR_STORAGE_H_
#define KILN_TENSOR_STORAGE_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace kiln {

// One allocation. The deleter returns it to whoever provided it (the host
// heap, a device allocator, an mmap owner).
class Storage {
 public:
  Storage(Device device, void* data, size_t bytes, bool writable,
          std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // 64-byte aligned host memory; ResourceExhausted if it cannot be had.
  static absl::StatusOr<std::shared_ptr<Storage>> AllocateHost(size_t bytes);
  // Memory someone else owns (e.g. a memory-mapped file): never written, never
  // freed by kiln; `owner` is kept alive as long as the storage.
  static std::shared_ptr<Storage> WrapReadOnlyHost(const void* data, size_t bytes,
                                                   std::shared_ptr<const void> owner);

  Device device() const { return device_; }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Read-only storage is never updated in place (see slice_update).
  bool writable() const { return writable_; }

 private:
  Device device_;
  void* data_;
  size_t bytes_;
  bool writable_;
  std::function<void(void*)> deleter_;
};

// A strided view of a Storage: element (i0, i1, ...) lives at element offset
// `offset + sum(i_k * strides[k])` in units of the dtype's size.
struct TensorData {
  std::shared_ptr<Storage> storage;
  Extents sizes;
  Extents strides;
  int64_t offset = 0;

  int64_t num_elements() const { return NumElements(sizes); }
  // Dense row-major with no gaps (offset may be non-zero).
  bool is_contiguous() const;
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(storage->data()) + offset;
  }
};

// A new dense host tensor of `sizes`.
absl::StatusOr<TensorData> AllocateHostTensor(DType dtype, absl::Span<const int64_t> sizes);

// Copies `sizes` elements between two strided host layouts (strides in
// elements; the pointers address element (0, ..., 0)).
void CopyStrided(size_t element_size, absl::Span<const int64_t> sizes, const void* src,
                 absl::Span<const int64_t> src_strides, void* dst,
                 absl::Span<const int64_t> dst_strides);
// The same between two views of equal sizes.
void CopyView(const TensorData& src, const TensorData& dst, size_t element_size);
// Copies the elements of a host view, in row-major order, into dense `dst`.
void CopyStridedToDense(const TensorData& src, size_t element_size, void* dst);

}  // namespace kiln

#endif  // KILN_TENSOR_STORAGE_H_
