#include "tensor/storage.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::vector<int32_t> Iota(int n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// A TensorData view over a host copy of `values`.
TensorData ViewOf(const std::vector<int32_t>& values, Extents sizes, Extents strides,
                  int64_t offset = 0) {
  absl::StatusOr<std::shared_ptr<Storage>> storage =
      Storage::AllocateHost(values.size() * sizeof(int32_t));
  EXPECT_TRUE(storage.ok());
  std::memcpy((*storage)->data(), values.data(), values.size() * sizeof(int32_t));
  TensorData d;
  d.storage = *storage;
  d.sizes = std::move(sizes);
  d.strides = std::move(strides);
  d.offset = offset;
  return d;
}

std::vector<int32_t> Contents(const TensorData& d) {
  const int32_t* p = static_cast<const int32_t*>(d.storage->data());
  return std::vector<int32_t>(p, p + d.storage->bytes() / sizeof(int32_t));
}

// ---- Storage

TEST(Storage, AllocateHostIsAlignedAndWritable) {
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{64}, size_t{65}, size_t{4096}}) {
    absl::StatusOr<std::shared_ptr<Storage>> s = Storage::AllocateHost(bytes);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->bytes(), bytes);
    EXPECT_TRUE((*s)->writable());
    EXPECT_EQ((*s)->device(), Device::Cpu());
    ASSERT_NE((*s)->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*s)->data()) % 64, 0u);
    std::memset((*s)->data(), 0xab, bytes);  // the whole range is usable
  }
}

TEST(Storage, AllocateHostZeroBytes) {
  absl::StatusOr<std::shared_ptr<Storage>> s = Storage::AllocateHost(0);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->bytes(), 0u);
}

// AddressSanitizer aborts on (rather than fails) an allocation this large
// unless run with allocator_may_return_null=1.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kHugeAllocationsAbort = true;
#else
constexpr bool kHugeAllocationsAbort = false;
#endif

TEST(Storage, AllocateHostImpossibleSizeIsResourceExhausted) {
  // No machine has these; the request must fail cleanly, never succeed with a
  // smaller block (as it would if the size wrapped around while being rounded
  // up to the alignment).
  std::vector<size_t> sizes = {std::numeric_limits<size_t>::max(),
                               std::numeric_limits<size_t>::max() - 10};
  if (!kHugeAllocationsAbort) {
    sizes.push_back(std::numeric_limits<size_t>::max() - 63);
    sizes.push_back(size_t{1} << 62);
  }
  for (size_t bytes : sizes) {
    absl::StatusOr<std::shared_ptr<Storage>> s = Storage::AllocateHost(bytes);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted)
        << bytes << ": " << (s.ok() ? "allocated" : s.status().ToString());
  }
}

TEST(Storage, DeleterRunsOnceOnDestruction) {
  int calls = 0;
  int value = 5;
  {
    Storage s(Device::Cpu(), &value, sizeof(value), /*writable=*/true, [&](void* p) {
      EXPECT_EQ(p, &value);
      ++calls;
    });
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(s.data(), &value);
    EXPECT_EQ(s.bytes(), sizeof(value));
  }
  EXPECT_EQ(calls, 1);
}

TEST(Storage, EmptyDeleterIsAllowed) {
  int value = 5;
  { Storage s(Device::Cuda(1), &value, sizeof(value), false, nullptr); }
  EXPECT_EQ(value, 5);
}

TEST(Storage, WrapReadOnlyHostKeepsOwnerAliveAndNeverFrees) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3});
  std::weak_ptr<std::vector<float>> watch = owner;
  const float* data = owner->data();
  std::shared_ptr<Storage> s = Storage::WrapReadOnlyHost(data, 3 * sizeof(float), owner);
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_FALSE(s->writable());
  EXPECT_EQ(s->data(), data);
  EXPECT_EQ(s->bytes(), 3 * sizeof(float));
  EXPECT_EQ(s->device(), Device::Cpu());
  EXPECT_EQ(static_cast<const float*>(s->data())[2], 3.0f);
  s.reset();
  EXPECT_TRUE(watch.expired());
}

