#include "tensor/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace kiln {

Storage::Storage(Device device, void* data, size_t bytes, bool writable,
                 std::function<void(void*)> deleter)
    : device_(device), data_(data), bytes_(bytes), writable_(writable),
      deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::AllocateHost(size_t bytes) {
  constexpr size_t kAlignment = 64;
  if (bytes > SIZE_MAX - kAlignment) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  return std::make_shared<Storage>(Device::Cpu(), data, bytes, /*writable=*/true,
                                   [](void* p) { std::free(p); });
}

std::shared_ptr<Storage> Storage::WrapReadOnlyHost(const void* data, size_t bytes,
                                                   std::shared_ptr<const void> owner) {
  return std::make_shared<Storage>(Device::Cpu(), const_cast<void*>(data), bytes,
                                   /*writable=*/false,
                                   [owner = std::move(owner)](void*) {});
}

bool TensorData::is_contiguous() const {
  int64_t expected = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

absl::StatusOr<TensorData> AllocateHostTensor(DType dtype, absl::Span<const int64_t> sizes) {
  size_t bytes = DTypeSize(dtype);
  for (int64_t s : sizes) {
    if (s < 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot allocate a tensor of size ", s));
    }
  }
  if (NumElements(sizes) == 0) {
    bytes = 0;
  } else {
    for (int64_t s : sizes) {
      if (__builtin_mul_overflow(bytes, static_cast<size_t>(s), &bytes)) {
        return absl::ResourceExhaustedError("cannot allocate a tensor: its byte size overflows");
      }
    }
  }
  TensorData out;
  out.sizes.assign(sizes.begin(), sizes.end());
  out.strides = ContiguousStrides(sizes);
  absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::AllocateHost(bytes);
  if (!storage.ok()) return storage.status();
  out.storage = *std::move(storage);
  return out;
}

void CopyStrided(size_t element_size, absl::Span<const int64_t> sizes, const void* src,
                 absl::Span<const int64_t> src_strides, void* dst,
                 absl::Span<const int64_t> dst_strides) {
  const int rank = static_cast<int>(sizes.size());
  if (NumElements(sizes) == 0) return;
  const auto* in = static_cast<const char*>(src);
  auto* out = static_cast<char*>(dst);
  if (rank == 0) {
    std::memcpy(out, in, element_size);
    return;
  }
  // The innermost axis is copied as one run; the outer ones by an odometer.
  const int64_t inner = sizes[rank - 1];
  const int64_t in_step = src_strides[rank - 1] * static_cast<int64_t>(element_size);
  const int64_t out_step = dst_strides[rank - 1] * static_cast<int64_t>(element_size);
  const bool dense_run = in_step == static_cast<int64_t>(element_size) &&
                         out_step == static_cast<int64_t>(element_size);
  Extents index(rank, 0);
  int64_t in_offset = 0;
  int64_t out_offset = 0;
  while (true) {
    if (dense_run) {
      std::memcpy(out + out_offset, in + in_offset, inner * element_size);
    } else {
      for (int64_t i = 0; i < inner; ++i) {
        std::memcpy(out + out_offset + i * out_step, in + in_offset + i * in_step, element_size);
      }
    }
    int axis = rank - 2;
    for (; axis >= 0; --axis) {
      in_offset += src_strides[axis] * static_cast<int64_t>(element_size);
      out_offset += dst_strides[axis] * static_cast<int64_t>(element_size);
      if (++index[axis] < sizes[axis]) break;
      in_offset -= src_strides[axis] * sizes[axis] * static_cast<int64_t>(element_size);
      out_offset -= dst_strides[axis] * sizes[axis] * static_cast<int64_t>(element_size);
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

void CopyView(const TensorData& src, const TensorData& dst, size_t element_size) {
  CopyStrided(element_size, src.sizes,
              static_cast<const char*>(src.storage->data()) + src.offset * element_size,
              src.strides, static_cast<char*>(dst.storage->data()) + dst.offset * element_size,
              dst.strides);
}

void CopyStridedToDense(const TensorData& src, size_t element_size, void* dst) {
  CopyStrided(element_size, src.sizes,
              static_cast<const char*>(src.storage->data()) + src.offset * element_size,
              src.strides, dst, ContiguousStrides(src.sizes));
}

}  // namespace kiln