// ---- TensorData

TEST(TensorData, IsContiguous) {
  const std::vector<int32_t> v = Iota(24);
  EXPECT_TRUE(ViewOf(v, {2, 3}, {3, 1}).is_contiguous());
  EXPECT_TRUE(ViewOf(v, {2, 3, 4}, {12, 4, 1}).is_contiguous());
  EXPECT_TRUE(ViewOf(v, {}, {}).is_contiguous());             // a scalar
  EXPECT_TRUE(ViewOf(v, {2, 3}, {3, 1}, 6).is_contiguous());  // offset allowed
  // Size-1 dims may have any stride.
  EXPECT_TRUE(ViewOf(v, {2, 1, 3}, {3, 100, 1}).is_contiguous());
  EXPECT_TRUE(ViewOf(v, {1, 4}, {0, 1}).is_contiguous());
  // Transposed, sliced, broadcast: not dense.
  EXPECT_FALSE(ViewOf(v, {3, 2}, {1, 3}).is_contiguous());
  EXPECT_FALSE(ViewOf(v, {2, 2}, {4, 2}).is_contiguous());  // every other column
  EXPECT_FALSE(ViewOf(v, {2, 3}, {4, 1}).is_contiguous());  // rows with a gap
  EXPECT_FALSE(ViewOf(v, {2, 3}, {0, 1}).is_contiguous());  // broadcast rows
  EXPECT_FALSE(ViewOf(v, {3}, {0}).is_contiguous());
  EXPECT_FALSE(ViewOf(v, {3}, {2}).is_contiguous());
}

TEST(TensorData, NumElementsAndPtr) {
  const std::vector<int32_t> v = Iota(24);
  const TensorData d = ViewOf(v, {2, 3}, {3, 1}, 5);
  EXPECT_EQ(d.num_elements(), 6);
  EXPECT_EQ(*d.ptr<int32_t>(), 5);  // ptr() includes the offset
  EXPECT_EQ(d.ptr<int32_t>()[1], 6);
  EXPECT_EQ(ViewOf(v, {}, {}).num_elements(), 1);
  EXPECT_EQ(ViewOf(v, {4, 0}, {1, 1}).num_elements(), 0);
}

TEST(AllocateHostTensor, DenseLayout) {
  absl::StatusOr<TensorData> d = AllocateHostTensor(DType::kI64, {2, 3, 4});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->sizes, ElementsAre(2, 3, 4));
  EXPECT_THAT(d->strides, ElementsAre(12, 4, 1));
  EXPECT_EQ(d->offset, 0);
  EXPECT_TRUE(d->is_contiguous());
  EXPECT_EQ(d->storage->bytes(), 24 * sizeof(int64_t));
  EXPECT_TRUE(d->storage->writable());
  EXPECT_EQ(d->storage->device(), Device::Cpu());
}

TEST(AllocateHostTensor, ScalarAndEmpty) {
  absl::StatusOr<TensorData> scalar = AllocateHostTensor(DType::kF16, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->storage->bytes(), 2u);
  EXPECT_EQ(scalar->num_elements(), 1);
  absl::StatusOr<TensorData> empty = AllocateHostTensor(DType::kF32, {3, 0});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->storage->bytes(), 0u);
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(AllocateHostTensor, ImpossibleSizeFails) {
  // 2^62 f32 elements are 2^64 bytes: the byte count does not fit in size_t,
  // so the allocation must fail rather than hand back a tiny block.
  absl::StatusOr<TensorData> d = AllocateHostTensor(DType::kF32, {int64_t{1} << 62});
  EXPECT_FALSE(d.ok()) << "allocated " << (d.ok() ? d->storage->bytes() : 0)
                       << " bytes for 2^62 f32 elements";
}

TEST(AllocateHostTensor, NegativeSizeFails) {
  // -1 elements times 4 bytes must not wrap around into a small request.
  absl::StatusOr<TensorData> d = AllocateHostTensor(DType::kF32, {-1});
  EXPECT_FALSE(d.ok()) << "allocated " << (d.ok() ? d->storage->bytes() : 0)
                       << " bytes for sizes [-1]";
}

// ---- CopyStrided and friends

TEST(CopyStrided, DenseToDense) {
  const std::vector<int32_t> src = Iota(6);
  std::vector<int32_t> dst(6, -1);
  CopyStrided(sizeof(int32_t), {2, 3}, src.data(), {3, 1}, dst.data(), {3, 1});
  EXPECT_EQ(dst, src);
}

TEST(CopyStrided, Transposed) {
  // src is 2x3 row-major; read it as its 3x2 transpose.
  const std::vector<int32_t> src = Iota(6);
  std::vector<int32_t> dst(6, -1);
  CopyStrided(sizeof(int32_t), {3, 2}, src.data(), {1, 3}, dst.data(), {2, 1});
  EXPECT_THAT(dst, ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(CopyStrided, TransposedDestination) {
  // Scatter a dense 2x3 into the transposed layout of a 3x2 buffer.
  const std::vector<int32_t> src = Iota(6);
  std::vector<int32_t> dst(6, -1);
  CopyStrided(sizeof(int32_t), {2, 3}, src.data(), {3, 1}, dst.data(), {1, 2});
  EXPECT_THAT(dst, ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(CopyStrided, Sliced) {
  // A 3x4 buffer; take rows 0 and 2, columns 1 and 3.
  const std::vector<int32_t> src = Iota(12);
  std::vector<int32_t> dst(4, -1);
  CopyStrided(sizeof(int32_t), {2, 2}, src.data() + 1, {8, 2}, dst.data(), {2, 1});
  EXPECT_THAT(dst, ElementsAre(1, 3, 9, 11));
}

TEST(CopyStrided, ZeroStrideBroadcast) {
  const std::vector<int32_t> row = {7, 8, 9};
  std::vector<int32_t> dst(6, -1);
  CopyStrided(sizeof(int32_t), {2, 3}, row.data(), {0, 1}, dst.data(), {3, 1});
  EXPECT_THAT(dst, ElementsAre(7, 8, 9, 7, 8, 9));
  const std::vector<int32_t> column = {1, 2};
  std::vector<int32_t> dst2(6, -1);
  CopyStrided(sizeof(int32_t), {2, 3}, column.data(), {1, 0}, dst2.data(), {3, 1});
  EXPECT_THAT(dst2, ElementsAre(1, 1, 1, 2, 2, 2));
  const int32_t one = 42;
  std::vector<int32_t> dst3(4, -1);
  CopyStrided(sizeof(int32_t), {2, 2}, &one, {0, 0}, dst3.data(), {2, 1});
  EXPECT_THAT(dst3, ElementsAre(42, 42, 42, 42));
}

TEST(CopyStrided, Rank0CopiesOneElement) {
  const int64_t src = 123456789012345;
  int64_t dst = 0;
  CopyStrided(sizeof(int64_t), {}, &src, {}, &dst, {});
  EXPECT_EQ(dst, src);
}

TEST(CopyStrided, EmptyCopiesNothing) {
  const std::vector<int32_t> src = Iota(6);
  std::vector<int32_t> dst(6, -1);
  CopyStrided(sizeof(int32_t), {2, 0, 3}, src.data(), {0, 3, 1}, dst.data(), {0, 3, 1});
  CopyStrided(sizeof(int32_t), {0}, src.data(), {1}, dst.data(), {1});
  EXPECT_THAT(dst, ElementsAre(-1, -1, -1, -1, -1, -1));
}

TEST(CopyStrided, ElementSizes) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> out(6, 0);
  CopyStrided(1, {3, 2}, bytes.data(), {1, 3}, out.data(), {2, 1});
  EXPECT_THAT(out, ElementsAre(1, 4, 2, 5, 3, 6));
  const std::vector<uint16_t> halves = {10, 20, 30, 40};
  std::vector<uint16_t> hout(4, 0);
  CopyStrided(2, {2, 2}, halves.data(), {1, 2}, hout.data(), {2, 1});
  EXPECT_THAT(hout, ElementsAre(10, 30, 20, 40));
}

// Random rank-1..6 views (permuted, sliced with steps, broadcast) against a
// plain index-by-index reference.
TEST(CopyStrided, MatchesReferenceOnRandomViews) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 300; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 6);
    Extents sizes(rank), base(rank), steps(rank);
    for (int i = 0; i < rank; ++i) {
      sizes[i] = 1 + rng() % 4;
      steps[i] = 1 + rng() % 2;
      base[i] = sizes[i] * steps[i];
    }
    // A dense base buffer; the view reads it with steps, some axes broadcast,
    // and a permuted axis order.
    Extents base_strides = ContiguousStrides(base);
    std::vector<int> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Extents view_sizes(rank), view_strides(rank);
    for (int i = 0; i < rank; ++i) {
      view_sizes[i] = sizes[perm[i]];
      view_strides[i] = (rng() % 5 == 0) ? 0 : base_strides[perm[i]] * steps[perm[i]];
    }
    const std::vector<int32_t> src = Iota(static_cast<int>(NumElements(base)), 1000);
    const int64_t n = NumElements(view_sizes);
    std::vector<int32_t> dst(n, -1);
    CopyStrided(sizeof(int32_t), view_sizes, src.data(), view_strides, dst.data(),
                ContiguousStrides(view_sizes));
    std::vector<int32_t> want(n);
    Extents index(rank, 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (int i = 0; i < rank; ++i) off += index[i] * view_strides[i];
      want[k] = src[off];
      for (int i = rank - 1; i >= 0; --i) {
        if (++index[i] < view_sizes[i]) break;
        index[i] = 0;
      }
    }
    ASSERT_EQ(dst, want) << "iteration " << iter;
  }
}

TEST(CopyView, BetweenTwoViewsWithOffsets) {
  // src: the 2x2 block at rows 1-2, columns 1-2 of a 3x4 matrix.
  const TensorData src = ViewOf(Iota(12), {2, 2}, {4, 1}, 5);
  // dst: a transposed 2x2 window starting at element 1 of an 8-element buffer.
  const TensorData dst = ViewOf(std::vector<int32_t>(8, -1), {2, 2}, {1, 2}, 1);
  CopyView(src, dst, sizeof(int32_t));
  EXPECT_THAT(Contents(dst), ElementsAre(-1, 5, 9, 6, 10, -1, -1, -1));
}

TEST(CopyStridedToDense, Transposed) {
  const TensorData src = ViewOf(Iota(6), {3, 2}, {1, 3});
  std::vector<int32_t> out(6, -1);
  CopyStridedToDense(src, sizeof(int32_t), out.data());
  EXPECT_THAT(out, ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(CopyStridedToDense, SlicedWithOffset) {
  // Column 2 of a 3x4 matrix, read with offset 2 and stride 4.
  const TensorData src = ViewOf(Iota(12), {3}, {4}, 2);
  std::vector<int32_t> out(3, -1);
  CopyStridedToDense(src, sizeof(int32_t), out.data());
  EXPECT_THAT(out, ElementsAre(2, 6, 10));
}

TEST(CopyStridedToDense, Broadcast) {
  const TensorData src = ViewOf(Iota(3, 1), {2, 2, 3}, {0, 0, 1});
  std::vector<int32_t> out(12, -1);
  CopyStridedToDense(src, sizeof(int32_t), out.data());
  EXPECT_THAT(out, ElementsAreArray({1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
}

TEST(CopyStridedToDense, ScalarWithOffset) {
  const TensorData src = ViewOf(Iota(4), {}, {}, 3);
  int32_t out = -1;
  CopyStridedToDense(src, sizeof(int32_t), &out);
  EXPECT_EQ(out, 3);
}

}  // namespace
}  // namespace kiln
